"""TransformationChain: building from connector config, ordering, predicates, fan-out, drop,
validation and the enriched config definition."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from connectrt.api.config import ConfigDef, ConfigType
from connectrt.api.records import Header, SinkRecord, SourceRecord
from connectrt.api.transform import Predicate, Transformation
from connectrt.errors import ConfigError, DataError
from connectrt.transforms.chain import (
    TransformationChain,
    TransformationStage,
    default_resolve,
    enriched_config_def,
    validate_transforms,
)
from connectrt.transforms.filter import Filter

T = "org.apache.kafka.connect.transforms."


class Split(Transformation[Any]):
    """Fans a record out into ``copies`` records with suffixed values (test plugin)."""

    CONFIG_DEF = ConfigDef().define("copies", ConfigType.INT, 2)
    closed: list[str] = []

    def configure(self, config: Mapping[str, Any]) -> None:
        self.copies = self.config_def().parse(config)["copies"]
        self.seen = dict(config)

    def apply(self, record: Any) -> list[Any]:
        return [record.new_record(value=f"{record.value}#{i}") for i in range(self.copies)]

    def close(self) -> None:
        Split.closed.append("split")


class Broken(Transformation[Any]):
    def configure(self, config: Mapping[str, Any]) -> None:
        pass

    def apply(self, record: Any) -> Any:
        raise DataError("Broken: cannot handle field x")


class NotAPlugin:
    pass


def rec(topic: str = "orders", value: Any = "v", headers: list[Header] | None = None) -> Any:
    return SourceRecord({"p": 0}, {"o": 1}, topic, 0, None, "k", None, value, 5, headers)


def test_empty_config_is_identity() -> None:
    chain: TransformationChain[Any] = TransformationChain({})
    r = rec()
    assert chain.apply(r) == [r]
    assert len(chain) == 0
    assert TransformationChain({"transforms": ""}).apply(r) == [r]


def test_stages_run_in_configured_order() -> None:
    config = {
        "transforms": "route,hoist",
        "transforms.route.type": T + "RegexRouter",
        "transforms.route.regex": "(.*)",
        "transforms.route.replacement": "$1-x",
        "transforms.hoist.type": T + "HoistField$Value",
        "transforms.hoist.field": "line",
    }
    [out] = TransformationChain(config).apply(rec())
    assert out.topic == "orders-x"
    assert out.value == {"line": "v"}
    # reversed order gives the same here, but the aliases are kept in order
    config["transforms"] = "hoist,route"
    assert [s.alias for s in TransformationChain(config).stages] == ["hoist", "route"]


def test_order_matters_for_dependent_stages() -> None:
    base = {
        "transforms.insert.type": T + "InsertField$Value",
        "transforms.insert.topic.field": "t",
        "transforms.route.type": T + "RegexRouter",
        "transforms.route.regex": ".*",
        "transforms.route.replacement": "routed",
    }
    value = {"a": 1}
    [first] = TransformationChain({**base, "transforms": "insert,route"}).apply(rec(value=value))
    [second] = TransformationChain({**base, "transforms": "route,insert"}).apply(rec(value=value))
    assert first.value["t"] == "orders"
    assert second.value["t"] == "routed"


def test_filter_with_predicate_documented_example() -> None:
    config = {
        "transforms": "dropTomb",
        "transforms.dropTomb.type": T + "Filter",
        "transforms.dropTomb.predicate": "isTomb",
        "predicates": "isTomb",
        "predicates.isTomb.type": T + "predicates.RecordIsTombstone",
    }
    chain: TransformationChain[Any] = TransformationChain(config)
    assert chain.apply(rec(value=None)) == []
    live = rec(value="x")
    assert chain.apply(live) == [live]


def test_negate_inverts_the_predicate() -> None:
    config = {
        "transforms": "keepOrders",
        "transforms.keepOrders.type": T + "Filter",
        "transforms.keepOrders.predicate": "isOrders",
        "transforms.keepOrders.negate": "true",
        "predicates": "isOrders",
        "predicates.isOrders.type": T + "predicates.TopicNameMatches",
        "predicates.isOrders.pattern": "orders.*",
    }
    chain: TransformationChain[Any] = TransformationChain(config)
    assert len(chain.apply(rec("orders-eu"))) == 1
    assert chain.apply(rec("payments")) == []
    stage = chain.stages[0]
    assert (stage.negate, stage.predicate_alias) == (True, "isOrders")


def test_has_header_key_gates_a_transformation() -> None:
    config = {
        "transforms": "mask",
        "transforms.mask.type": T + "MaskField$Value",
        "transforms.mask.fields": "pw",
        "transforms.mask.predicate": "secret",
        "predicates": "secret",
        "predicates.secret.type": "HasHeaderKey",
        "predicates.secret.name": "pii",
    }
    chain: TransformationChain[Any] = TransformationChain(config)
    [masked] = chain.apply(rec(value={"pw": "x"}, headers=[Header("pii", "1")]))
    [clear] = chain.apply(rec(value={"pw": "x"}))
    assert masked.value == {"pw": ""}
    assert clear.value == {"pw": "x"}


def test_fan_out_then_later_stages_see_every_record() -> None:
    config = {
        "transforms": "split,route",
        "transforms.split.type": f"{__name__}.Split",
        "transforms.split.copies": "3",
        "transforms.route.type": T + "RegexRouter",
        "transforms.route.regex": "(.*)",
        "transforms.route.replacement": "$1-fanned",
    }
    out = TransformationChain(config).apply(rec())
    assert [r.value for r in out] == ["v#0", "v#1", "v#2"]
    assert {r.topic for r in out} == {"orders-fanned"}


def test_drop_stops_the_chain_and_empty_list_drops() -> None:
    config = {
        "transforms": "split,boom",
        "transforms.split.type": f"{__name__}:Split",
        "transforms.split.copies": "0",
        "transforms.boom.type": f"{__name__}.Broken",
    }
    assert TransformationChain(config).apply(rec()) == []


def test_plugin_config_gets_prefix_stripped_keys_only() -> None:
    config = {
        "transforms": "s",
        "transforms.s.type": f"{__name__}.Split",
        "transforms.s.copies": "1",
        "transforms.s.extra.key": "x",
        "transforms.other.copies": "9",
        "name": "conn",
    }
    chain: TransformationChain[Any] = TransformationChain(config)
    split = chain.stages[0].transformation
    assert isinstance(split, Split)
    assert split.seen == {"copies": "1", "extra.key": "x"}


def test_errors_propagate_with_stage_note() -> None:
    config = {"transforms": "b", "transforms.b.type": f"{__name__}.Broken"}
    with pytest.raises(DataError, match="Broken: cannot handle field x") as info:
        TransformationChain(config).apply(rec())
    assert any("'b'" in note for note in info.value.__notes__)


def test_close_closes_each_plugin_once() -> None:
    Split.closed.clear()
    config = {"transforms": "a,b", "transforms.a.type": "Split", "transforms.b.type": "Split"}
    resolve = {"Split": Split}.__getitem__
    chain: TransformationChain[Any] = TransformationChain(config, resolve)
    chain.close()
    assert Split.closed == ["split", "split"]
    chain.close()
    assert Split.closed == ["split", "split"]


def test_build_failure_closes_already_built_stages() -> None:
    Split.closed.clear()
    config = {
        "transforms": "ok,bad",
        "transforms.ok.type": f"{__name__}.Split",
        "transforms.bad.type": T + "Cast$Value",
    }
    with pytest.raises(ConfigError) as info:
        TransformationChain(config)
    assert info.value.name == "transforms.bad.spec"
    assert Split.closed == ["split"]


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"transforms": "a"}, "transforms.a.type"),
        ({"transforms": "a", "transforms.a.type": "no.such.Class"}, "transforms.a.type"),
        ({"transforms": "a", "transforms.a.type": f"{__name__}.NotAPlugin"}, "transforms.a.type"),
        (
            {"transforms": "a", "transforms.a.type": T + "Filter", "transforms.a.predicate": "p"},
            "transforms.a.predicate",
        ),
        (
            {"transforms": "a", "transforms.a.type": T + "Filter", "transforms.a.negate": "nah"},
            "transforms.a.negate",
        ),
        ({"transforms": "a,a", "transforms.a.type": T + "Filter"}, "transforms"),
        ({"predicates": "p"}, "predicates.p.type"),
        (
            {
                "predicates": "p",
                "predicates.p.type": T + "Filter",
            },  # a transformation, not a predicate
            "predicates.p.type",
        ),
        (
            {"predicates": "p", "predicates.p.type": T + "predicates.TopicNameMatches"},
            "predicates.p.pattern",
        ),
    ],
)
def test_build_errors_name_the_key(config: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        TransformationChain(config)
    assert info.value.name == key
    assert key in validate_transforms(config)


def test_validate_collects_every_error_per_key() -> None:
    config = {
        "transforms": "unknown,cast,hf,ok,gated",
        "transforms.unknown.type": "com.example.Nope",
        "transforms.cast.type": T + "Cast$Value",
        "transforms.cast.spec": "a:bytes",
        "transforms.hf.type": T + "HeaderFrom$Value",
        "transforms.hf.fields": "a,b",
        "transforms.hf.headers": "a",
        "transforms.hf.operation": "copy",
        "transforms.ok.type": T + "RegexRouter",
        "transforms.ok.regex": "(.*)",
        "transforms.ok.replacement": "$1",
        "transforms.gated.type": T + "Filter",
        "transforms.gated.predicate": "missing",
        "predicates": "tn",
        "predicates.tn.type": T + "predicates.TopicNameMatches",
        "predicates.tn.pattern": "(",
    }
    errors = TransformationChain.validate(config)
    assert set(errors) == {
        "transforms.unknown.type",
        "transforms.cast.spec",
        "transforms.hf.headers",
        "transforms.gated.predicate",
        "predicates.tn.pattern",
    }
    assert "com.example.Nope" in errors["transforms.unknown.type"][0]
    assert "bytes" in errors["transforms.cast.spec"][0]
    assert "same number of elements" in errors["transforms.hf.headers"][0]
    assert "missing" in errors["transforms.gated.predicate"][0]


def test_validate_valid_config_is_empty() -> None:
    config = {
        "transforms": "f",
        "transforms.f.type": "Filter",
        "transforms.f.predicate": "p",
        "predicates": "p",
        "predicates.p.type": "RecordIsTombstone",
    }
    assert validate_transforms(config) == {}


def test_custom_resolver_is_used() -> None:
    seen: list[str] = []

    def resolve(name: str) -> type:
        seen.append(name)
        return Filter

    chain: TransformationChain[Any] = TransformationChain(
        {"transforms": "x", "transforms.x.type": "my-filter"}, resolve
    )
    assert seen == ["my-filter"]
    assert chain.apply(rec()) == []


def test_default_resolve_names() -> None:
    assert default_resolve(T + "Cast$Value").__name__ == "CastValue"
    assert default_resolve("Cast$Key").__name__ == "CastKey"
    assert default_resolve("TopicNameMatches").__name__ == "TopicNameMatches"
    assert default_resolve("connectrt.transforms.filter.Filter") is Filter
    assert default_resolve("connectrt.transforms.filter:Filter") is Filter
    with pytest.raises(ConfigError, match="could not be found"):
        default_resolve("Nope")


def test_explicit_stages_and_sink_records() -> None:
    class Odd(Predicate[Any]):
        def configure(self, config: Mapping[str, Any]) -> None:
            pass

        def test(self, record: Any) -> bool:
            return bool(record.kafka_offset % 2)

    drop: Filter[Any] = Filter()
    chain: TransformationChain[Any] = TransformationChain(
        stages=[TransformationStage("drop-odd", drop, Odd())]
    )
    records = [SinkRecord("t", 0, None, None, None, i, i) for i in range(4)]
    kept = [r for record in records for r in chain.apply(record)]
    assert [r.kafka_offset for r in kept] == [0, 2]


def test_enriched_config_def_prefixes_plugin_keys() -> None:
    config = {
        "transforms": "c,bad",
        "transforms.c.type": T + "Cast$Value",
        "transforms.bad.type": "Nope",
        "predicates": "p",
        "predicates.p.type": T + "predicates.TopicNameMatches",
    }
    cd = enriched_config_def(config)
    names = cd.names()
    for key in (
        "transforms.c.type",
        "transforms.c.predicate",
        "transforms.c.negate",
        "transforms.c.spec",
        "transforms.c.replace.null.with.default",
        "transforms.bad.type",
        "predicates.p.type",
        "predicates.p.pattern",
    ):
        assert key in names
    assert "transforms.bad.spec" not in names
    assert cd.keys["transforms.c.spec"].group == "Transforms: c"
    assert cd.keys["transforms.c.type"].required
    values = cd.validate({**config, "transforms.c.spec": "a:int8"})
    assert values["transforms.c.spec"].errors == []
    assert values["predicates.p.pattern"].errors != []
