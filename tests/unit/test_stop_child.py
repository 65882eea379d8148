"""connectrt.service.stop_child: SIGTERM, then SIGKILL after the timeout, for one child or its
whole process group (real child processes; each test takes well under a second)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from connectrt.service import stop_child

_IGNORES_SIGTERM = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(120)\n"
)


def _child(code: str, **options: object) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, **options
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"  # its signal handlers are in place
    return proc


def test_a_running_child_ends_on_sigterm() -> None:
    with _child("import time; print('ready', flush=True); time.sleep(120)") as proc:
        stop_child(proc, 30, kill_wait=30)
        assert proc.returncode == -signal.SIGTERM


def test_a_child_that_ignores_sigterm_is_killed_after_the_timeout() -> None:
    with _child(_IGNORES_SIGTERM) as proc:
        stop_child(proc, 0.3, kill_wait=30)
        assert proc.returncode == -signal.SIGKILL


def test_a_child_already_gone_is_left_alone() -> None:
    with _child("print('ready', flush=True)") as proc:
        proc.wait(timeout=60)
        stop_child(proc, 1, kill_wait=1)
        assert proc.returncode == 0


def test_group_reaches_the_childs_own_children() -> None:
    # The child starts a grandchild in its process group; SIGTERM to the child alone would
    # leave the grandchild running.
    sleeper = "import time; print('ready', flush=True); time.sleep(120)"
    code = (
        "import subprocess, sys, time\n"
        f"g = subprocess.Popen([sys.executable, '-c', {sleeper!r}], "
        "stdout=subprocess.PIPE, text=True)\n"
        "assert g.stdout.readline().strip() == 'ready'\n"
        "print('ready', flush=True)\n"
        "print(g.pid, flush=True)\n"
        "time.sleep(120)\n"
    )
    with _child(code, start_new_session=True) as proc:
        assert proc.stdout is not None
        grandchild = int(proc.stdout.readline())
        stop_child(proc, 30, kill_wait=30, group=True)
    try:
        assert proc.returncode == -signal.SIGTERM
        deadline = time.monotonic() + 30
        while _alive(grandchild) and time.monotonic() < deadline:
            time.sleep(0.05)  # reaped by init once SIGTERM has ended it
        assert not _alive(grandchild), "the grandchild outlived SIGTERM to its process group"
    finally:
        if _alive(grandchild):
            os.kill(grandchild, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers signal 0; /proc tells it apart.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
