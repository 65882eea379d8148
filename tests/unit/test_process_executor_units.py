"""The processes executor's parts, with real processes but no broker: the channel, the
lifeline (PR_SET_PDEATHSIG and the channel's end-of-file, each on its own), the memory limit,
how a death is reported, the config keys and the task status's pid field."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from connectrt.api.config import ConfigDef
from connectrt.errors import ConfigError
from connectrt.rest.models import TaskState
from connectrt.runtime.clients.settings import OverridePolicy
from connectrt.runtime.config.connector import validate_connector_config
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.executors.process.channel import Channel, ChannelClosed
from connectrt.runtime.executors.process.executor import memory_limit_mb
from connectrt.runtime.executors.process.exit_report import death_trace, describe_returncode
from connectrt.runtime.executors.process.memory_limit import caused_by_memory_error
from connectrt.runtime.herder.info import StateInfo
from connectrt.runtime.plugins.registry import PluginRegistry

ROOT = Path(__file__).resolve().parents[2]


def _wait_gone(pid: int, what: str, timeout: float = 60.0) -> None:
    """Wait until ``pid`` no longer runs (gone, or a zombie nobody reaped yet)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.1)
    raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")


# -- the channel ---------------------------------------------------------------------------------


def test_channel_carries_messages_and_reports_the_other_end_closing():
    a, b = socket.socketpair()
    left, right = Channel(a), Channel(b)
    big = b"x" * (3 * 1024 * 1024)  # larger than a socket buffer: sent and read in pieces
    message = ("offsets.set", 7, {b"k": big, b"no": None})
    sender = threading.Thread(target=left.send, args=(message,))
    sender.start()
    assert right.recv(5.0) == message
    sender.join(5)
    assert right.recv(0.05) is None  # nothing within the timeout
    left.close()
    left.close()  # idempotent
    with pytest.raises(ChannelClosed):
        right.recv(5.0)
    with pytest.raises(ChannelClosed):
        right.send(("status", "RUNNING", None))
    right.close()


# -- the lifeline: each mechanism alone ends an orphan -------------------------------------------

_GRANDPARENT = textwrap.dedent(
    """
    import os, socket, subprocess, sys, time
    ours, theirs = socket.socketpair()
    child = subprocess.Popen(
        [sys.executable, "-c", sys.argv[1], str(theirs.fileno()), str(os.getpid())],
        pass_fds=(theirs.fileno(),),
    )
    theirs.close()
    print(child.pid, flush=True)
    time.sleep(600)
    """
)

_PDEATHSIG_ONLY = textwrap.dedent(
    """
    import sys, time
    from connectrt.runtime.executors.process.lifeline import die_with_parent
    assert die_with_parent(int(sys.argv[2]))
    print("ready", flush=True)
    time.sleep(600)  # the channel is never read: only the kernel's signal can end this
    """
)

_CHANNEL_ONLY = textwrap.dedent(
    """
    import sys, time
    from connectrt.runtime.executors.process.channel import Channel
    from connectrt.runtime.executors.process.child_link import ChildLink
    link = ChildLink(Channel.from_fd(int(sys.argv[1])))  # no prctl: only end-of-file
    print("ready", flush=True)
    time.sleep(600)
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("child", [_PDEATHSIG_ONLY, _CHANNEL_ONLY], ids=["pdeathsig", "channel"])
def test_a_task_process_dies_with_its_worker(child: str):
    grandparent = subprocess.Popen(
        [sys.executable, "-c", _GRANDPARENT, child],
        stdout=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert grandparent.stdout is not None
        pid = int(grandparent.stdout.readline())
        assert grandparent.stdout.readline() == b"ready\n"  # the child's mechanism is in place
        assert psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    finally:
        grandparent.kill()
        grandparent.wait()
        grandparent.stdout.close()  # type: ignore[union-attr]
    _wait_gone(pid, "the orphaned task process to die with its worker")


# -- the memory limit ----------------------------------------------------------------------------


def test_memory_limit_makes_an_allocation_beyond_it_fail_in_the_child():
    script = textwrap.dedent(
        """
        from connectrt.runtime.executors.process.memory_limit import apply_memory_limit
        small = bytearray(100 * 1024 * 1024)  # fine before the limit
        del small
        apply_memory_limit(128)
        try:
            big = bytearray(200 * 1024 * 1024)
        except MemoryError:
            print("MemoryError")
        else:
            print("allocated")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert out.stdout.strip() == "MemoryError", out.stderr


def test_memory_errors_are_found_anywhere_in_an_exception_chain():
    try:
        try:
            raise MemoryError
        except MemoryError as e:
            raise RuntimeError("poll failed") from e
    except RuntimeError as outer:
        wrapped = outer
    assert caused_by_memory_error(wrapped)
    assert caused_by_memory_error(MemoryError())
    assert not caused_by_memory_error(RuntimeError("other"))
    assert not caused_by_memory_error(None)


# -- how a death is reported ---------------------------------------------------------------------


def test_returncodes_name_the_exit_code_or_the_signal():
    assert describe_returncode(13) == "exited with code 13"
    assert describe_returncode(-signal.SIGSEGV) == "killed by signal SIGSEGV (11)"
    assert describe_returncode(-signal.SIGKILL) == "killed by signal SIGKILL (9)"
    assert describe_returncode(-200) == "killed by signal signal 200 (200)"


def test_death_trace_says_how_and_mentions_the_memory_limit_only_for_signals():
    memory = {"rss": 2048, "data": 4096}
    killed = death_trace("c-1", 42, -9, stopping=False, memory_limit_mb=256, last_memory_kb=memory)
    assert "Task c-1 failed: its process (pid 42) killed by signal SIGKILL (9)" in killed
    assert "OOM killer" in killed
    assert "data 4.0 MB, rss 2.0 MB" in killed
    assert "memory limit (task.memory.limit.mb=256" in killed
    exited = death_trace("c-1", 42, 3, stopping=True, memory_limit_mb=256, last_memory_kb={})
    assert "exited with code 3 while stopping" in exited
    assert "memory limit" not in exited
    unlimited = death_trace("c-1", 42, -11, stopping=False, memory_limit_mb=0, last_memory_kb={})
    assert "native code" in unlimited and "memory limit" not in unlimited


# -- config --------------------------------------------------------------------------------------


@pytest.fixture
def plugins() -> PluginRegistry:
    from connectrt.api import SourceConnector, SourceTask, Task

    class NopSource(SourceConnector):
        def start(self, config: object) -> None:
            pass

        def stop(self) -> None:
            pass

        def task_class(self) -> type[Task]:
            return SourceTask

        def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
            return []

        def config_def(self) -> ConfigDef:
            return ConfigDef()

    registry = PluginRegistry()
    registry.register_class(NopSource)
    return registry


def _config(**extra: str) -> dict[str, str]:
    return {"name": "c", "connector.class": "NopSource", **extra}


def test_memory_limit_is_validated_per_field_and_against_the_executor(plugins: PluginRegistry):
    policy = OverridePolicy("None")
    small = validate_connector_config(
        _config(**{"task.memory.limit.mb": "64"}), plugins, policy, executor="processes"
    )
    assert "at least 128" in small.values["task.memory.limit.mb"].errors[0]
    for ok in ("0", "128", "4096"):
        config = _config(**{"task.memory.limit.mb": ok})
        validate_connector_config(config, plugins, policy, executor="processes").raise_if_invalid()
    unlimited = _config(**{"task.memory.limit.mb": "0"})
    validate_connector_config(unlimited, plugins, policy, executor="threads").raise_if_invalid()
    with pytest.raises(ConfigError) as info:
        validate_connector_config(
            _config(**{"task.memory.limit.mb": "512"}), plugins, policy, executor="threads"
        ).raise_if_invalid()
    assert "task.executor=threads" in str(info.value)
    assert "set task.executor=processes" in str(info.value)
    with pytest.raises(ConfigError, match=r"task\.memory\.limit\.mb"):
        WorkerConfig.from_props({"task.memory.limit.mb": "100"})
    with pytest.raises(ConfigError, match=r"task\.executor"):
        WorkerConfig.from_props({"task.executor": "fibers"})


def test_a_worker_memory_limit_needs_task_processes():
    from connectrt.runtime.worker.worker import Worker
    from connectrt.storage.offsets import MemoryOffsetStore

    with pytest.raises(ConfigError) as info:
        Worker(WorkerConfig.from_props({"task.memory.limit.mb": "256"}), MemoryOffsetStore())
    assert "task.executor=threads" in str(info.value)
    worker = Worker(
        WorkerConfig.from_props({"task.executor": "processes", "task.memory.limit.mb": "256"}),
        MemoryOffsetStore(),
    )
    assert type(worker.executor).__name__ == "ProcessTaskExecutor"


def test_the_connector_limit_wins_over_the_worker_default():
    worker = WorkerConfig.from_props({"task.executor": "processes", "task.memory.limit.mb": "512"})
    assert memory_limit_mb({}, worker) == 512
    assert memory_limit_mb({"task.memory.limit.mb": ""}, worker) == 512
    assert memory_limit_mb({"task.memory.limit.mb": "256"}, worker) == 256
    assert memory_limit_mb({"task.memory.limit.mb": "0"}, worker) == 0
    assert memory_limit_mb({}, WorkerConfig.from_props({})) == 0


def test_task_status_shows_the_pid_only_for_tasks_in_processes():
    assert TaskState.of(0, StateInfo("RUNNING", "h:8083", pid=4321)).wire() == {
        "id": 0,
        "state": "RUNNING",
        "worker_id": "h:8083",
        "pid": 4321,
    }
    assert "pid" not in TaskState.of(0, StateInfo("RUNNING", "h:8083")).wire()
