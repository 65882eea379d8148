"""Datagen: determinism, generation hints, quickstarts against their Avro schemas, keys,
splitting iterations across tasks, resuming from offsets, and config validation."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import fastavro
import pytest

from connectors.datagen import DatagenConnector, DatagenTask
from connectors.datagen.config import CONFIG_DEF, load_schema
from connectors.datagen.quickstarts import QUICKSTARTS, quickstart_dir
from connectors.datagen.source import BLOCK, task_record_count
from connectrt.api import (
    ConfigError,
    SourceRecord,
    SourceTaskContext,
)
from connectrt.data import Schema, Struct
from connectrt.testing.contexts import (
    MemoryOffsetReader,
    RecordingConnectorContext,
    StandaloneSourceTaskContext,
)

SCHEMAS_DIR = Path(__file__).resolve().parents[2] / "schemas"


def _task_context(config: Mapping[str, str], stored: Mapping[int, int]) -> SourceTaskContext:
    """A task context whose offsets say task ``t`` generated ``stored[t]`` records."""
    offsets = MemoryOffsetReader()
    for task_id, iteration in stored.items():
        offsets.put({"task.id": task_id}, {"current.iteration": iteration})
    return StandaloneSourceTaskContext(config, offsets)


def config(**extra: str) -> dict[str, str]:
    base = {"kafka.topic": "out", "max.interval": "0", "random.seed": "7"}
    base.update({k.replace("_", "."): v for k, v in extra.items()})
    return base


def task_configs(cfg: Mapping[str, str], tasks: int = 1) -> list[dict[str, str]]:
    connector = DatagenConnector()
    connector.initialize(RecordingConnectorContext())
    connector.start(cfg)
    return connector.task_configs(tasks)


def run_task(
    task_config: Mapping[str, str], count: int, stored: Mapping[int, int] | None = None
) -> list[SourceRecord]:
    task = DatagenTask()
    task.initialize(_task_context(task_config, stored or {}))
    task.start(task_config)
    records: list[SourceRecord] = []
    while len(records) < count:
        batch = task.poll()
        if not batch:
            break
        records.extend(batch)
    task.stop()
    return records[:count]


def values(records: list[SourceRecord]) -> list[dict[str, Any]]:
    return [r.value.to_dict() for r in records]


def schema_string(fields: list[Any]) -> str:
    return json.dumps({"type": "record", "name": "T", "namespace": "test", "fields": fields})


def generate(fields: list[Any], count: int, **extra: str) -> list[dict[str, Any]]:
    (tc,) = task_configs(config(schema_string=schema_string(fields), **extra))
    return values(run_task(tc, count))


# ---------------------------------------------------------------------------- determinism


def test_same_seed_same_records_other_seed_other_records():
    (tc,) = task_configs(config(quickstart="users"))
    first, again = values(run_task(tc, 300)), values(run_task(tc, 300))
    assert first == again
    (other,) = task_configs({**config(quickstart="users"), "random.seed": "8"})
    assert values(run_task(other, 300)) != first


def test_restart_mid_block_reproduces_the_uninterrupted_run():
    (tc,) = task_configs(config(quickstart="orders", batch_size="500"))
    uninterrupted = run_task(tc, BLOCK + 700)
    resumed = run_task(tc, 700, stored={0: BLOCK - 100})  # resumes inside the first block
    assert values(resumed) == values(uninterrupted[BLOCK - 100 : BLOCK + 600])
    assert [r.source_offset for r in resumed][:2] == [
        {"current.iteration": BLOCK - 99},
        {"current.iteration": BLOCK - 98},
    ]
    assert {json.dumps(r.source_partition) for r in resumed} == {'{"task.id": 0}'}


def test_iteration_continues_after_restart_and_iterations_limit_holds():
    (tc,) = task_configs(config(quickstart="orders", iterations="50"))
    first = run_task(tc, 30)
    rest = run_task(tc, 100, stored={0: 30})
    ids = [v["orderid"] for v in values(first + rest)]
    assert ids == list(range(1, 51))  # a sequence: no gap, no repeat, stops at iterations
    done = DatagenTask()
    done.initialize(_task_context(tc, {0: 50}))
    done.start(tc)
    assert done.poll() is None
    done.stop()


# -------------------------------------------------------------------------------- tasks


def test_iterations_split_across_tasks_without_overlap():
    cfg = config(quickstart="orders", iterations="10")
    configs = task_configs(cfg, 3)
    assert len(configs) == 3
    per_task = [values(run_task(c, 100)) for c in configs]
    assert [len(v) for v in per_task] == [4, 3, 3]
    ids = sorted(v["orderid"] for task in per_task for v in task)
    assert ids == list(range(1, 11))
    assert len(task_configs(config(quickstart="orders", iterations="2"), 5)) == 2
    assert [task_record_count(10, t, 3) for t in range(3)] == [4, 3, 3]
    assert task_record_count(-1, 0, 2) is None


def test_tasks_have_their_own_partitions_and_streams():
    configs = task_configs(config(quickstart="users"), 2)
    a, b = (run_task(c, 50) for c in configs)
    assert a[0].source_partition == {"task.id": 0} and b[0].source_partition == {"task.id": 1}
    assert values(a) != values(b)


# ------------------------------------------------------------------------------- hints


def test_range_options_regex_iteration_length_hints():
    fields = [
        {"name": "i", "type": {"type": "int", "arg.properties": {"range": {"min": 5, "max": 8}}}},
        {
            "name": "d",
            "type": {"type": "double", "arg.properties": {"range": {"min": -1.5, "max": 1.5}}},
        },
        {
            "name": "o",
            "type": {"type": "string", "arg.properties": {"options": ["a", "b", "c"]}},
        },
        {"name": "r", "type": {"type": "string", "arg.properties": {"regex": "ID-[A-F0-9]{4}"}}},
        {
            "name": "seq",
            "type": {"type": "long", "arg.properties": {"iteration": {"start": 100, "step": 5}}},
        },
        {
            "name": "wrap",
            "type": {
                "type": "int",
                "arg.properties": {"iteration": {"start": 0, "restart": 3}},
            },
        },
        {
            "name": "s",
            "type": {
                "type": "string",
                "arg.properties": {"length": {"min": 2, "max": 4}, "prefix": "p-"},
            },
        },
        {
            "name": "tags",
            "type": {
                "type": "array",
                "items": {"type": "string", "arg.properties": {"options": ["x"]}},
                "arg.properties": {"length": 3},
            },
        },
        {
            "name": "flag",
            "type": {"type": "boolean", "arg.properties": {"iteration": {"start": True}}},
        },
    ]
    out = generate(fields, 400)
    assert {v["i"] for v in out} == {5, 6, 7}
    assert all(-1.5 <= v["d"] < 1.5 for v in out)
    assert {v["o"] for v in out} == {"a", "b", "c"}
    assert all(re.fullmatch(r"ID-[A-F0-9]{4}", v["r"]) for v in out)
    assert len({v["r"] for v in out}) > 300
    assert [v["seq"] for v in out[:4]] == [100, 105, 110, 115]
    assert [v["wrap"] for v in out[:7]] == [0, 1, 2, 0, 1, 2, 0]
    assert all(re.fullmatch(r"p-[A-Za-z0-9]{2,3}", v["s"]) for v in out)
    assert all(v["tags"] == ["x", "x", "x"] for v in out)
    assert [v["flag"] for v in out[:4]] == [True, False, True, False]


def test_logical_types_nested_records_maps_unions_enums():
    fields = [
        {
            "name": "ts",
            "type": {
                "type": "long",
                "logicalType": "timestamp-millis",
                "arg.properties": {"iteration": {"start": "2025-03-01T00:00:00Z", "step": 60000}},
            },
        },
        {
            "name": "day",
            "type": {
                "type": "int",
                "logicalType": "date",
                "arg.properties": {"range": {"min": "2025-01-01", "max": "2025-01-03"}},
            },
        },
        {
            "name": "amount",
            "type": {
                "type": "bytes",
                "logicalType": "decimal",
                "precision": 6,
                "scale": 2,
                "arg.properties": {"range": {"min": 1, "max": 2}},
            },
        },
        {
            "name": "color",
            "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]},
        },
        {
            "name": "maybe",
            "type": ["null", {"type": "int", "arg.properties": {"options": [42]}}],
            "default": None,
            "arg.properties": {"distribution": {"0": 0.5, "1": 0.5}},
        },
        {"name": "always", "type": ["null", "string"], "arg.properties": {"position": 1}},
        {
            "name": "attrs",
            "type": {
                "type": "map",
                "values": "long",
                "arg.properties": {"length": 2, "keys": {"options": ["k1", "k2", "k3"]}},
            },
        },
        {
            "name": "inner",
            "type": {
                "type": "record",
                "name": "Inner",
                "fields": [
                    {"name": "n", "type": {"type": "int", "arg.properties": {"options": [1, 2]}}}
                ],
            },
        },
        {"name": "again", "type": "Inner"},
    ]
    out = generate(fields, 300)
    start = dt.datetime(2025, 3, 1, tzinfo=dt.UTC)
    assert [v["ts"] for v in out[:2]] == [start, start + dt.timedelta(minutes=1)]
    assert {v["day"] for v in out} == {dt.date(2025, 1, 1), dt.date(2025, 1, 2)}
    assert all(decimal.Decimal(1) <= v["amount"] < 2 for v in out)
    assert all(v["amount"].as_tuple().exponent == -2 for v in out)
    assert {v["color"] for v in out} == {"RED", "GREEN", "BLUE"}
    assert {v["maybe"] for v in out} == {None, 42}
    assert all(isinstance(v["always"], str) for v in out)
    assert all(1 <= len(v["attrs"]) <= 2 and set(v["attrs"]) <= {"k1", "k2", "k3"} for v in out)
    assert {v["inner"]["n"] for v in out} == {1, 2} == {v["again"]["n"] for v in out}


@pytest.mark.parametrize(
    "pattern",
    [
        r"User_[1-9][0-9]?",
        r"(10|172|192)\.[0-9]{1,3}\.x",
        r"[^a-z]{3}\d\w\s.",
        r"a*b+c?(de)*",
        r"^[A-Z]{2}-\d{3}$",
    ],
)
def test_regex_hint_output_matches(pattern: str):
    from connectors.datagen.regex import compile_regex

    gen = compile_regex(pattern)
    import random

    rng = random.Random(3)
    for _ in range(200):
        assert re.fullmatch(pattern, gen(rng)), pattern


# --------------------------------------------------------------------------- quickstarts


def to_avro_datum(value: Any) -> Any:
    if isinstance(value, Struct):
        return {f.name: to_avro_datum(value.get(f)) for f in value.schema.fields}
    if isinstance(value, list):
        return [to_avro_datum(v) for v in value]
    if isinstance(value, dict):
        return {k: to_avro_datum(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("path", sorted(SCHEMAS_DIR.glob("*.avsc")), ids=lambda p: p.name)
def test_every_schema_generates_valid_records(path: Path):
    """Every shipped .avsc: records fit the Connect schema and encode with fastavro against
    the .avsc itself (logical types included), and read back equal."""
    (tc,) = task_configs(config(schema_filename=str(path)))
    avro = json.loads(path.read_text())
    parsed = fastavro.parse_schema(avro)
    records = run_task(tc, 200)
    assert len(records) == 200
    for record in records:
        record.value.validate()
        datum = to_avro_datum(record.value)
        fastavro.validation.validate(datum, parsed, raise_errors=True)
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, datum)
        buf.seek(0)
        assert fastavro.schemaless_reader(buf, parsed, None) == datum


def test_quickstarts_look_realistic():
    def gen(name: str, n: int = 200) -> list[dict[str, Any]]:
        (tc,) = task_configs(config(quickstart=name))
        return values(run_task(tc, n))

    orders = gen("orders")
    assert [o["orderid"] for o in orders] == list(range(1, 201))
    assert all(re.fullmatch(r"Item_[1-9][0-9]{0,2}", o["itemid"]) for o in orders)
    assert all(10000 <= o["address"]["zipcode"] < 100000 for o in orders)
    users = gen("users")
    assert {u["gender"] for u in users} == {"MALE", "FEMALE", "OTHER"}
    assert all(re.fullmatch(r"Region_[1-9]", u["regionid"]) for u in users)
    trades = gen("stock_trades")
    assert all(dt.time(9, 30) <= t["trade_time"] < dt.time(16) for t in trades)
    clicks = gen("clickstream")
    assert all(re.fullmatch(r"(10|172|192)(\.\d+){3}", c["ip"]) for c in clicks)


def test_quickstarts_found_and_default_keyfields():
    assert quickstart_dir() is not None
    assert {p.stem for p in SCHEMAS_DIR.glob("*.avsc")} >= set(QUICKSTARTS)
    (tc,) = task_configs(config(quickstart="orders"))
    records = run_task(tc, 3)
    assert [r.key for r in records] == ["1", "2", "3"]
    assert records[0].key_schema == Schema.STRING_SCHEMA


def test_pyproject_ships_the_schemas_as_data_files():
    import tomllib

    pyproject = tomllib.loads((SCHEMAS_DIR.parent / "pyproject.toml").read_text())
    data_files = pyproject["tool"]["setuptools"]["data-files"]
    assert data_files["share/connectrt/schemas"] == ["schemas/*.avsc"]


# ------------------------------------------------------------------------------------ keys


def test_keyfield_is_the_field_value_as_string_and_no_keyfield_means_null_keys():
    fields = [
        {"name": "id", "type": {"type": "long", "arg.properties": {"iteration": {"start": 7}}}},
        {"name": "name", "type": "string"},
    ]
    (keyed,) = task_configs(config(schema_string=schema_string(fields), schema_keyfield="id"))
    records = run_task(keyed, 2)
    assert [r.key for r in records] == ["7", "8"]
    assert records[0].key_schema == Schema.STRING_SCHEMA
    (plain,) = task_configs(config(schema_string=schema_string(fields)))
    assert {(r.key, r.key_schema) for r in run_task(plain, 5)} == {(None, None)}


# ------------------------------------------------------------------------------- pacing


def test_poll_returns_batches_of_batch_size_when_unpaced():
    (tc,) = task_configs(config(quickstart="pageviews", batch_size="250"))
    task = DatagenTask()
    task.initialize(_task_context(tc, {}))
    task.start(tc)
    batch = task.poll()
    assert batch is not None and len(batch) == 250
    task.stop()
    assert task.poll() is None


# --------------------------------------------------------------------------- validation


def errors(cfg: Mapping[str, str]) -> dict[str, list[str]]:
    return {k: v.errors for k, v in DatagenConnector().validate(cfg).items() if v.errors}


def test_missing_quickstart_is_a_field_error_listing_the_quickstarts():
    found = errors(config(quickstart="nonesuch"))
    assert list(found) == ["quickstart"]
    (message,) = found["quickstart"]
    assert "Unknown quickstart 'nonesuch'" in message
    assert "clickstream, inventory, orders, pageviews, stock_trades, users" in message
    with pytest.raises(ConfigError, match="Unknown quickstart"):
        DatagenConnector().start(config(quickstart="nonesuch"))


def test_schema_source_errors(tmp_path: Path):
    missing = tmp_path / "nope.avsc"
    found = errors(config(schema_filename=str(missing)))
    assert list(found) == ["schema.filename"]
    assert "Cannot read schema file" in found["schema.filename"][0] and "nope.avsc" in str(found)
    assert "Set one of quickstart" in errors(config())["quickstart"][0]
    both = errors(config(quickstart="users", schema_string='{"type": "record"}'))
    assert "Only one of" in both["schema.string"][0]
    assert "not valid JSON" in errors(config(schema_string="{"))["schema.string"][0]
    assert "must be an Avro record" in errors(config(schema_string='"int"'))["schema.string"][0]
    bad_regex = schema_string(
        [{"name": "a", "type": {"type": "string", "arg.properties": {"regex": "(unclosed"}}}]
    )
    assert "$.a: Invalid regex" in errors(config(schema_string=bad_regex))["schema.string"][0]
    bad_range = schema_string(
        [{"name": "a", "type": {"type": "int", "arg.properties": {"range": {"min": 5, "max": 1}}}}]
    )
    assert "$.a: range" in errors(config(schema_string=bad_range))["schema.string"][0]
    bad_option = schema_string(
        [{"name": "a", "type": {"type": "int", "arg.properties": {"options": ["x"]}}}]
    )
    assert "option 'x'" in errors(config(schema_string=bad_option))["schema.string"][0]
    keyfield = errors(config(quickstart="users", schema_keyfield="nope"))
    assert "not a top-level field" in keyfield["schema.keyfield"][0]
    assert "max.interval" in errors(config(quickstart="users", max_interval="-1"))
    assert "kafka.topic" in errors({"quickstart": "users"})


def test_config_def_parses_the_confluent_keys():
    cfg = CONFIG_DEF.parse(config(quickstart="orders", iterations="5"))
    assert cfg["iterations"] == 5 and cfg["random.seed"] == 7 and cfg["max.interval"] == 0
    loaded = load_schema(cfg)
    assert loaded.schema.name == "ksql.orders"
