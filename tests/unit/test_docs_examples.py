"""Every code example in README.md and docs/ is run, checked against its file, or parsed.

* ```python blocks run as the body of a fresh module, in a temporary working directory (those
  marked ``<!-- file: PATH -->`` must equal that file instead, which other tests run; those
  marked ``<!-- not-run: reason -->`` are skipped, and there may be only a few);
* ```toml and ```properties blocks parse;
* the site builds with ``mkdocs build --strict``: every page in the navigation, every link and
  anchor resolving.

The README's source and sink examples and the guide's connectors also run on a real worker and
broker: ``tests/integration/test_docs_examples_pipeline.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import uuid
from pathlib import Path

import pytest

from connectrt.runtime.properties import parse_properties
from tests.docs_support import ROOT, Block, all_blocks, run_block

BLOCKS = all_blocks()
RUN = [b for b in BLOCKS if b.lang == "python" and b.marker not in ("file", "not-run")]
MAX_NOT_RUN = 3


def _id(block: Block) -> str:
    return block.where


def test_the_pages_have_examples() -> None:
    assert len(RUN) >= 10, "the docs lost their examples? (or the block parser broke)"


@pytest.mark.parametrize("block", RUN, ids=_id)
def test_python_example_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    name = f"docs_block_{uuid.uuid4().hex[:8]}"
    try:
        run_block(block, name)
    finally:
        sys.modules.pop(name, None)


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.marker == "file"], ids=_id)
def test_file_example_is_the_file(block: Block) -> None:
    path = ROOT / block.argument
    assert path.is_file(), f"{block.where}: {block.argument} does not exist"
    assert block.code == path.read_text(encoding="utf-8"), (
        f"{block.where} differs from {block.argument}: copy the file into the page"
    )


def test_blocks_not_run_are_few_and_explained() -> None:
    skipped = [b for b in BLOCKS if b.marker == "not-run"]
    assert len(skipped) <= MAX_NOT_RUN, [b.where for b in skipped]
    for block in skipped:
        assert len(block.argument) >= 20, f"{block.where}: say why it is not run"


def test_every_block_names_its_language() -> None:
    assert [b.where for b in BLOCKS if not b.lang] == []


def test_example_names_are_unique() -> None:
    names = [b.argument for b in BLOCKS if b.marker == "example"]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang == "toml"], ids=_id)
def test_toml_example_parses(block: Block) -> None:
    tomllib.loads(block.code)


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang == "properties"], ids=_id)
def test_properties_example_parses(block: Block) -> None:
    props = parse_properties(block.code)
    assert props, f"{block.where}: no key=value line"
    assert all(k and " " not in k for k in props), f"{block.where}: odd keys {list(props)}"


def test_site_builds_strictly(tmp_path: Path) -> None:
    import material  # noqa: F401  (the theme: a dev dependency, never skipped)
    import mkdocs  # noqa: F401

    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=120,
    )
    warnings = [line for line in result.stderr.splitlines() if "WARNING" in line]
    assert result.returncode == 0, "\n".join(warnings) or result.stderr[-2000:]
