"""Standby workers (issue 33): three `connectrt worker`s with one group.id form one cluster.

Real processes over real HTTP on Apache Kafka (``CONNECTRT_TEST_BROKER=kafka``; skipped on the
embedded broker). One cluster of three workers serves the whole module, with two pipelines whose
input the test keeps appending to: FileStream source -> topic -> FileStream sink, and JDBC
source (SQLite table, incrementing mode) -> topic -> JDBC sink (another SQLite database, plain
inserts without a key, so that a redelivered record shows as a second row):

* a write sent to a standby is forwarded to the leader and works; ``GET /leader`` names the
  leader on every worker; the worker's ``/health`` is 200 on standbys too; a standby answers
  connector reads from its copy of the topics, also while the leader is frozen;
* ``kill -9`` of the leader's process group, several times: a write sent to a standby right
  after the kill answers 409 (the leader it knows is gone); a standby runs every connector
  within 30 s of the kill (time from kill to all RUNNING printed, p50/max), and at the end the
  sink's file and the sink's table hold every input line and row (0 lost); the sources run
  with exactly-once support, and a read_committed consumer of their topics sees every record
  exactly once across all the hand-overs; the sinks are at-least-once: every duplicate lies
  between the sink group's committed offset right after a kill and the topic's end at that
  kill (what the killed leader may have written but not committed), counted per kill;
* SIGSTOP of the leader for longer than its session: the successor takes over; with the
  successor's source paused, the old leader on SIGCONT writes nothing to the config, status or
  data topic, and comes back (same pid, process image restarted) as a standby.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from connectrt.broker import EmbeddedBroker
from connectrt.ports import free_port
from connectrt.testing.broker_choice import SessionBroker
from connectrt.testing.harness import create_topic

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SESSION_MS = 12000
MARGIN_MS = 4000  # a leader unconfirmed for 8 s ends its tasks (the machine may be busy)
TAKEOVER_BOUND_S = 30.0
WAIT_S = 120.0
CONNECTORS = {"src", "sink", "jdbc-src", "jdbc-sink"}
JSON = "org.apache.kafka.connect.json.JsonConverter"


def _wait(predicate: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.1)


@dataclass
class Worker:
    url: str
    props: Path
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "connectrt.cli",
                    "--log-level",
                    "INFO",
                    "worker",
                    str(self.props),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, killed as a whole
            )

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def leader(self) -> dict[str, object]:
        return httpx.get(f"{self.url}/leader", timeout=5).json()

    def signal_group(self, sig: int) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, sig)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


@contextmanager
def running(workers: list[Worker]) -> Iterator[None]:
    """Start ``workers``; on exit stop them and print the tail of each one's log."""
    for w in workers:
        w.start()
    try:
        yield
    finally:
        for w in workers:
            w.stop()
        for w in workers:
            print(f"--- {w.log.name} (tail)\n{w.log.read_text()[-3000:]}")


@dataclass
class Cluster:
    workers: list[Worker]
    run: str
    bootstrap: str
    source: Path
    sink: Path
    topic: str
    db_in: Path
    db_out: Path
    jdbc_topic: str
    lines: int = 0
    rows: int = 0
    takeovers: list[float] = field(default_factory=list)

    def live(self) -> list[Worker]:
        return [w for w in self.workers if w.alive]

    def leader(self) -> Worker:
        """The worker whose /leader says it leads (waits for one)."""
        found: list[Worker] = []

        def one() -> bool:
            found[:] = [w for w in self.live() if _role(w) == "leader"]
            return len(found) == 1

        _wait(one, "exactly one leader")
        leader = found[0]
        # The leader answers connector requests once its herder has read the topics.
        _wait(lambda: httpx.get(f"{leader.url}/health", timeout=5).status_code == 200, "ready")
        return leader

    def append(self, count: int) -> None:
        with self.source.open("a") as f:
            f.write("".join(f"line-{i:07d}\n" for i in range(self.lines, self.lines + count)))
        self.lines += count

    def insert(self, count: int) -> None:
        """Insert ``count`` rows into the JDBC source's table (ids 1, 2, ... in order)."""
        with sqlite3.connect(self.db_in, timeout=30) as db:
            db.executemany(
                "INSERT INTO rows_in (v) VALUES (?)",
                [(f"row-{i:07d}",) for i in range(self.rows, self.rows + count)],
            )
        self.rows += count


def _sqlite(path: Path, ddl: str = "") -> None:
    """Create the database ``path`` in WAL mode (readers and the writer do not block each
    other across the worker processes), with ``ddl`` run once."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA journal_mode=WAL")
        if ddl:
            db.execute(ddl)


def _has_a_role(worker: Worker) -> bool:
    return _role(worker) in ("leader", "standby")


def _role(worker: Worker) -> str | None:
    try:
        return str(worker.leader()["role"])
    except httpx.HTTPError:
        return None


def _all_running(url: str, names: set[str]) -> bool:
    body = httpx.get(f"{url}/connectors?expand=status", timeout=10).json()
    if set(body) != names:
        return False
    for entry in body.values():
        status = entry["status"]
        tasks = status["tasks"]
        if status["connector"]["state"] != "RUNNING" or not tasks:
            return False
        if any(t["state"] != "RUNNING" for t in tasks):
            return False
    return True


def _props(tmp: Path, bootstrap: str, run: str, port: int) -> Path:
    path = tmp / f"worker-{port}.properties"
    path.write_text(
        f"bootstrap.servers={bootstrap}\n"
        "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
        "value.converter=org.apache.kafka.connect.storage.StringConverter\n"
        f"group.id=ha-{run}\n"
        f"config.storage.topic=ha-configs-{run}\n"
        f"status.storage.topic=ha-status-{run}\n"
        f"offset.storage.topic=ha-offsets-{run}\n"
        "offset.flush.interval.ms=500\n"
        "consumer.session.timeout.ms=6000\n"
        "consumer.heartbeat.interval.ms=500\n"
        "task.shutdown.graceful.timeout.ms=2000\n"
        "exactly.once.source.support=enabled\n"
        "standby.enable=true\n"
        f"standby.leadership.topic=ha-leadership-{run}\n"
        f"standby.session.timeout.ms={SESSION_MS}\n"
        f"standby.fence.margin.ms={MARGIN_MS}\n"
        f"listeners=http://127.0.0.1:{port}\n"
        f"file.connectors.allowed.dirs={tempfile.gettempdir()}\n"
    )
    return path


@pytest.fixture(scope="module")
def cluster(broker: SessionBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if isinstance(broker, EmbeddedBroker):
        pytest.skip("standby workers need Apache Kafka: run with CONNECTRT_TEST_BROKER=kafka")
    tmp = tmp_path_factory.mktemp("standby")
    run = uuid.uuid4().hex[:8]
    bootstrap = broker.bootstrap_servers
    topic = f"ha-data-{run}"
    jdbc_topic = f"ha-jdbc-{run}-rows_in"
    create_topic(bootstrap, topic, partitions=1)
    create_topic(bootstrap, jdbc_topic, partitions=1)
    workers = []
    for n in range(3):
        port = free_port()
        workers.append(
            Worker(f"http://127.0.0.1:{port}", _props(tmp, bootstrap, run, port), tmp / f"w{n}.log")
        )
    source, sink = tmp / "in.txt", tmp / "out.txt"
    source.write_text("")
    db_in, db_out = tmp / "in.db", tmp / "out.db"
    _sqlite(db_in, "CREATE TABLE rows_in (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
    _sqlite(db_out)
    with running(workers):
        yield Cluster(workers, run, bootstrap, source, sink, topic, db_in, db_out, jdbc_topic)


def test_a_write_to_a_standby_is_forwarded_to_the_leader(cluster: Cluster) -> None:
    leader = cluster.leader()
    standbys = [w for w in cluster.workers if w is not leader]
    _wait(lambda: all(w.leader()["leader_url"] == leader.url for w in standbys), "standbys know")
    assert leader.leader() == {
        "role": "leader",
        "worker_url": leader.url,
        "leader_url": leader.url,
        "leadership_group": f"ha-{cluster.run}-leadership",
    }
    for w in standbys:
        assert httpx.get(f"{w.url}/health", timeout=10).status_code == 200
    via = standbys[0]
    created = _retrying(
        "POST",
        f"{via.url}/connectors",
        json={
            "name": "src",
            "config": {
                "connector.class": "FileStreamSource",
                "file": str(cluster.source),
                "topic": cluster.topic,
                "batch.size": "200",
            },
        },
        timeout=60,
    )
    assert created.status_code == 201, created.text
    assert created.json()["name"] == "src"
    created = _retrying(
        "POST",
        f"{standbys[1].url}/connectors",
        json={
            "name": "sink",
            "config": {
                "connector.class": "FileStreamSink",
                "file": str(cluster.sink),
                "topics": cluster.topic,
            },
        },
        timeout=60,
    )
    assert created.status_code == 201, created.text
    for name, config in _jdbc_configs(cluster).items():
        created = _retrying("POST", f"{via.url}/connectors", json=config, timeout=60)
        assert created.status_code == 201, (name, created.text)
    # Reads through a standby answer what the leader runs.
    _wait(lambda: _all_running(via.url, CONNECTORS), "every connector RUNNING")
    assert sorted(httpx.get(f"{via.url}/connectors", timeout=10).json()) == sorted(CONNECTORS)
    # A request already forwarded once reaching a standby is refused with 409, not forwarded
    # (offsets are the leader's to answer; the list above the standby answered itself).
    again = httpx.get(
        f"{via.url}/connectors/src/offsets", headers={"X-Connectrt-Forwarded": "1"}, timeout=10
    )
    assert again.status_code == 409
    assert "rebalance" in again.json()["message"]
    cluster.append(2000)
    cluster.insert(400)
    _wait(lambda: _lines(cluster.sink) >= 2000, "the first lines in the sink")
    _wait(lambda: len(_sink_rows(cluster)) >= 400, "the first rows in the sink's table")


def _jdbc_configs(cluster: Cluster) -> dict[str, dict[str, Any]]:
    """The JDBC pipeline: rows_in (in.db) -> the JDBC topic -> rows_out (out.db), each row
    with its record's topic offset (``koffset``) and no key (a redelivery is a second row)."""
    json_values = {"value.converter": JSON, "value.converter.schemas.enable": "true"}
    return {
        "jdbc-src": {
            "name": "jdbc-src",
            "config": {
                "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
                "connection.url": f"jdbc:sqlite:{cluster.db_in}",
                "mode": "incrementing",
                "incrementing.column.name": "id",
                "table.whitelist": "rows_in",
                "topic.prefix": f"ha-jdbc-{cluster.run}-",
                "poll.interval.ms": "100",
                **json_values,
            },
        },
        "jdbc-sink": {
            "name": "jdbc-sink",
            "config": {
                "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
                "connection.url": f"jdbc:sqlite:{cluster.db_out}",
                "topics": cluster.jdbc_topic,
                "table.name.format": "rows_out",
                "auto.create": "true",
                "insert.mode": "insert",
                "pk.mode": "none",
                "transforms": "coords",
                "transforms.coords.type": "org.apache.kafka.connect.transforms.InsertField$Value",
                "transforms.coords.offset.field": "koffset",
                **json_values,
            },
        },
    }


def _sink_rows(cluster: Cluster) -> list[tuple[int, int]]:
    """``(id, koffset)`` of every row of the JDBC sink's table (empty before it exists)."""
    try:
        with sqlite3.connect(cluster.db_out, timeout=30) as db:
            return list(db.execute("SELECT id, koffset FROM rows_out"))
    except sqlite3.OperationalError:  # no such table yet
        return []


def _retrying(method: str, url: str, **kwargs: Any) -> httpx.Response:
    """One request, retried while it answers 409 or 503 (a hand-over, a leader starting), as a
    client of Kafka Connect retries during a rebalance."""
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            answer = httpx.request(method, url, **kwargs)
        except httpx.TransportError:  # the worker asked restarted (it stopped leading)
            assert time.monotonic() < deadline, f"{method} {url} never answered"
            time.sleep(0.5)
            continue
        if answer.status_code not in (409, 503) or time.monotonic() > deadline:
            return answer
        time.sleep(0.5)


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


class _Appender:
    """Appends 50 lines and inserts 10 rows every 20 ms while running (the pipelines are
    mid-stream at a kill)."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _Appender:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self._cluster.append(50)
            self._cluster.insert(10)


@dataclass
class Kill:
    """What one kill left behind, read right after the killed leader's process group died:
    each sink group's committed offset and each data topic's end (partition 0 of each)."""

    committed: dict[str, int]
    ends: dict[str, int]

    def window(self, sink: str, topic: str) -> range:
        """Offsets the killed leader's sink may have written without committing them: the only
        ones an at-least-once sink may write again after the hand-over."""
        return range(self.committed[sink], self.ends[topic])


def _committed(bootstrap: str, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        (tp,) = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        return max(tp.offset, 0)
    finally:
        consumer.close()


def _after_kill(cluster: Cluster) -> Kill:
    topics = {"sink": cluster.topic, "jdbc-sink": cluster.jdbc_topic}
    ends = _end_offsets(cluster.bootstrap, list(topics.values()))
    return Kill(
        {sink: _committed(cluster.bootstrap, f"connect-{sink}", t) for sink, t in topics.items()},
        {t: ends[(t, 0)] for t in topics.values()},
    )


def _read_with_offsets(bootstrap: str, topic: str) -> list[tuple[int, bytes]]:
    """``(offset, value)`` of every committed record of partition 0 of ``topic``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{uuid.uuid4().hex[:8]}",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        out: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            for m in consumer.consume(10000, 0.5):
                err = m.error()
                if err is None:
                    out.append((m.offset() or 0, m.value() or b""))
                elif err.code() == KafkaError._PARTITION_EOF:
                    return out
        raise AssertionError(f"reading {topic}: no end of partition within {WAIT_S} s")
    finally:
        consumer.close()


def _per_kill(copies: dict[int, int], kills: list[Kill], sink: str, topic: str) -> list[int]:
    """The extra copies of each offset (``copies``: offset -> rows/lines written), attributed to
    the kills whose window holds that offset; fails on a duplicate no kill's window explains."""
    counts = [0] * len(kills)
    for offset, n in sorted(copies.items()):
        owners = [k for k, kill in enumerate(kills) if offset in kill.window(sink, topic)]
        assert n - 1 <= len(owners), (
            f"{sink}: offset {offset} written {n} times, outside what the kills left "
            f"uncommitted ({[kill.window(sink, topic) for kill in kills]})"
        )
        for k in owners[: n - 1]:
            counts[k] += 1
    return counts


def test_kill_9_of_the_leader_hands_over_within_30_s_and_loses_no_line(cluster: Cluster) -> None:
    kill_count = 5
    refused: list[int] = []
    kills: list[Kill] = []
    with _Appender(cluster):
        for _ in range(kill_count):
            leader = cluster.leader()
            survivors = [w for w in cluster.live() if w is not leader]
            time.sleep(1.0)  # mid-stream: lines and rows keep arriving
            killed_at = time.monotonic()
            leader.signal_group(signal.SIGKILL)
            assert leader.proc is not None
            leader.proc.wait(30)
            if not refused:
                # Until the coordinator expires the dead leader's session, the standbys know
                # only its URL: a write cannot be forwarded and answers 409 (clients retry).
                answer = httpx.put(f"{survivors[0].url}/connectors/src/resume", timeout=WAIT_S)
                refused.append(answer.status_code)
                assert answer.status_code == 409, answer.text
                assert "rebalance" in answer.json()["message"]
            kills.append(_after_kill(cluster))

            def taken_over(survivors: list[Worker] = survivors) -> bool:
                leads = [w for w in survivors if _role(w) == "leader"]
                return len(leads) == 1 and _all_running(leads[0].url, CONNECTORS)

            _wait(taken_over, "a standby running every connector", TAKEOVER_BOUND_S + 30)
            elapsed = time.monotonic() - killed_at
            cluster.takeovers.append(elapsed)
            leader.start()  # comes back as a standby (not waited for: two workers remain)
    for worker in cluster.workers:
        _wait(partial(_has_a_role, worker), "every restarted worker back in the cluster")
    total, rows = cluster.lines, cluster.rows
    _wait(lambda: _lines(cluster.sink) >= total and _complete(cluster), "every line in the sink")
    _wait(lambda: _rows_complete(cluster), "every row in the sink's table")
    takeovers = cluster.takeovers
    print(
        f"HA kill -9 x{kill_count}: kill -> all {len(CONNECTORS)} connectors RUNNING "
        f"p50={statistics.median(takeovers):.1f} s max={max(takeovers):.1f} s "
        f"({', '.join(f'{t:.1f}' for t in takeovers)}); load average {os.getloadavg()[0]:.1f}"
    )
    # FileStream: the topic (exactly-once source, read_committed) and the sink's file.
    expected = {f"line-{i:07d}" for i in range(total)}
    in_topic = _read_with_offsets(cluster.bootstrap, cluster.topic)
    offset_of = {value.decode(): offset for offset, value in in_topic}
    topic_lost = expected - set(offset_of)
    topic_duplicates = len(in_topic) - len(offset_of)
    written = cluster.sink.read_text().splitlines()
    lost = expected - set(written)
    line_copies: dict[int, int] = {}
    for line in written:
        line_copies[offset_of[line]] = line_copies.get(offset_of[line], 0) + 1
    file_dups = _per_kill(line_copies, kills, "sink", cluster.topic)
    print(
        f"  FileStream: {total} lines; topic lost={len(topic_lost)} "
        f"duplicates={topic_duplicates}; sink file lost={len(lost)}, duplicates per kill "
        f"{file_dups} (total {sum(file_dups)})"
    )
    # JDBC: the topic and the sink's table.
    expected_ids = set(range(1, rows + 1))
    jdbc_topic = _read_with_offsets(cluster.bootstrap, cluster.jdbc_topic)
    id_offset = {json.loads(value)["payload"]["id"]: offset for offset, value in jdbc_topic}
    jdbc_topic_lost = expected_ids - set(id_offset)
    jdbc_topic_duplicates = len(jdbc_topic) - len(id_offset)
    table = _sink_rows(cluster)
    rows_lost = expected_ids - {row_id for row_id, _ in table}
    assert all(id_offset[row_id] == offset for row_id, offset in table), "koffset mismatch"
    row_copies: dict[int, int] = {}
    for _row_id, offset in table:
        row_copies[offset] = row_copies.get(offset, 0) + 1
    table_dups = _per_kill(row_copies, kills, "jdbc-sink", cluster.jdbc_topic)
    print(
        f"  JDBC: {rows} rows; topic lost={len(jdbc_topic_lost)} "
        f"duplicates={jdbc_topic_duplicates}; sink table lost={len(rows_lost)}, duplicates "
        f"per kill {table_dups} (total {sum(table_dups)})"
    )
    assert not lost, f"{len(lost)} lines lost, e.g. {sorted(lost)[:5]}"
    assert not rows_lost, f"{len(rows_lost)} rows lost, e.g. {sorted(rows_lost)[:5]}"
    assert not topic_lost and topic_duplicates == 0, (len(topic_lost), topic_duplicates)
    assert not jdbc_topic_lost and jdbc_topic_duplicates == 0, (
        len(jdbc_topic_lost),
        jdbc_topic_duplicates,
    )
    assert max(takeovers) < TAKEOVER_BOUND_S, takeovers


def _rows_complete(cluster: Cluster) -> bool:
    return {row_id for row_id, _ in _sink_rows(cluster)} >= set(range(1, cluster.rows + 1))


def _complete(cluster: Cluster) -> bool:
    written = set(cluster.sink.read_text().splitlines())
    return all(f"line-{i:07d}" in written for i in range(cluster.lines))


def _task_state(worker: Worker | None, name: str) -> str | None:
    if worker is None:
        return None
    tasks = httpx.get(f"{worker.url}/connectors/{name}/status", timeout=10).json()["tasks"]
    return str(tasks[0]["state"]) if tasks else None


def _end_offsets(bootstrap: str, topics: list[str]) -> dict[tuple[str, int], int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"probe-{uuid.uuid4().hex}"})
    try:
        ends: dict[tuple[str, int], int] = {}
        for topic in topics:
            partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
            for p in partitions:
                ends[(topic, p)] = consumer.get_watermark_offsets(
                    TopicPartition(topic, p), timeout=10, cached=False
                )[1]
        return ends
    finally:
        consumer.close()


def _written_since(
    bootstrap: str, since: dict[tuple[str, int], int], until: dict[tuple[str, int], int]
) -> list[tuple[str, int, bytes | None]]:
    """``(topic, offset, value)`` of every record appended in ``[since, until)`` of each
    partition, aborted ones included (read_uncommitted: whatever reached the log)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"probe-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_uncommitted",
        }
    )
    wanted = {tp: end for tp, end in until.items() if end > since.get(tp, 0)}
    out: list[tuple[str, int, bytes | None]] = []
    try:
        if not wanted:
            return out
        consumer.assign([TopicPartition(t, p, since.get((t, p), 0)) for t, p in wanted])
        deadline = time.monotonic() + WAIT_S
        done: set[tuple[str, int]] = set()
        while len(done) < len(wanted):
            assert time.monotonic() < deadline, f"reading {wanted}: only {done} complete"
            for m in consumer.consume(1000, 0.5):
                tp, err = (m.topic() or "", m.partition() or 0), m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        done.add(tp)  # (a transaction's last offset is its marker: no record)
                    continue
                if (m.offset() or 0) < wanted[tp]:
                    out.append((tp[0], m.offset() or 0, m.value()))
        return out
    finally:
        consumer.close()


def _writer(value: bytes | None) -> str | None:
    """The ``worker_id`` a status record names (None: a tombstone, or not a status)."""
    try:
        decoded = json.loads(value or b"null")
    except ValueError:
        return None
    return decoded.get("worker_id") if isinstance(decoded, dict) else None


def test_a_paused_leader_is_fenced_writes_nothing_and_rejoins_as_standby(cluster: Cluster) -> None:
    leader = cluster.leader()
    assert leader.proc is not None
    pid = leader.proc.pid
    worker_id = leader.url.split("//")[1]
    survivors = [w for w in cluster.live() if w is not leader]
    cluster.append(500)
    _wait(lambda: _complete(cluster), "the sink caught up before the pause")
    topics = [
        cluster.topic,
        cluster.jdbc_topic,
        *(f"ha-{kind}-{cluster.run}" for kind in ("configs", "status", "offsets")),
    ]
    at_pause = _end_offsets(cluster.bootstrap, topics)
    log_at_pause = len(leader.log.read_text())
    leader.signal_group(signal.SIGSTOP)
    try:
        # A standby answers reads from its copy of the topics: the frozen leader, to which a
        # forwarded request would hang, is not asked.
        read = httpx.get(f"{survivors[0].url}/connectors/src/config", timeout=10)
        assert read.status_code == 200 and read.json()["file"] == str(cluster.source)
        listed = httpx.get(f"{survivors[1].url}/connectors?expand=status", timeout=10).json()
        assert listed["src"]["status"]["connector"]["worker_id"] == worker_id
        cluster.append(500)  # lines the paused leader's source task has not read yet

        def successor() -> Worker | None:
            leads = [w for w in survivors if _role(w) == "leader"]
            return leads[0] if len(leads) == 1 else None

        _wait(
            lambda: (s := successor()) is not None and _all_running(s.url, CONNECTORS),
            "the successor running every connector",
        )
        new = successor()
        assert new is not None
        _wait(lambda: _complete(cluster), "the successor delivering the lines")
        # Stop the source: from now on nothing of this cluster writes data.
        via = survivors[0]
        assert _retrying("PUT", f"{via.url}/connectors/src/pause", timeout=60).status_code == 202
        _wait(lambda: _task_state(successor(), "src") == "PAUSED", "the successor's source PAUSED")
        cluster.append(500)  # only the paused old leader's task could read and send these
        time.sleep(2.0)  # status and offset writes of the pause settle
        leading = successor()
        before = _end_offsets(cluster.bootstrap, topics)
    finally:
        leader.signal_group(signal.SIGCONT)
    _wait(lambda: _role(leader) == "standby", "the old leader back as a standby")
    assert leader.proc.pid == pid and leader.alive  # the same process, image restarted
    time.sleep(3.0)  # anything it would still send would have arrived by now
    after = _end_offsets(cluster.bootstrap, topics)
    # Status records name their writer: none of the old leader's since it was paused (the
    # successor's own are there: it took over and paused the source).
    statuses = _written_since(
        cluster.bootstrap,
        {tp: o for tp, o in at_pause.items() if tp[0].startswith("ha-status-")},
        {tp: o for tp, o in after.items() if tp[0].startswith("ha-status-")},
    )
    own = [(offset, value) for _topic, offset, value in statuses if _writer(value) == worker_id]
    fenced = leader.log.read_text()[log_at_pause:].count("were fenced")
    print(
        f"HA paused leader: {len(statuses)} status records since the pause, {len(own)} of the "
        f"old leader; end offsets before/after SIGCONT equal: {after == before}; "
        f"writes refused as fenced in the old leader's log since SIGCONT: {fenced}"
    )
    assert not own, f"the old leader wrote statuses after its pause: {own}"
    if successor() is not leading:
        pytest.fail("the leadership moved among the survivors meanwhile: nothing to compare")
    assert after == before, f"the old leader wrote after SIGCONT: {before} -> {after}"
    assert "stops leading" in leader.log.read_text()
    assert _retrying("PUT", f"{via.url}/connectors/src/resume", timeout=60).status_code == 202
    _wait(lambda: _complete(cluster), "every line delivered after the resume")
