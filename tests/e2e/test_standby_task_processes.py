"""Standby workers with ``task.executor=processes`` (issue 33): the hand-over kills no line.

Real processes over real HTTP on Apache Kafka (``CONNECTRT_TEST_BROKER=kafka``; skipped on the
embedded broker), reusing the helpers of ``test_standby_workers.py``. Two ``connectrt worker``s
with ``standby.enable=true`` and ``task.executor=processes`` form one cluster; the leader runs a
FileStream source -> topic -> FileStream sink pipeline, each task in its own OS process, while
the test keeps appending lines. ``kill -9`` of the leader's **worker process alone** (not its
process group, so that nothing but the task processes' own lifeline can end them): every task
process of the dead leader exits within a bound (``PR_SET_PDEATHSIG`` and the channel's EOF,
:mod:`connectrt.runtime.executors.process.lifeline`), i.e. no orphan keeps reading or writing;
the standby takes over, runs both connectors in task processes of its own, and the sink's file
ends up with every line (0 lost).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from connectrt.testing.broker_choice import SessionBroker
from tests.e2e.standby_pair import Pair, filestream_configs, running_pair
from tests.e2e.test_standby_workers import (
    TAKEOVER_BOUND_S,
    _all_running,
    _retrying,
    _role,
    _wait,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CONNECTORS = {"src", "sink"}
CHILD_MODULE = "connectrt.runtime.executors.process.child_main"


def task_processes(pid: int) -> set[int]:
    """The pids of the live task processes whose parent is ``pid`` (from /proc)."""
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        state, ppid = fields[0], int(fields[1])
        if ppid == pid and state != "Z" and CHILD_MODULE.encode() in cmdline:
            found.add(int(entry))
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie (an orphan's reaper may be slow)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.fixture(scope="module")
def pair(broker: SessionBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    yield from running_pair(
        broker,
        tmp_path_factory.mktemp("standby-processes"),
        "ha-proc",
        lambda props: props + "task.executor=processes\n",
    )


def test_kill_9_of_a_leader_with_task_processes_leaves_no_orphan_and_loses_no_line(
    pair: Pair,
) -> None:
    started = time.monotonic()
    leader = pair.leader()
    for config in filestream_configs(pair):
        created = _retrying("POST", f"{leader.url}/connectors", json=config, timeout=60)
        assert created.status_code == 201, created.text
    _wait(lambda: _all_running(leader.url, CONNECTORS), "both connectors RUNNING")
    pair.append(2000)
    _wait(pair.complete, "the first lines in the sink")
    assert leader.proc is not None
    orphans = task_processes(leader.proc.pid)
    assert len(orphans) == 2, f"one task process per task expected, found {orphans}"
    standby = next(w for w in pair.workers if w is not leader)
    assert not task_processes(standby.proc.pid if standby.proc else -1), "a standby runs tasks"

    stop = threading.Event()

    def keep_appending() -> None:
        while not stop.wait(0.02):
            pair.append(50)

    appender = threading.Thread(target=keep_appending, daemon=True)
    appender.start()
    try:
        time.sleep(1.0)  # mid-stream
        killed_at = time.monotonic()
        os.kill(leader.proc.pid, signal.SIGKILL)  # the worker alone, not its process group
        leader.proc.wait(30)
        _wait(
            lambda: not any(alive(pid) for pid in orphans),
            "the dead leader's task processes to exit by their lifeline",
            30,
        )
        orphans_gone = time.monotonic() - killed_at

        def taken_over() -> bool:
            return _role(standby) == "leader" and _all_running(standby.url, CONNECTORS)

        _wait(taken_over, "the standby running both connectors", TAKEOVER_BOUND_S + 30)
        takeover = time.monotonic() - killed_at
        time.sleep(1.0)  # lines keep arriving after the hand-over
    finally:
        stop.set()
        appender.join(10)
        try:
            os.killpg(leader.proc.pid, signal.SIGKILL)  # anything left of the group
        except ProcessLookupError:
            pass
    assert standby.proc is not None
    assert len(task_processes(standby.proc.pid)) == 2, "the new leader's tasks run in processes"
    _wait(pair.complete, "every line in the sink")
    written = pair.sink.read_text().splitlines()
    lost = pair.lost()
    print(
        f"HA task.executor=processes: {pair.lines} lines, lost={len(lost)}, "
        f"duplicates={len(written) - len(set(written))}; task processes gone "
        f"{orphans_gone:.1f} s after kill -9 of the worker alone; kill -> RUNNING "
        f"{takeover:.1f} s; test {time.monotonic() - started:.0f} s; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    assert not lost, f"{len(lost)} lines lost, e.g. {sorted(lost)[:5]}"
    assert takeover < TAKEOVER_BOUND_S, takeover
