"""connectrt.process.allocator: the worker process's allocator, chosen by CONNECTRT_MALLOC.

The choice is checked directly; the re-execution in real child processes (the only way
LD_PRELOAD takes effect), reading each process's own memory map.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from connectrt.cli.main import _command_name
from connectrt.process import allocator
from connectrt.process.allocator import AllocatorError, choose_library

# The dev setup installs the mimalloc extra (make setup): the worker's default allocator.
MIMALLOC = allocator._mimalloc()

PROBE = textwrap.dedent(
    """
    import json, os, subprocess, sys
    from connectrt.process.allocator import allocator_in_use, use_preferred_allocator
    library = use_preferred_allocator()
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.environ.get('LD_PRELOAD', ''))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    print(json.dumps({
        "library": library,
        "in_use": allocator_in_use(),
        "ld_preload": os.environ.get("LD_PRELOAD"),
        "markers": sorted(k for k in os.environ if k.startswith("CONNECTRT_MALLOC_")),
        "eager": os.environ.get("MIMALLOC_ARENA_EAGER_COMMIT"),
        "argv": sys.argv[1:],
        "child_ld_preload": child,
        "pid": os.getpid(),
    }))
    """
)


def _probe(tmp_path: Path, **env: str) -> dict[str, object]:
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    given = ("CONNECTRT_MALLOC", "LD_PRELOAD", "MIMALLOC_ARENA_EAGER_COMMIT")
    environ = {k: v for k, v in os.environ.items() if k not in given}
    proc = subprocess.run(
        [sys.executable, str(script), "one", "two words"],
        capture_output=True,
        text=True,
        env={**environ, **env},
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout)
    return result


def test_system_and_paths_and_bad_settings():
    assert choose_library({"CONNECTRT_MALLOC": "system"}) is None
    assert choose_library({"CONNECTRT_MALLOC": sys.executable}) == sys.executable
    with pytest.raises(AllocatorError, match="expected auto, mimalloc, system or the path"):
        choose_library({"CONNECTRT_MALLOC": "tcmalloc"})
    with pytest.raises(AllocatorError, match="expected auto"):
        choose_library({"CONNECTRT_MALLOC": "/no/such/libjemalloc.so.2"})


def test_auto_and_mimalloc_without_it_installed(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(allocator, "_mimalloc", lambda: None)
    assert choose_library({}) is None  # auto: the C library's malloc
    with pytest.raises(AllocatorError, match=r"pip install 'connectrt\[mimalloc\]'"):
        choose_library({"CONNECTRT_MALLOC": "mimalloc"})


def test_the_dev_setup_has_mimalloc():
    assert MIMALLOC is not None and "libmimalloc.so" in MIMALLOC
    assert choose_library({}) == MIMALLOC == choose_library({"CONNECTRT_MALLOC": "mimalloc"})


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="LD_PRELOAD is Linux's")
def test_a_process_runs_again_with_mimalloc_and_its_children_do_not(tmp_path: Path):
    out = _probe(tmp_path)
    assert out["in_use"] == Path(str(MIMALLOC)).name  # mapped into the executed process
    assert out["library"] == MIMALLOC
    assert out["argv"] == ["one", "two words"]  # the command line as given
    assert out["ld_preload"] is None and out["markers"] == []  # the environment as given
    assert out["child_ld_preload"] == ""  # a process it starts keeps its own allocator
    assert out["eager"] == "0"  # mimalloc commits memory as it uses it (peak RSS 290 -> 169 MB)


def test_a_mimalloc_setting_given_is_kept(tmp_path: Path):
    assert _probe(tmp_path, MIMALLOC_ARENA_EAGER_COMMIT="1")["eager"] == "1"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="LD_PRELOAD is Linux's")
def test_an_existing_ld_preload_is_kept_and_restored(tmp_path: Path):
    libm = "libm.so.6"  # loaded by every CPython already: preloading it changes nothing
    out = _probe(tmp_path, LD_PRELOAD=libm)
    assert out["in_use"] == Path(str(MIMALLOC)).name
    assert out["ld_preload"] == libm and out["child_ld_preload"] == libm


def test_system_leaves_the_process_alone(tmp_path: Path):
    out = _probe(tmp_path, CONNECTRT_MALLOC="system")
    assert out["in_use"] == "system" and out["library"] is None and out["eager"] is None


def test_a_bad_setting_is_one_error_line_of_the_worker_commands(tmp_path: Path):
    proc = subprocess.run(
        [sys.executable, "-m", "connectrt.cli", "standalone", str(tmp_path / "w.properties")],
        capture_output=True,
        text=True,
        env={**os.environ, "CONNECTRT_MALLOC": "hoard"},
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: CONNECTRT_MALLOC='hoard': expected auto"), proc.stderr
    assert "Traceback" not in proc.stderr


def test_only_the_worker_commands_choose_an_allocator():
    assert _command_name(["--log-level", "ERROR", "standalone", "w.properties"]) == "standalone"
    assert _command_name(["demo", "--lines", "5"]) == "demo"
    assert _command_name(["--log-level", "worker", "connectors", "list"]) == "connectors"
    assert _command_name(["--version"]) is None
