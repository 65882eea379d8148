"""The object storage sink task driven directly (no worker) against a local directory.

What the objects hold, how they are named and rotated, what the task lets the runtime commit,
where a new task resumes, and what goes to the errant record reporter. The end-to-end runs
(worker, broker, S3 server, kill -9) are in tests/integration and tests/e2e.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import time
from pathlib import Path
from typing import Any

import fastavro
import pyarrow.parquet as pq
import pytest

from connectors.objectstore import ObjectStoreSinkConnector, ObjectStoreSinkTask
from connectors.objectstore.config import CONFIG_DEF, parse_config
from connectors.objectstore.partitioners import joda_to_strftime
from connectrt.api import ConfigError, ErrantRecordReporter, SinkRecord, SinkRecordBatch
from connectrt.api import TopicPartition as TP
from connectrt.data import Decimal, Schema, SchemaBuilder, Struct, Timestamp
from connectrt.testing.contexts import RecordingSinkTaskContext

V1 = (
    SchemaBuilder.struct()
    .name("Event")
    .version(1)
    .field("n", Schema.INT64_SCHEMA)
    .field("at", Timestamp.SCHEMA)
    .field("amount", Decimal.schema(2))
    .build()
)
V2 = (
    SchemaBuilder.struct()
    .name("Event")
    .version(2)
    .field("n", Schema.INT64_SCHEMA)
    .field("at", Timestamp.SCHEMA)
    .field("amount", Decimal.schema(2))
    .field("note", SchemaBuilder.string().optional().default_value("none").build())
    .build()
)
T0 = 1_700_000_000_000


class ListReporter(ErrantRecordReporter):
    def __init__(self) -> None:
        self.reported: list[tuple[SinkRecord, BaseException]] = []

    def report(self, record: SinkRecord, error: BaseException) -> None:
        self.reported.append((record, error))


def _event(n: int, schema: Schema = V1) -> Struct:
    s = Struct(schema).put("n", n).put("at", dt.datetime.fromtimestamp((T0 + n) / 1000, dt.UTC))
    return s.put("amount", decimal.Decimal(n) / 100)


def _batch(
    topic: str, partition: int, offsets: range, values: list[Any] | None = None, schema: Any = V1
) -> SinkRecordBatch:
    vals = values if values is not None else [_event(o) for o in offsets]
    schemas = [schema if not isinstance(v, Struct) else v.schema for v in vals]
    return SinkRecordBatch.from_columns(
        len(vals),
        topics=[topic] * len(vals),
        partitions=[partition] * len(vals),
        offsets=list(offsets),
        values=vals,
        value_schemas=schemas,
        timestamps=[T0 + o for o in offsets],
    )


def _config(root: Path, **extra: str) -> dict[str, str]:
    return {
        "store.url": root.as_uri(),
        "flush.size": "3",
        "format.class": "io.confluent.connect.s3.format.parquet.ParquetFormat",
        **extra,
    }


def _task(config: dict[str, str], reporter: ErrantRecordReporter | None = None) -> Any:
    task = ObjectStoreSinkTask()
    context = RecordingSinkTaskContext(config, reporter)
    task.initialize(context)
    task.start(config)
    return task, context


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_full_sets_are_written_and_only_they_are_committable(tmp_path: Path) -> None:
    task, _ = _task(_config(tmp_path))
    task.open([TP("t", 0), TP("t", 1)])
    task.put(_batch("t", 0, range(0, 7)))
    task.put(_batch("t", 1, range(10, 12)))
    assert _files(tmp_path) == [
        "topics/t/partition=0/t+0+0000000000.parquet",
        "topics/t/partition=0/t+0+0000000003.parquet",
    ]
    # offset 6 is buffered, partition 1 has no full set: nothing of them is committable
    assert task.pre_commit({TP("t", 0): 7, TP("t", 1): 12}) == {TP("t", 0): 6}
    table = pq.read_table(tmp_path / "topics/t/partition=0/t+0+0000000003.parquet")
    assert table.column("n").to_pylist() == [3, 4, 5]
    assert table.column("amount").to_pylist()[0] == decimal.Decimal("0.03")
    assert str(table.schema.field("at").type) == "timestamp[ms, tz=UTC]"
    task.stop()


def test_a_new_task_resumes_after_the_last_complete_set(tmp_path: Path) -> None:
    task, _ = _task(_config(tmp_path))
    task.open([TP("t", 0)])
    task.put(_batch("t", 0, range(0, 8)))
    task.stop()  # crash: 6, 7 were never written
    again, context = _task(_config(tmp_path))
    again.open([TP("t", 0), TP("t", 3)])
    assert context.rewinds == {TP("t", 0): 6}
    assert again.pre_commit({TP("t", 0): 6}) == {TP("t", 0): 6}
    # an incomplete newer set (a crash between two PUTs of one set) is not resumed after
    (tmp_path / "topics/t/partition=0/t+0+0000000003.parquet").unlink()
    third, context = _task(_config(tmp_path))
    third.open([TP("t", 0)])
    assert context.rewinds == {TP("t", 0): 3}


def test_a_set_spanning_directories_resumes_only_when_complete(tmp_path: Path) -> None:
    config = _config(tmp_path, **{"partitioner.class": "field", "partition.field.name": "n"})
    task, _ = _task(config)
    task.open([TP("t", 0)])
    task.put(_batch("t", 0, range(0, 3)))
    files = _files(tmp_path)
    assert files == [
        "topics/t/n=0/t+0+0000000000.parquet",
        "topics/t/n=1/t+0+0000000001.parquet",
        "topics/t/n=2/t+0+0000000002.parquet",
    ]
    (tmp_path / files[0]).unlink()
    again, context = _task(config)
    again.open([TP("t", 0)])
    assert context.rewinds == {}  # the only set is incomplete: resume from the committed offset


def test_time_based_partitioner_uses_path_format(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        **{
            "partitioner.class": "io.confluent.connect.storage.partitioner.TimeBasedPartitioner",
            "path.format": "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH",
            "partition.duration.ms": "3600000",
            "locale": "en-US",
            "timezone": "UTC",
            "timestamp.extractor": "RecordField",
            "timestamp.field": "at",
        },
    )
    task, _ = _task(config)
    task.open([TP("t", 0)])
    task.put(_batch("t", 0, range(0, 3)))
    assert _files(tmp_path) == ["topics/t/year=2023/month=11/day=14/hour=22/t+0+0000000000.parquet"]
    assert joda_to_strftime("'dt'=YYYY-MM-dd") == "dt=%Y-%m-%d"


def test_rotate_interval_cuts_sets_on_record_time(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        **{"flush.size": "100", "rotate.interval.ms": "2", "timestamp.extractor": "Record"},
    )
    task, _ = _task(config)
    task.open([TP("t", 0)])
    task.put(_batch("t", 0, range(0, 5)))
    assert [f.rsplit("/", 1)[1] for f in _files(tmp_path)] == [
        "t+0+0000000000.parquet",
        "t+0+0000000002.parquet",
    ]


def test_json_lines_take_schemaless_values(tmp_path: Path) -> None:
    config = _config(tmp_path, **{"format.class": "json", "topics.dir": "out/json"})
    task, _ = _task(config)
    task.open([TP("t", 0)])
    values = [{"a": 1}, {"b": [1, 2]}, "text"]
    task.put(_batch("t", 0, range(0, 3), values, schema=None))
    task.put(_batch("t", 0, range(3, 6)))  # structs, decimals and timestamps too
    lines = (tmp_path / "out/json/t/partition=0/t+0+0000000000.json").read_text().splitlines()
    assert [json.loads(line) for line in lines] == values
    struct_lines = (tmp_path / "out/json/t/partition=0/t+0+0000000003.json").read_text()
    assert json.loads(struct_lines.splitlines()[0])["amount"] == "0.03"


def test_avro_files_round_trip(tmp_path: Path) -> None:
    task, context = _task(_config(tmp_path, **{"format.class": "avro"}))
    task.open([TP("t", 0)])
    task.put(_batch("t", 0, range(0, 4)))
    with (tmp_path / "topics/t/partition=0/t+0+0000000000.avro").open("rb") as f:
        rows = list(fastavro.reader(f))
    assert [r["n"] for r in rows] == [0, 1, 2]
    assert rows[1]["amount"] == decimal.Decimal("0.01")
    assert rows[1]["at"] == dt.datetime.fromtimestamp((T0 + 1) / 1000, dt.UTC)
    again, context = _task(_config(tmp_path, **{"format.class": "avro"}))
    again.open([TP("t", 0)])
    assert context.rewinds == {TP("t", 0): 3}


def test_schemaless_values_in_parquet_go_to_the_reporter_with_their_context(
    tmp_path: Path,
) -> None:
    reporter = ListReporter()
    task, _ = _task(_config(tmp_path), reporter)
    task.open([TP("t", 0)])
    task.put(_batch("t", 0, range(0, 3), [{"a": 1}, {"a": 2}, {"a": 3}], schema=None))
    assert [r.kafka_offset for r, _ in reporter.reported] == [0, 1, 2]
    record, error = reporter.reported[0]
    assert record.topic == "t" and record.kafka_partition == 0 and record.value == {"a": 1}
    assert "no value schema" in str(error)
    assert _files(tmp_path) == []
    # the set counted them: reported records are committable once their set is written
    assert task.pre_commit({TP("t", 0): 3}) == {TP("t", 0): 3}


def test_a_bad_record_fails_alone(tmp_path: Path) -> None:
    reporter = ListReporter()
    task, _ = _task(_config(tmp_path), reporter)
    task.open([TP("t", 0)])
    broken = Struct(V1).put("n", 1)  # required fields unset
    task.put(_batch("t", 0, range(0, 3), [_event(0), broken, _event(2)]))
    assert [r.kafka_offset for r, _ in reporter.reported] == [1]
    table = pq.read_table(tmp_path / "topics/t/partition=0/t+0+0000000000.parquet")
    assert table.column("n").to_pylist() == [0, 2]


def test_without_a_reporter_a_bad_record_fails_the_task_readably(tmp_path: Path) -> None:
    task, _ = _task(_config(tmp_path))
    task.open([TP("t", 0)])
    with pytest.raises(Exception, match=r"offset 0 of t-0: .*no value schema"):
        task.put(_batch("t", 0, range(0, 1), [{"a": 1}], schema=None))


def test_tombstones_are_ignored_or_reported(tmp_path: Path) -> None:
    reporter = ListReporter()
    task, _ = _task(_config(tmp_path), reporter)
    task.open([TP("t", 0)])
    task.put(_batch("t", 0, range(0, 1), [None], schema=None))
    assert len(reporter.reported) == 1
    ignoring, _ = _task(_config(tmp_path / "i", **{"behavior.on.null.values": "ignore"}))
    ignoring.open([TP("t", 0)])
    ignoring.put(_batch("t", 0, range(0, 1), [None], schema=None))
    assert ignoring.pre_commit({TP("t", 0): 1}) == {TP("t", 0): 1}


def test_schema_change_rotates_or_projects(tmp_path: Path) -> None:
    mixed = [_event(0), _event(1, V2).put("note", "x"), _event(2), _event(3, V2).put("note", "x")]
    none, _ = _task(_config(tmp_path / "none", **{"flush.size": "10"}))
    none.open([TP("t", 0)])
    none.put(_batch("t", 0, range(0, 4), mixed))
    none.pre_commit({TP("t", 0): 4})
    # NONE: every change of schema writes the set: 0 | 1 | 2 (3 still open)
    assert len(_files(tmp_path / "none")) == 3
    backward, _ = _task(
        _config(tmp_path / "bw", **{"flush.size": "3", "schema.compatibility": "BACKWARD"})
    )
    backward.open([TP("t", 0)])
    backward.put(_batch("t", 0, range(0, 4), mixed))
    # BACKWARD: v2 starts a file; the later v1 record is written in v2 (note: its default)
    files = _files(tmp_path / "bw")
    assert [f.rsplit("/", 1)[1] for f in files] == [
        "t+0+0000000000.parquet",
        "t+0+0000000001.parquet",
    ]
    table = pq.read_table(tmp_path / "bw" / files[1])
    assert table.column("n").to_pylist() == [1, 2, 3]
    assert table.column("note").to_pylist() == ["x", "none", "x"]


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"flush.size": "0"}, "flush.size"),
        (
            {"format.class": "io.confluent.connect.s3.format.bytearray.ByteArrayFormat"},
            "format.class",
        ),
        ({"parquet.codec": "lzo"}, "parquet.codec"),
        ({"partitioner.class": "Nope"}, "partitioner.class"),
        ({"partitioner.class": "field"}, "partition.field.name"),
        ({"partitioner.class": "time", "partition.duration.ms": "1000"}, "path.format"),
        (
            {"partitioner.class": "time", "path.format": "YYYY", "timezone": "UTC"},
            "partition.duration.ms",
        ),
        (
            {"partitioner.class": "time", "path.format": "YYYY", "partition.duration.ms": "1"},
            "timezone",
        ),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"timestamp.extractor": "Kafka"}, "timestamp.extractor"),
        ({"schema.compatibility": "TRANSITIVE"}, "schema.compatibility"),
        ({"store.url": "ftp://x"}, "store.url"),
        ({"store.url": "http://127.0.0.1:9"}, "s3.bucket.name"),
        ({"aws.access.key.id": "AKIA"}, "aws.secret.access.key"),
        ({"rotate.interval.ms": "-5"}, "rotate.interval.ms"),
        ({"behavior.on.null.values": "drop"}, "behavior.on.null.values"),
    ],
)
def test_invalid_configs_are_rejected_per_key(
    tmp_path: Path, extra: dict[str, str], key: str
) -> None:
    config = _config(tmp_path, **extra)
    with pytest.raises(ConfigError) as info:
        parse_config(config)
    assert info.value.name == key or key in str(info.value)
    connector = ObjectStoreSinkConnector()
    with pytest.raises(ConfigError):
        connector.start(config)
    # validation (PUT /connector-plugins/.../config/validate) names the key
    results = connector.validate(config)
    assert results[key].errors, f"no error on {key}: {results[key]}"
    assert [k for k, v in results.items() if v.errors] == [key]


def test_required_keys_and_hidden_secrets(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"flush\.size"):
        parse_config({"store.url": tmp_path.as_uri(), "format.class": "json"})
    values = CONFIG_DEF.validate(
        {**_config(tmp_path), "aws.access.key.id": "AKIAX", "aws.secret.access.key": "s3cr3t"}
    )
    assert "s3cr3t" not in repr(values) and "AKIAX" not in repr(values)
    config = parse_config(
        {
            "s3.bucket.name": "b",
            "flush.size": "1",
            "format.class": "json",
            "aws.access.key.id": "AKIAX",
            "aws.secret.access.key": "s3cr3t",
        }
    )
    assert config.secret_key == "s3cr3t" and config.local_root is None


def test_unreachable_store_fails_start_readably(tmp_path: Path) -> None:
    config = {
        "store.url": "http://127.0.0.1:9",
        "s3.bucket.name": "missing",
        "flush.size": "1",
        "format.class": "json",
        "aws.access.key.id": "a",
        "aws.secret.access.key": "b",
    }
    task = ObjectStoreSinkTask()
    task.initialize(RecordingSinkTaskContext(config))
    with pytest.raises(Exception, match="s3://missing"):
        task.start(config)


def test_a_record_without_its_time_field_fails_alone(tmp_path: Path) -> None:
    timeless = _event(1)
    timeless._values[1] = None  # "at" unset, bypassing put's check
    values: list[Any] = [_event(0), timeless, _event(2), _event(3)]
    for extra in (
        {  # the time partitioner cannot place it
            "partitioner.class": "time",
            "path.format": "YYYY",
            "partition.duration.ms": "1000",
            "timezone": "UTC",
            "timestamp.extractor": "RecordField",
            "timestamp.field": "at",
        },
        {
            "rotate.interval.ms": "1000",
            "timestamp.extractor": "RecordField",
            "timestamp.field": "at",
        },
    ):
        root = tmp_path / str(len(extra))
        reporter = ListReporter()
        task, _ = _task(_config(root, **{"flush.size": "3", **extra}), reporter)
        task.open([TP("t", 0)])
        task.put(_batch("t", 0, range(0, 4), values))
        assert [r.kafka_offset for r, _ in reporter.reported] == [1]
        assert "'at'" in str(reporter.reported[0][1])
        written = sorted(root.rglob("*.parquet"))
        assert [pq.read_table(f).column("n").to_pylist() for f in written] == [[0, 2]]
        assert task.pre_commit({TP("t", 0): 4}) == {TP("t", 0): 3}


def test_rotate_schedule_writes_an_idle_set_at_commit_time(tmp_path: Path) -> None:
    hour, _ = _task(
        _config(tmp_path / "h", **{"flush.size": "100", "rotate.schedule.interval.ms": "3600000"})
    )
    hour.open([TP("t", 0)])
    hour.put(_batch("t", 0, range(0, 2)))
    assert hour.pre_commit({TP("t", 0): 2}) == {}  # not due: nothing written, nothing committed
    task, _ = _task(_config(tmp_path, **{"flush.size": "100", "rotate.schedule.interval.ms": "50"}))
    task.open([TP("t", 0)])
    task.put(_batch("t", 0, range(0, 2)))
    opened = time.monotonic()
    while time.monotonic() - opened < 0.06:  # the schedule's wall clock passing, not a wait
        pass  # for something asynchronous: nothing runs in the background
    assert task.pre_commit({TP("t", 0): 2}) == {TP("t", 0): 2}
    assert _files(tmp_path) == ["topics/t/partition=0/t+0+0000000000.parquet"]
