"""The file connectors' confinement (``file.connectors.allowed.dirs``) and whole-line sink."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from connectors.file import FileStreamSinkTask, FileStreamSourceTask
from connectrt.api import ConnectError, FileAccess, SinkRecord, SinkRecordBatch, file_access
from connectrt.api.file_access import configure_file_access


@pytest.fixture
def rule() -> Iterator[None]:
    """Restore the process-wide rule after the test."""
    before = file_access()
    try:
        yield
    finally:
        configure_file_access(before)


def test_files_in_allowed_dirs_are_readable_and_writable(tmp_path: Path) -> None:
    access = FileAccess.of([str(tmp_path / "data")])
    (tmp_path / "data" / "sub").mkdir(parents=True)
    target = tmp_path / "data" / "sub" / "out.txt"
    assert access.writable(str(target)) == os.path.realpath(target)
    assert access.readable(str(target)) == os.path.realpath(target)


@pytest.mark.parametrize("relative", ["../outside.txt", "sub/../../outside.txt", "/etc/passwd"])
def test_files_outside_are_refused_naming_the_setting(tmp_path: Path, relative: str) -> None:
    access = FileAccess.of([str(tmp_path / "data")])
    path = relative if relative.startswith("/") else str(tmp_path / "data" / relative)
    for check in (access.readable, access.writable):
        with pytest.raises(ConnectError, match=r"file\.connectors\.allowed\.dirs"):
            check(path)


def test_no_allowed_dir_allows_no_file(tmp_path: Path) -> None:
    with pytest.raises(ConnectError, match="allows no directory"):
        FileAccess.of([]).readable(str(tmp_path / "x"))


def test_a_symlink_out_of_an_allowed_dir_is_refused(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ConnectError):
        FileAccess.of([str(tmp_path / "data")]).writable(str(tmp_path / "data" / "link" / "x"))


def test_plugin_path_and_sys_path_are_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugins, site = tmp_path / "plugins", tmp_path / "site"
    access = FileAccess.of([str(tmp_path)], [str(plugins)])
    for name in ("x.py", "out.txt"):  # nothing at all below plugin.path
        with pytest.raises(ConnectError, match=r"a plugin\.path directory"):
            access.writable(str(plugins / name))
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    importable = [
        "pkg/x.py",
        "x.pyc",
        "pkg/__pycache__/x.cpython-311.pyc",
        "evil.pth",
        "ext.cpython-311-x86_64-linux-gnu.so",
        "dist.dist-info/entry_points.txt",
        "old.egg-info/entry_points.txt",
    ]
    for name in importable:
        with pytest.raises(ConnectError, match=r"a sys\.path entry"):
            access.writable(str(site / name))
    # A data file in a sys.path entry (the working directory under `python -m`) is no code.
    assert access.writable(str(site / "out.txt"))
    assert access.readable(str(plugins / "x.py"))  # reading is not planting code
    assert access.writable(str(tmp_path / "out.txt"))


def test_without_a_worker_every_file_is_allowed(tmp_path: Path) -> None:
    assert FileAccess().writable(str(tmp_path / "x")) == os.path.realpath(tmp_path / "x")


def _batch(*values: str) -> SinkRecordBatch:
    return SinkRecordBatch.of(
        [SinkRecord("t", 0, None, None, None, v, i) for i, v in enumerate(values)]
    )


def test_the_file_tasks_follow_the_workers_rule(tmp_path: Path, rule: None) -> None:
    configure_file_access(FileAccess.of([str(tmp_path / "ok")], [str(tmp_path / "ok" / "p")]))
    sink = FileStreamSinkTask()
    with pytest.raises(ConnectError, match=r"allowed\.dirs"):
        sink.start({"file": str(tmp_path / "out.txt")})
    with pytest.raises(ConnectError, match=r"plugin\.path"):
        FileStreamSinkTask().start({"file": str(tmp_path / "ok" / "p" / "x.py")})
    assert not (tmp_path / "ok" / "p" / "x.py").exists()
    with pytest.raises(ConnectError, match=r"allowed\.dirs"):
        FileStreamSourceTask().start({"file": "/etc/passwd", "topic": "t"})
    (tmp_path / "ok").mkdir()
    fine = FileStreamSinkTask()
    fine.start({"file": str(tmp_path / "ok" / "out.txt")})
    fine.put(_batch("a"))
    fine.stop()
    assert (tmp_path / "ok" / "out.txt").read_text() == "a\n"


def test_a_partial_last_line_is_cut_off_when_the_sink_starts(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    out.write_bytes(b"one\ntwo\nthr")  # a worker killed in the middle of a write
    task = FileStreamSinkTask()
    task.start({"file": str(out)})
    task.put(_batch("three", "four"))
    task.flush({})
    task.stop()
    assert out.read_text() == "one\ntwo\nthree\nfour\n"


def test_a_file_of_one_partial_line_is_emptied(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    out.write_bytes(b"x" * 200_000)
    task = FileStreamSinkTask()
    task.start({"file": str(out)})
    task.stop()
    assert out.read_bytes() == b""


def test_each_batch_is_one_write_of_whole_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out.txt"
    task = FileStreamSinkTask()
    task.start({"file": str(out)})
    writes: list[bytes] = []
    real_write = os.write

    def spy(fd: int, data: bytes | memoryview) -> int:
        writes.append(bytes(data))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", spy)
    task.put(_batch("a", "b", "c"))
    task.put(_batch("d"))
    task.stop()
    assert writes == [b"a\nb\nc\n", b"d\n"]
    assert out.read_text() == "a\nb\nc\nd\n"
