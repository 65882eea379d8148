"""``connectrt import``'s decisions (:mod:`connectrt.cli.import_plan`) and report, without HTTP:
what cannot run on the target and why, when a connector is unchanged, differs or is replaced,
and that no secret value reaches the report."""

from __future__ import annotations

import json
from typing import Any

import pytest

from connectrt.cli.import_plan import (
    PluginCatalog,
    SourceConnector,
    TargetConnector,
    plan_connector,
    provider_references,
    redact_config_values,
)
from connectrt.cli.import_run import report

# What a connectrt target lists at GET /connector-plugins?connectorsOnly=false (a part).
LISTING = [
    {"class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "type": "source"},
    {"class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "type": "sink"},
    {"class": "org.apache.kafka.connect.json.JsonConverter", "type": "converter"},
    {"class": "org.apache.kafka.connect.storage.StringConverter", "type": "converter"},
    {"class": "org.apache.kafka.connect.transforms.Cast$Value", "type": "transformation"},
    {"class": "org.apache.kafka.connect.transforms.RegexRouter", "type": "transformation"},
    {
        "class": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        "type": "predicate",
    },
]
CATALOG = PluginCatalog(LISTING)
SOURCE_CLASS = "org.apache.kafka.connect.file.FileStreamSourceConnector"
OFFSETS = [{"partition": {"filename": "/data/in.txt"}, "offset": {"position": 1200}}]


def source(config: dict[str, str] | None = None, **kw: Any) -> SourceConnector:
    base = {"connector.class": SOURCE_CLASS, "file": "/data/in.txt", "topic": "t", "name": "c"}
    args: dict[str, Any] = {"state": "RUNNING", "offsets": OFFSETS, **kw}
    return SourceConnector("c", {**base, **(config or {})}, **args)


def problems(plan: Any) -> list[str]:
    return [f.text() for f in plan.problems]


@pytest.mark.parametrize(
    "name",
    [
        SOURCE_CLASS,
        "FileStreamSourceConnector",
        "FileStreamSource",
        "connectors.file.FileStreamSourceConnector",  # connectrt's Python path, by its alias map
    ],
)
def test_a_connector_class_is_known_under_every_alias_the_target_accepts(name: str) -> None:
    plan = plan_connector(source({"connector.class": name}), None, CATALOG)
    assert plan.action == "create", problems(plan)


def test_unknown_converter_smt_and_predicate_are_blocking_with_their_keys() -> None:
    plan = plan_connector(
        source(
            {
                "value.converter": "org.apache.kafka.connect.converters.LongConverter",
                "key.converter": "StringConverter",
                "transforms": "cast, drop ,route",
                "transforms.cast.type": "org.apache.kafka.connect.transforms.Cast$Value",
                "transforms.drop.type": "io.confluent.connect.transforms.Drop$Value",
                "transforms.route.type": "RegexRouter",
                "transforms.route.predicate": "nope",
                "predicates": "isT,hasH",
                "predicates.isT.type": "TopicNameMatches",
                "predicates.hasH.type": "org.apache.kafka.connect.transforms.predicates."
                "HasHeaderKey",
            }
        ),
        None,
        CATALOG,
    )
    assert plan.action == "blocked"
    found = problems(plan)
    assert {p.split(":", 1)[0] for p in found} == {
        "value.converter",
        "transforms.drop.type",
        "transforms.route.predicate",
        "predicates.hasH.type",
    }
    assert any("LongConverter is not installed on the target" in p for p in found)
    assert any("names predicate nope" in p for p in found)


def test_a_plugin_of_the_wrong_kind_says_what_the_target_has_it_as() -> None:
    plan = plan_connector(source({"value.converter": "RegexRouter"}), None, CATALOG)
    assert problems(plan) == [
        "value.converter: the target has RegexRouter as a transformation, not as a converter"
    ]


def test_an_unknown_connector_class_blocks() -> None:
    plan = plan_connector(source({"connector.class": "com.acme.MainframeSource"}), None, CATALOG)
    assert plan.action == "blocked"
    assert "connector class com.acme.MainframeSource is not installed" in problems(plan)[0]


def test_config_providers_are_warnings_unless_the_targets_are_named() -> None:
    config = {"db.password": "${vault:db:pw}", "user": "${env:USER}", "x": "${env:X}-${file:/a:b}"}
    assert provider_references(config) == {
        "env": ["user", "x"],
        "file": ["x"],
        "vault": ["db.password"],
    }
    unknown = plan_connector(source(config), None, CATALOG)
    assert unknown.action == "create"
    assert len([w for w in unknown.warnings if "config provider" in w.message]) == 3
    named = plan_connector(source(config), None, CATALOG, providers=["env", "file"])
    assert named.action == "blocked"
    assert problems(named) == [
        "refers to config provider 'vault' (in db.password), which the target's workers do not "
        "configure (--provider): the reference would stay unresolved"
    ]


def test_unreadable_source_offsets_block_rather_than_start_from_scratch() -> None:
    plan = plan_connector(source(offsets=None, offsets_error="HTTP 500"), None, CATALOG)
    assert plan.action == "blocked"
    assert "offsets could not be read from the source (HTTP 500)" in problems(plan)[0]


def test_states_map_to_target_states() -> None:
    for state, expected in (("PAUSED", "PAUSED"), ("STOPPED", "STOPPED"), ("RUNNING", "RUNNING")):
        assert plan_connector(source(state=state), None, CATALOG).state == expected
    failed = plan_connector(source(state="FAILED"), None, CATALOG)
    assert failed.state == "RUNNING"
    assert "is FAILED on the source" in failed.warnings[0].message


def test_the_same_config_and_offsets_are_unchanged_even_with_hidden_secrets() -> None:
    src = source({"db.password": "s3cret-value"}, state="PAUSED")
    # The target hides the secret's value: it cannot be compared, so it counts as the same.
    existing = TargetConnector({**src.config, "db.password": "[hidden]"}, "RUNNING", OFFSETS)
    plan = plan_connector(src, existing, CATALOG)
    assert plan.action == "unchanged"
    assert plan.differences == []
    assert any("left as it is" in w.message for w in plan.warnings)  # states differ: noted


def test_another_config_or_other_offsets_differ_and_overwrite_only_when_asked() -> None:
    src = source({"db.password": "new-secret-1", "connection.url": "jdbc:x://u:pw-new@h/db"})
    existing = TargetConnector(
        {
            **src.config,
            "db.password": "old-secret-1",
            "topic": "other",
            "connection.url": "jdbc:x://u:pw-old@h/db",
        },
        "RUNNING",
        [{"partition": {"filename": "/data/in.txt"}, "offset": {"position": 9}}],
    )
    plan = plan_connector(src, existing, CATALOG)
    assert plan.action == "differs"
    texts = [f.text() for f in plan.differences]
    assert "db.password: differs (a secret: values not shown)" in texts
    assert "topic: 'other' on the target; 't' on the source" in texts
    assert any(t.startswith("offsets differ") for t in texts)
    joined = json.dumps(texts)
    for secret in ("new-secret-1", "old-secret-1", "pw-new", "pw-old"):
        assert secret not in joined
    assert plan_connector(src, existing, CATALOG, overwrite=True).action == "overwrite"


def test_offsets_with_a_null_offset_are_neither_written_nor_compared() -> None:
    with_null = [*OFFSETS, {"partition": {"filename": "/old.txt"}, "offset": None}]
    plan = plan_connector(source(offsets=with_null), None, CATALOG)
    assert plan.offsets == OFFSETS
    existing = TargetConnector(source().config, "RUNNING", OFFSETS)
    assert plan_connector(source(offsets=with_null), existing, CATALOG).action == "unchanged"


def test_server_messages_lose_secret_values() -> None:
    config = {"db.password": "hunter2-pw", "topic": "visible-topic"}
    text = "Connection refused for password hunter2-pw on visible-topic"
    assert redact_config_values(text, config) == (
        "Connection refused for password [hidden] on visible-topic"
    )


def test_the_report_hides_secrets_and_fails_when_anything_is_left_behind(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ok = source({"db.password": "hunter2-pw"})
    bad = SourceConnector(
        "bad", {**ok.config, "connector.class": "com.acme.X", "name": "bad"}, "RUNNING", []
    )
    plans = [plan_connector(ok, None, CATALOG), plan_connector(bad, None, CATALOG)]
    status = report("http://kc", "http://cr", [ok, bad], plans, {}, True, False)
    out = capsys.readouterr().out
    assert status == 1
    assert "would create" in out and "blocked" in out and "cannot run: connector.class:" in out
    assert "hunter2-pw" not in out
    status = report("http://kc", "http://cr", [ok], plans[:1], {"c": "created"}, False, True)
    answer = json.loads(capsys.readouterr().out)
    assert status == 0
    assert answer["connectors"][0]["result"] == "created"
    assert answer["connectors"][0]["config"]["db.password"] == "[hidden]"
    failed = {"c": "failed: boom (HTTP 500)"}
    assert report("http://kc", "http://cr", [ok], plans[:1], failed, False, True) == 1
