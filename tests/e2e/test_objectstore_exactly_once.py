"""kill -9 of a standalone worker running the object storage sink: 0 lost, 0 duplicated.

A 4-partition topic is drained by ``S3SinkConnector`` (Parquet, flush.size records per object)
into moto's S3 server (a separate process) or a local directory. The worker, a real OS process
(``connectrt standalone``), is killed with SIGKILL at random points and restarted each time.
Right after each kill the objects already hold no record twice (a file set is visible only
whole, and a restarted task resumes after the last complete set, rewriting a partial one under
the same names); at the end every record is in the objects exactly once, counted by reading
every object back.

The size is set by environment variables so that ``make test`` stays short on 2 cores:
``OBJSTORE_EOS_RECORDS`` (default 20000), ``OBJSTORE_EOS_KILLS`` (kills per run, default 2),
``OBJSTORE_EOS_RUNS`` (runs per backend, default 1). The issue's figure is 200000 x 5.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.testing.harness import create_topic
from tests.e2e.standalone import start_standalone
from tests.objectstore_support import MotoServer, count_records, moto_s3, produce

pytestmark = [pytest.mark.integration, pytest.mark.slow]

__all__ = ["moto_s3"]

RECORDS = int(os.environ.get("OBJSTORE_EOS_RECORDS", "20000"))
KILLS = int(os.environ.get("OBJSTORE_EOS_KILLS", "2"))
RUNS = int(os.environ.get("OBJSTORE_EOS_RUNS", "1"))
PARTITIONS = 4
FLUSH_SIZE = max(RECORDS // 80, 10)


def _wait(
    predicate: Callable[[], bool], timeout: float, what: str, proc: subprocess.Popen[bytes]
) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc.poll() is not None:
            raise AssertionError(f"worker exited with {proc.returncode} while waiting for {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _run(
    broker: EmbeddedBroker,
    tmp: Path,
    topic: str,
    store: dict[str, str],
    fs: pafs.FileSystem,
    base: str,
    fractions: list[float],
) -> list[int]:
    """Produce, drain with kills at ``fractions`` of the records; the records found at each
    kill (each asserted to hold no duplicate)."""
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    produce(bootstrap, topic, RECORDS, PARTITIONS)
    (tmp / "worker.properties").write_text(
        f"bootstrap.servers={bootstrap}\n"
        "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
        "value.converter=org.apache.kafka.connect.json.JsonConverter\n"
        f"offset.storage.topic=offsets-{topic}\n"
        "offset.storage.partitions=1\n"
        "offset.flush.interval.ms=1500\n"
        "consumer.session.timeout.ms=6000\n"
        "consumer.heartbeat.interval.ms=500\n"
        "listeners=http://127.0.0.1:0\n"
    )
    (tmp / "sink.properties").write_text(
        f"name=sink-{topic}\n"
        "connector.class=io.confluent.connect.s3.S3SinkConnector\n"
        f"topics={topic}\n"
        "tasks.max=2\n"
        f"flush.size={FLUSH_SIZE}\n"
        "format.class=io.confluent.connect.s3.format.parquet.ParquetFormat\n"
        + "".join(f"{k}={v}\n" for k, v in store.items())
    )
    found_at_kills: list[int] = []
    worker = start_standalone(tmp, "worker-0.log")
    try:
        for i, fraction in enumerate(fractions):
            target = int(RECORDS * fraction)
            _wait(
                lambda t=target: sum(count_records(fs, base).values()) >= t,  # type: ignore[misc]
                240,
                f"{target} records in the objects (a group join included)",
                worker,
            )
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait(10)
            counts = count_records(fs, base)
            duplicated = {n: c for n, c in counts.items() if c > 1}
            assert not duplicated, f"kill {i}: records in two objects: {list(duplicated)[:10]}"
            found_at_kills.append(len(counts))
            worker = start_standalone(tmp, f"worker-{i + 1}.log")
        _wait(
            lambda: sum(count_records(fs, base).values()) >= RECORDS,
            300,
            "every record in the objects",
            worker,
        )
        worker.send_signal(signal.SIGTERM)
        worker.wait(30)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)
    counts = count_records(fs, base)
    lost = RECORDS - len(counts)
    duplicated = sum(c - 1 for c in counts.values())
    assert (lost, duplicated) == (0, 0), f"lost {lost}, duplicated {duplicated}"
    assert set(counts) == set(range(RECORDS))
    return found_at_kills


@pytest.mark.parametrize("run", range(RUNS))
@pytest.mark.parametrize("backend", ["s3", "local"])
def test_kill_9_loses_and_duplicates_nothing(
    broker: EmbeddedBroker,
    tmp_path: Path,
    unique_name: Callable[[str], str],
    request: pytest.FixtureRequest,
    backend: str,
    run: int,
) -> None:
    topic = unique_name("oseos")
    if backend == "s3":
        server: MotoServer = request.getfixturevalue("moto_s3")
        bucket = server.create_bucket(f"eos-{topic[-20:].lower().replace('_', '-')}")
        store, fs, base = server.sink_config(bucket), server.filesystem(), bucket
    else:
        root = tmp_path / "store"
        store, fs, base = {"store.url": root.as_uri()}, pafs.LocalFileSystem(), str(root)
    seed = random.randrange(1 << 30)
    rnd = random.Random(seed)
    span = 0.8 / KILLS
    fractions = sorted(rnd.uniform(0.1 + i * span, 0.1 + (i + 1) * span) for i in range(KILLS))
    found = _run(broker, tmp_path, topic, store, fs, f"{base}/topics/{topic}", fractions)
    print(
        f"objectstore kill -9 [{backend}] seed={seed} records={RECORDS} kills={KILLS} "
        f"found at kills={found}: 0 lost, 0 duplicated"
    )
