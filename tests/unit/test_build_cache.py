"""connectrt.testing.build_cache: the user cache folder and the once-only Go build."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from connectrt.testing.build_cache import go_build, user_cache

_HELLO = {
    "go.mod": "module example.test/hello\n\ngo 1.21\n",
    "main.go": 'package main\n\nfunc main() { println("hello") }\n',
}


class _BuildError(Exception):
    pass


def test_user_cache_follows_xdg_cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert user_cache("jaeger") == tmp_path / "connectrt" / "jaeger"


def test_a_cached_binary_is_returned_without_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "hello").write_text("built before")
    monkeypatch.setenv("PATH", str(tmp_path / "no-go-here"))
    built = go_build(
        tmp_path, "hello", sources=_HELLO, get=[], package=".", label="hello", note="", timeout=5
    )
    assert built.read_text() == "built before"


def test_missing_go_raises_the_given_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-go-here"))
    with pytest.raises(_BuildError, match="building hello needs the Go toolchain"):
        go_build(
            tmp_path,
            "hello",
            sources=_HELLO,
            get=[],
            package=".",
            label="hello",
            note="",
            timeout=5,
            error=_BuildError,
        )
    assert not (tmp_path / "hello").exists()


@pytest.mark.skipif(shutil.which("go") is None, reason="needs the Go toolchain")
def test_a_failed_build_leaves_no_binary_and_no_scratch_folder(tmp_path: Path) -> None:
    broken = {**_HELLO, "main.go": "package main\n\nfunc main() { undefined() }\n"}
    with pytest.raises(_BuildError, match=r"building hello failed \(go build\)"):
        go_build(
            tmp_path,
            "hello",
            sources=broken,
            get=[],
            package=".",
            label="hello",
            note="",
            timeout=300,
            error=_BuildError,
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock"]
