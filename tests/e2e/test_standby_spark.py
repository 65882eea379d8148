"""Standby workers with ``task.executor=spark`` (issue 33): a standby runs no Spark driver.

Real processes over real HTTP on Apache Kafka (``CONNECTRT_TEST_BROKER=kafka``; skipped on the
embedded broker), reusing the helpers of ``test_standby_workers.py``. Two ``connectrt worker``s
with ``standby.enable=true`` and ``task.executor=spark`` (each would be its own driver on a
local master, ``local[2,2]``) form one cluster:

* only the leader starts a Spark application: its process group has a Java process (the driver
  JVM), the standby's has none, also while the leader's FileStream source -> topic ->
  FileStream sink pipeline runs with its tasks on the leader's Spark executors;
* ``kill -9`` of the leader's process group: the standby, once elected, starts its Spark
  application, runs both connectors on its executors and the sink's file ends up with every
  line (0 lost; at-least-once, so duplicates are counted, not forbidden);
* a deposed leader (SIGSTOP of its process group for longer than its session, then SIGCONT)
  restarts its process image as a standby, and its driver JVM and Spark's Python workers end
  with the old image: nothing of its Spark application is left to run tasks, and the other
  worker leads on a Spark application of its own.

A module of its own (not under ``tests/spark``): it uses no session-wide SparkSession, each
worker process starts its own driver, so it is an xdist unit of its own.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from connectrt.testing.broker_choice import SessionBroker
from tests.e2e.standby_pair import Pair, filestream_configs, running_pair
from tests.e2e.test_standby_workers import Worker, _all_running, _retrying, _role, _wait

pytest.importorskip("pyspark")

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.slow]

CONNECTORS = {"src", "sink"}
SPARK_WAIT_S = 180.0  # a cold driver JVM on a busy machine
SPARK = [
    "task.executor=spark",
    "spark.master=local[2,2]",
    "spark.ui.enabled=false",
    "spark.ui.showConsoleProgress=false",
    "spark.driver.host=127.0.0.1",
    "spark.driver.bindAddress=127.0.0.1",
]


def group_processes(worker: Worker) -> dict[int, str]:
    """The live (not zombie) processes of ``worker``'s process group: pid -> executable name."""
    assert worker.proc is not None
    group = worker.proc.pid
    found: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            exe = os.path.basename(os.readlink(f"/proc/{entry}/exe"))
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == group and fields[0] != "Z":
            found[int(entry)] = exe
    return found


def java_processes(worker: Worker) -> set[int]:
    """The pids of the Java processes in ``worker``'s process group (its Spark driver JVM)."""
    return {pid for pid, exe in group_processes(worker).items() if exe == "java"}


def on_executors(worker: Worker) -> bool:
    """Whether every task of both connectors runs RUNNING on a Spark executor of ``worker``'s
    application (a worker id other than the driver's own)."""
    if not _all_running(worker.url, CONNECTORS):
        return False
    driver = worker.url.split("//")[1]
    for name in CONNECTORS:
        tasks = httpx.get(f"{worker.url}/connectors/{name}/status", timeout=10).json()["tasks"]
        if any(t["worker_id"] == driver for t in tasks):
            return False
    return True


@pytest.fixture(scope="module")
def pair(broker: SessionBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    def spark(props: str) -> str:  # a standby worker with Spark executors, at-least-once
        return props.replace("exactly.once.source.support=enabled\n", "") + "\n".join(SPARK) + "\n"

    yield from running_pair(broker, tmp_path_factory.mktemp("standby-spark"), "ha-spark", spark)


def test_only_the_leader_runs_a_spark_driver_and_a_standby_starts_one_when_it_leads(
    pair: Pair,
) -> None:
    started = time.monotonic()
    leader = pair.leader(SPARK_WAIT_S)
    standby = next(w for w in pair.workers if w is not leader)
    _wait(lambda: _role(standby) == "standby", "the other worker standing by")
    assert java_processes(leader), "the leader runs no Spark driver JVM"
    assert not java_processes(standby), "a standby started a Spark driver JVM"
    for config in filestream_configs(pair):
        # Sent to the standby: forwarded to the leader.
        created = _retrying("POST", f"{standby.url}/connectors", json=config, timeout=60)
        assert created.status_code == 201, created.text
    _wait(lambda: on_executors(leader), "both connectors RUNNING on the leader's executors")
    pair.append(2000)
    _wait(pair.complete, "the first lines in the sink")
    assert not java_processes(standby), "a standby started a Spark driver JVM"
    print(f"HA spark: leader running on Spark {time.monotonic() - started:.0f} s after start")

    stop = threading.Event()

    def keep_appending() -> None:
        while not stop.wait(0.05):
            pair.append(50)

    appender = threading.Thread(target=keep_appending, daemon=True)
    appender.start()
    try:
        time.sleep(1.0)  # mid-stream
        killed_at = time.monotonic()
        leader.signal_group(signal.SIGKILL)
        assert leader.proc is not None
        leader.proc.wait(30)
        _wait(lambda: _role(standby) == "leader", "the standby elected")
        elected = time.monotonic() - killed_at
        _wait(
            lambda: on_executors(standby),
            "both connectors RUNNING on the new leader's executors",
            SPARK_WAIT_S,
        )
        takeover = time.monotonic() - killed_at
        time.sleep(1.0)  # lines keep arriving after the hand-over
    finally:
        stop.set()
        appender.join(10)
    leader.start()  # back as a standby, for the next test
    assert java_processes(standby), "the new leader runs no Spark driver JVM"
    _wait(pair.complete, "every line in the sink")
    written = pair.sink.read_text().splitlines()
    lost = pair.lost()
    print(
        f"HA task.executor=spark: {pair.lines} lines, lost={len(lost)}, "
        f"duplicates={len(written) - len(set(written))}; kill -> elected {elected:.1f} s, "
        f"-> RUNNING on its new Spark application {takeover:.1f} s; test "
        f"{time.monotonic() - started:.0f} s; load average {os.getloadavg()[0]:.1f}"
    )
    assert not lost, f"{len(lost)} lines lost, e.g. {sorted(lost)[:5]}"


def test_a_deposed_leader_ends_its_spark_application(pair: Pair) -> None:
    started = time.monotonic()
    old = pair.leader(SPARK_WAIT_S)
    other = next(w for w in pair.workers if w is not old)
    if not other.alive:
        other.start()  # the leader the first test killed comes back as a standby
    _wait(lambda: _role(other) == "standby", "the other worker standing by", SPARK_WAIT_S)
    assert java_processes(old), "the leader runs no Spark driver JVM"
    assert old.proc is not None
    pid = old.proc.pid
    old.signal_group(signal.SIGSTOP)
    try:
        _wait(lambda: _role(other) == "leader", "the other worker elected")
    finally:
        old.signal_group(signal.SIGCONT)
    _wait(lambda: _role(old) == "standby", "the old leader back as a standby")
    assert old.proc.pid == pid and old.alive  # the same process, image restarted
    _wait(
        lambda: set(group_processes(old)) == {pid},
        "the deposed leader's driver JVM and Spark workers to end (only the worker left)",
        60,
    )
    pair.append(500)
    _wait(lambda: on_executors(other), "both connectors on the successor's executors", SPARK_WAIT_S)
    _wait(pair.complete, "every line in the sink")
    print(
        f"HA spark deposed leader: its Spark application ended, successor running "
        f"{time.monotonic() - started:.0f} s after the pause; load average "
        f"{os.getloadavg()[0]:.1f}"
    )
