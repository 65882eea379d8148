"""FileStream source and sink connectors and tasks, used directly (no runtime, no broker)."""

from __future__ import annotations

import datetime as dt
import decimal
import random
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import connectors.file.source as source_module
from connectors.file import (
    FileStreamSinkConnector,
    FileStreamSinkTask,
    FileStreamSourceConnector,
    FileStreamSourceTask,
)
from connectors.file.sink import lines
from connectrt.api import (
    SinkRecord,
    SinkRecordBatch,
    SourceRecord,
    SourceRecordBatch,
    TopicPartition,
)
from connectrt.api.task import OffsetStorageReader, SourceTaskContext
from connectrt.data import Date, Decimal, Schema, SchemaBuilder, Struct, Timestamp
from connectrt.errors import ConfigError, ConnectError

# --- test doubles -----------------------------------------------------------------------------


class DictOffsetReader(OffsetStorageReader):
    """Committed offsets keyed by the partition's items; records every lookup."""

    def __init__(self, offsets: Mapping[str, dict[str, Any]] | None = None) -> None:
        self._by_filename = dict(offsets or {})
        self.requested: list[dict[str, Any]] = []

    def offsets(self, partitions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any] | None]:
        out: list[dict[str, Any] | None] = []
        for p in partitions:
            self.requested.append(dict(p))
            out.append(self._by_filename.get(p.get("filename", "")))
        return out


class Context(SourceTaskContext):
    def __init__(self, config: Mapping[str, str], reader: OffsetStorageReader) -> None:
        self._config = dict(config)
        self._reader = reader

    @property
    def configs(self) -> Mapping[str, str]:
        return self._config

    @property
    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._reader


@pytest.fixture(autouse=True)
def short_idle_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep idle polls short so the suite stays fast."""
    monkeypatch.setattr(source_module, "_IDLE_WAIT_S", 0.01)


@pytest.fixture
def tasks() -> Iterator[list[FileStreamSourceTask | FileStreamSinkTask]]:
    started: list[FileStreamSourceTask | FileStreamSinkTask] = []
    yield started
    for t in started:
        t.stop()


def make_source(
    tasks: list[Any],
    path: Path,
    committed: dict[str, Any] | None = None,
    extra: Mapping[str, str] | None = None,
) -> tuple[FileStreamSourceTask, DictOffsetReader]:
    config = {"file": str(path), "topic": "connect-test", **(extra or {})}
    reader = DictOffsetReader({str(path): committed} if committed is not None else None)
    task = FileStreamSourceTask()
    task.initialize(Context(config, reader))
    task.start(config)
    tasks.append(task)
    return task, reader


def values(records: list[SourceRecord] | None) -> list[str]:
    assert records is not None
    return [r.value for r in records]


def poll_until(task: FileStreamSourceTask, n: int, attempts: int = 50) -> list[SourceRecord]:
    out: list[SourceRecord] = []
    for _ in range(attempts):
        out.extend(task.poll() or [])
        if len(out) >= n:
            break
    return out


# --- source task ----------------------------------------------------------------------------


def test_source_reads_lines_with_offsets_and_partition(tmp_path: Path, tasks: list[Any]) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"first\nsecond line\n\nlast\n")
    task, reader = make_source(tasks, path)
    before = int(time.time() * 1000)
    records = task.poll()
    after = int(time.time() * 1000)
    assert values(records) == ["first", "second line", "", "last"]
    assert records is not None
    assert [r.source_offset for r in records] == [
        {"position": 6},
        {"position": 18},
        {"position": 19},
        {"position": 24},
    ]
    for r in records:
        assert r.source_partition == {"filename": str(path)}
        assert r.topic == "connect-test"
        assert r.key is None and r.key_schema is None
        assert r.value_schema == Schema.STRING_SCHEMA
        assert r.timestamp is not None and before <= r.timestamp <= after
    assert records[0].source_partition is records[-1].source_partition
    assert reader.requested == [{"filename": str(path)}]
    assert task.poll() is None  # nothing more yet


def test_source_batch_columns_agree_with_its_records(tmp_path: Path, tasks: list[Any]) -> None:
    """The poll is a SourceRecordBatch: the lines as values, the offsets made when read (the
    runtime reads the last one), the same as its records'."""
    path = tmp_path / "in.txt"
    path.write_bytes(b"a\nbb\nccc\n")
    task, _ = make_source(tasks, path)
    batch = task.poll()
    assert isinstance(batch, SourceRecordBatch)
    assert list(batch.values) == ["a", "bb", "ccc"]
    assert batch.source_offsets[-1] == {"position": 9}
    assert list(batch.source_offsets) == [{"position": 2}, {"position": 5}, {"position": 9}]
    assert batch.source_offsets[:2] == [{"position": 2}, {"position": 5}]
    assert not batch.records_built
    assert [r.source_offset for r in batch] == list(batch.source_offsets)


def test_source_partial_line_waits_for_its_newline(tmp_path: Path, tasks: list[Any]) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"one\ntw")
    task, _ = make_source(tasks, path)
    records = task.poll()
    assert values(records) == ["one"]
    assert records is not None and records[0].source_offset == {"position": 4}
    assert task.poll() is None  # "tw" is incomplete
    with path.open("ab") as f:
        f.write(b"o\nthr")
    records = task.poll()
    assert values(records) == ["two"]
    assert records is not None and records[0].source_offset == {"position": 8}
    with path.open("ab") as f:
        f.write(b"ee\n")
    assert values(task.poll()) == ["three"]


def test_source_strips_crlf_and_counts_it_in_position(tmp_path: Path, tasks: list[Any]) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"a\r\nbb\r\nc\n")
    task, _ = make_source(tasks, path)
    records = task.poll()
    assert values(records) == ["a", "bb", "c"]
    assert records is not None
    assert [r.source_offset for r in records] == [
        {"position": 3},
        {"position": 7},
        {"position": 9},
    ]


def test_source_cr_waiting_for_lf_is_not_emitted_early(tmp_path: Path, tasks: list[Any]) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"x\r")
    task, _ = make_source(tasks, path)
    assert task.poll() is None
    with path.open("ab") as f:
        f.write(b"\n")
    records = task.poll()
    assert values(records) == ["x"]
    assert records is not None and records[0].source_offset == {"position": 3}


def test_source_position_counts_bytes(tmp_path: Path, tasks: list[Any]) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes("é\n日本\nz\n".encode())
    task, _ = make_source(tasks, path)
    records = task.poll()
    assert values(records) == ["é", "日本", "z"]
    assert records is not None
    assert [r.source_offset for r in records] == [
        {"position": 3},
        {"position": 10},
        {"position": 12},
    ]


def test_source_lines_match_a_line_by_line_reading(tmp_path: Path, tasks: list[Any]) -> None:
    """ASCII and non-ASCII chunks, CRLF and a lone CR inside a line, empty lines, invalid
    UTF-8, lines across 64 KiB reads, small batches: each record is its line as a line-by-line
    reading of the bytes gives it (CRLF or LF removed, decoded with replacement), with the
    byte position after its line break."""
    rng = random.Random(7)
    pieces = ["plain", "", "a\rb", "crlf\r", "é ü", "日本", "x" * 3000]
    raw = [rng.choice(pieces).encode() if rng.random() > 0.01 else b"\xff\xfe" for _ in range(6000)]
    data = b"".join(line + b"\n" for line in raw)
    path = tmp_path / "in.txt"
    path.write_bytes(data)
    task, _ = make_source(tasks, path, extra={"batch.size": "777"})
    records = poll_until(task, len(raw), attempts=200)
    expected, position = [], 0
    for line in raw:
        position += len(line) + 1
        text = (line[:-1] if line.endswith(b"\r") else line).decode("utf-8", "replace")
        expected.append((text, {"position": position}))
    assert [(r.value, r.source_offset) for r in records] == expected
    assert position == len(data)


def test_source_invalid_utf8_is_replaced_not_fatal(tmp_path: Path, tasks: list[Any]) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"ok\n\xff\xfe\n")
    task, _ = make_source(tasks, path)
    records = task.poll()
    assert values(records)[0] == "ok"
    assert "\ufffd" in values(records)[1]


def test_source_respects_batch_size(tmp_path: Path, tasks: list[Any]) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"".join(f"line{i}\n".encode() for i in range(7)))
    task, _ = make_source(tasks, path, extra={"batch.size": "3"})
    assert values(task.poll()) == ["line0", "line1", "line2"]
    assert values(task.poll()) == ["line3", "line4", "line5"]
    assert values(task.poll()) == ["line6"]
    assert task.poll() is None


def test_source_many_lines_across_read_chunks(tmp_path: Path, tasks: list[Any]) -> None:
    lines = [f"{i:06d}-" + "x" * 100 for i in range(2000)]  # > 64 KiB
    path = tmp_path / "in.txt"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    task, _ = make_source(tasks, path, extra={"batch.size": "500"})
    records = poll_until(task, len(lines))
    assert [r.value for r in records] == lines
    assert records[-1].source_offset == {"position": path.stat().st_size}


@pytest.mark.parametrize("line_index", [0, 1, 2])
def test_source_resumes_exactly_at_committed_offset(
    tmp_path: Path, tasks: list[Any], line_index: int
) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"alpha\nbeta\ngamma\ndelta\n")
    first, _ = make_source(tasks, path)
    records = first.poll()
    assert records is not None
    committed = dict(records[line_index].source_offset or {})
    first.stop()

    resumed, reader = make_source(tasks, path, committed=committed)
    rest = resumed.poll()
    assert values(rest) == ["alpha", "beta", "gamma", "delta"][line_index + 1 :]
    assert rest is not None and rest[-1].source_offset == {"position": 23}
    assert reader.requested == [{"filename": str(path)}]


def test_source_resume_mid_file_with_explicit_position(tmp_path: Path, tasks: list[Any]) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"skip me\nread me\n")
    task, _ = make_source(tasks, path, committed={"position": 8})
    records = task.poll()
    assert values(records) == ["read me"]
    assert records is not None and records[0].source_offset == {"position": 16}


def test_source_resume_at_end_waits_for_new_lines(tmp_path: Path, tasks: list[Any]) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"done\n")
    task, _ = make_source(tasks, path, committed={"position": 5})
    assert task.poll() is None
    with path.open("ab") as f:
        f.write(b"new\n")
    records = task.poll()
    assert values(records) == ["new"]
    assert records is not None and records[0].source_offset == {"position": 9}


def test_source_committed_offset_of_wrong_type_fails(tmp_path: Path, tasks: list[Any]) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"a\n")
    task, _ = make_source(tasks, path, committed={"position": "5"})
    with pytest.raises(ConnectError, match="position"):
        task.poll()


def test_source_missing_file_waits_then_picks_it_up(tmp_path: Path, tasks: list[Any]) -> None:
    path = tmp_path / "later.txt"
    task, _ = make_source(tasks, path)
    assert task.poll() is None
    assert task.poll() is None
    path.write_bytes(b"hello\n")
    records = task.poll()
    assert values(records) == ["hello"]
    assert records is not None and records[0].source_offset == {"position": 6}


def test_source_missing_file_then_created_honours_committed_offset(
    tmp_path: Path, tasks: list[Any]
) -> None:
    path = tmp_path / "later.txt"
    task, _ = make_source(tasks, path, committed={"position": 4})
    assert task.poll() is None
    path.write_bytes(b"old\nnew\n")
    assert values(task.poll()) == ["new"]


def test_source_directory_is_a_connect_error(tmp_path: Path, tasks: list[Any]) -> None:
    task, _ = make_source(tasks, tmp_path)
    with pytest.raises(ConnectError):
        task.poll()


def test_source_start_validates_config(tmp_path: Path) -> None:
    task = FileStreamSourceTask()
    with pytest.raises(ConfigError, match="topic"):
        task.start({"file": str(tmp_path / "x")})
    with pytest.raises(ConfigError, match=r"batch\.size"):
        task.start({"file": "x", "topic": "t", "batch.size": "0"})


def test_source_stop_from_another_thread_wakes_waiting_poll(
    tmp_path: Path, tasks: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(source_module, "_IDLE_WAIT_S", 30.0)
    path = tmp_path / "in.txt"
    path.write_bytes(b"")
    task, _ = make_source(tasks, path)
    entered = threading.Event()
    results: list[Any] = []

    def run() -> None:
        entered.set()
        results.append(task.poll())

    t = threading.Thread(target=run, daemon=True)
    t.start()
    assert entered.wait(5)
    time.sleep(0.05)  # let poll() reach its idle wait
    task.stop()
    t.join(timeout=5)
    assert not t.is_alive(), "poll() did not return after stop()"
    assert results == [None]
    assert task.poll() is None  # stays stopped
    task.stop()  # idempotent


def test_source_stop_when_never_polled_is_safe(tmp_path: Path, tasks: list[Any]) -> None:
    task, _ = make_source(tasks, tmp_path / "nothing.txt")
    task.stop()
    task.stop()
    assert task.poll() is None


def test_source_version() -> None:
    assert FileStreamSourceTask().version() == "0.1.0"


# --- source connector -------------------------------------------------------------------------


@pytest.mark.parametrize("max_tasks", [1, 2, 10])
def test_source_connector_always_one_task(max_tasks: int) -> None:
    c = FileStreamSourceConnector()
    config = {"name": "s", "file": "f.txt", "topic": "t", "tasks.max": str(max_tasks)}
    c.start(config)
    configs = c.task_configs(max_tasks)
    assert configs == [config]
    configs[0]["file"] = "mutated"
    assert c.task_configs(1) == [config]
    assert c.task_class() is FileStreamSourceTask
    c.stop()
    c.stop()


def test_source_connector_rejects_invalid_config() -> None:
    with pytest.raises(ConfigError, match="topic"):
        FileStreamSourceConnector().start({"file": "f.txt"})
    with pytest.raises(ConfigError, match="String must be non-empty"):
        FileStreamSourceConnector().start({"file": "f.txt", "topic": " "})


def test_source_connector_config_def_and_version() -> None:
    c = FileStreamSourceConnector()
    keys = c.config_def().keys
    assert set(keys) == {"file", "topic", "batch.size"}
    assert keys["batch.size"].default == 2000
    assert keys["topic"].required
    assert keys["file"].default is None
    assert c.version() == "0.1.0"


def test_source_connector_exactly_once_support() -> None:
    c = FileStreamSourceConnector()
    assert c.exactly_once_support({"file": "f.txt", "topic": "t"}) == "SUPPORTED"
    assert c.exactly_once_support({"topic": "t"}) == "UNSUPPORTED"


def test_source_alter_offsets_accepts_valid() -> None:
    c = FileStreamSourceConnector()
    config = {"file": "f.txt", "topic": "t"}
    offsets: dict[Any, Any] = {
        (("filename", "f.txt"),): {"position": 0},
    }
    assert c.alter_offsets(config, offsets) is True
    assert c.alter_offsets(config, {(("filename", "f.txt"),): {"position": 10**12}}) is True
    assert c.alter_offsets(config, {(("filename", "f.txt"),): None}) is True
    assert c.alter_offsets(config, {}) is True


def test_source_alter_offsets_rejected_for_stdin() -> None:
    with pytest.raises(NotImplementedError, match="stdin"):
        FileStreamSourceConnector().alter_offsets(
            {"topic": "t"}, {(("filename", "f"),): {"position": 1}}
        )


def test_source_alter_offsets_needs_filename_in_partition() -> None:
    with pytest.raises(ConnectError, match="filename"):
        FileStreamSourceConnector().alter_offsets(
            {"file": "f.txt", "topic": "t"}, {(("file", "f.txt"),): {"position": 1}}
        )


@pytest.mark.parametrize("position", [-1, "5", 1.5, None, True])
def test_source_alter_offsets_needs_non_negative_integer_position(position: Any) -> None:
    with pytest.raises(ConnectError, match="position"):
        FileStreamSourceConnector().alter_offsets(
            {"file": "f.txt", "topic": "t"}, {(("filename", "f.txt"),): {"position": position}}
        )


def test_source_alter_offsets_missing_position() -> None:
    with pytest.raises(ConnectError, match="position"):
        FileStreamSourceConnector().alter_offsets(
            {"file": "f.txt", "topic": "t"}, {(("filename", "f.txt"),): {"other": 1}}
        )


# --- sink -------------------------------------------------------------------------------------


def record(value: Any, offset: int = 0) -> SinkRecord:
    return SinkRecord("connect-test", 0, None, None, None, value, offset)


def make_sink(tasks: list[Any], path: Path) -> FileStreamSinkTask:
    task = FileStreamSinkTask()
    task.start({"file": str(path), "topics": "connect-test"})
    tasks.append(task)
    return task


TP = TopicPartition("connect-test", 0)


def test_sink_writes_one_line_per_record(tmp_path: Path, tasks: list[Any]) -> None:
    path = tmp_path / "out.txt"
    task = make_sink(tasks, path)
    task.put([record("text"), record(b"bytes"), record(None), record(42), record("")])
    task.flush({TP: 5})
    assert path.read_text(encoding="utf-8") == "text\nbytes\nnull\n42\n\n"


def _struct() -> Struct:
    schema = (
        SchemaBuilder.struct()
        .name("order")
        .field("id", Schema.INT32_SCHEMA)
        .field("price", Decimal.schema(2))
        .field("at", Timestamp.SCHEMA)
        .field("day", Date.SCHEMA)
        .field("blob", Schema.OPTIONAL_BYTES_SCHEMA)
        .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).build())
        .build()
    )
    return (
        Struct(schema)
        .put("id", 7)
        .put("price", decimal.Decimal("1.25"))
        .put("at", dt.datetime(2024, 5, 1, 12, 30, 0, 250000, tzinfo=dt.UTC))
        .put("day", dt.date(2024, 5, 1))
        .put("blob", b"\x00\xff")
        .put("tags", ["a", "b"])
    )


VALUE_LINES = [
    ("text", "text"),
    ("", ""),
    (None, "null"),
    (True, "true"),
    (False, "false"),
    (42, "42"),
    (-1.5, "-1.5"),
    (decimal.Decimal("1.25"), "1.25"),
    (decimal.Decimal("1E+3"), "1000"),
    (decimal.Decimal("-0.000001"), "-0.000001"),
    (dt.datetime(2024, 5, 1, 12, 30, 0, 250000, tzinfo=dt.UTC), "2024-05-01T12:30:00.250000+00:00"),
    (dt.date(2024, 5, 1), "2024-05-01"),
    (dt.time(12, 30, 5), "12:30:05"),
    (b"bytes", "bytes"),
    (b"\xffbad", "\ufffdbad"),
    ({"b": 1, "a": [1, 2]}, '{"b":1,"a":[1,2]}'),
    ({1: "x"}, '{"1":"x"}'),
    ([decimal.Decimal("0.10"), b"\x01"], '[0.10,"AQ=="]'),
    (
        _struct(),
        '{"id":7,"price":1.25,"at":"2024-05-01T12:30:00.250000+00:00","day":"2024-05-01",'
        '"blob":"AP8=","tags":["a","b"]}',
    ),
    ({"nested": _struct()}, '{"nested":{"id":7,"price":1.25,'),
]


@pytest.mark.parametrize(("value", "line"), VALUE_LINES, ids=[repr(v[1]) for v in VALUE_LINES])
def test_sink_writes_values_as_a_person_reads_them(
    tmp_path: Path, tasks: list[Any], value: Any, line: str
) -> None:
    path = tmp_path / "out.txt"
    task = make_sink(tasks, path)
    task.put([record(value)])
    task.flush({TP: 1})
    written = path.read_text(encoding="utf-8")
    assert written.startswith(line) and written.endswith("\n")
    if not line.endswith(","):
        assert written == line + "\n"
    assert "Decimal(" not in written and "datetime" not in written


def test_sink_writes_a_mixed_batch_and_a_columns_batch(tmp_path: Path, tasks: list[Any]) -> None:
    path = tmp_path / "out.txt"
    task = make_sink(tasks, path)
    values = [value for value, _ in VALUE_LINES if not isinstance(value, dict)]
    task.put([record(v, i) for i, v in enumerate(values)])
    task.put(
        SinkRecordBatch.from_columns(
            3, topics=["t"] * 3, partitions=[0] * 3, offsets=[7, 8, 9], values=["x", b"y", None]
        )
    )
    task.flush({TP: 10})
    expected = [line for value, line in VALUE_LINES if not isinstance(value, dict)]
    assert path.read_text(encoding="utf-8").split("\n") == [*expected, "x", "y", "null", ""]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=8), min_size=1, max_size=8))
def test_sink_bytes_batch_is_each_value_decoded(values: list[bytes]) -> None:
    assert lines(tuple(values)) == "\n".join(v.decode("utf-8", errors="replace") for v in values)


def test_sink_multiple_puts_append_in_order(tmp_path: Path, tasks: list[Any]) -> None:
    path = tmp_path / "out.txt"
    task = make_sink(tasks, path)
    task.put([record("a"), record("b")])
    task.put([])
    task.put([record("c")])
    task.flush({TP: 3})
    assert path.read_text(encoding="utf-8").splitlines() == ["a", "b", "c"]


def test_sink_appends_to_existing_file(tmp_path: Path, tasks: list[Any]) -> None:
    path = tmp_path / "out.txt"
    path.write_text("existing\n", encoding="utf-8")
    task = make_sink(tasks, path)
    task.put([record("new")])
    task.flush({})
    assert path.read_text(encoding="utf-8") == "existing\nnew\n"


def test_sink_flush_is_visible_to_another_handle(tmp_path: Path, tasks: list[Any]) -> None:
    path = tmp_path / "out.txt"
    task = make_sink(tasks, path)
    task.put([record("é"), record(bytearray(b"raw"))])
    task.flush({TP: 2})
    with open(path, "rb") as other:
        assert other.read() == "é\nraw\n".encode()
    assert task.pre_commit({TP: 2}) == {TP: 2}


def test_sink_stop_is_idempotent_and_flushes(tmp_path: Path, tasks: list[Any]) -> None:
    path = tmp_path / "out.txt"
    task = make_sink(tasks, path)
    task.put([record("last")])
    task.stop()
    task.stop()
    assert path.read_text(encoding="utf-8") == "last\n"
    task.flush({})  # a flush after stop is harmless


def test_sink_to_stdout_when_no_file(tasks: list[Any], capsys: pytest.CaptureFixture[str]) -> None:
    task = FileStreamSinkTask()
    task.start({"topics": "t"})
    tasks.append(task)
    task.put([record("to stdout"), record(None)])
    task.flush({})
    task.stop()
    assert capsys.readouterr().out == "to stdout\nnull\n"


def test_sink_unwritable_file_is_connect_error(tmp_path: Path) -> None:
    task = FileStreamSinkTask()
    with pytest.raises(ConnectError, match="Couldn't find or create file"):
        task.start({"file": str(tmp_path / "no" / "such" / "dir" / "out.txt")})


@pytest.mark.parametrize("max_tasks", [1, 3, 5])
def test_sink_connector_gives_one_config_per_task(max_tasks: int) -> None:
    c = FileStreamSinkConnector()
    config = {"name": "k", "file": "out.txt", "topics": "t", "tasks.max": str(max_tasks)}
    c.start(config)
    configs = c.task_configs(max_tasks)
    assert configs == [config] * max_tasks
    assert len({id(cfg) for cfg in configs}) == max_tasks  # independent copies
    assert c.task_class() is FileStreamSinkTask
    assert c.version() == "0.1.0"
    assert set(c.config_def().keys) == {"file"}
    c.stop()
    c.stop()


def test_sink_connector_alter_offsets_returns_true() -> None:
    c = FileStreamSinkConnector()
    assert c.alter_offsets({"file": "f", "topics": "t"}, {TP: 5, TopicPartition("t", 1): None})
