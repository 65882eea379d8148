"""Reading README.md and docs/ for the tests that keep them true.

A fenced code block may be preceded, on the line right before its opening fence, by one marker:

* ``<!-- example: NAME -->``: a named example; :func:`load_example` runs it as a module so tests
  can use what it defines (connector classes, for instance);
* ``<!-- file: PATH -->``: the block is the content of ``PATH`` (relative to the repository
  root), which other tests run;
* ``<!-- not-run: REASON -->``: the block is not run (keep these rare, and say why).

Python blocks without a ``file``/``not-run`` marker are run by ``tests/unit/test_docs_examples.py``.
"""

from __future__ import annotations

import re
import sys
import types
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"

_MARKER = re.compile(r"<!--\s*(example|file|not-run):\s*(.*?)\s*-->\s*$")
_OPEN = re.compile(r"^```([\w+-]*)\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a Markdown page."""

    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    marker: str | None = None  # "example", "file" or "not-run"
    argument: str = ""  # the marker's name, path or reason

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    """README.md and every Markdown page of the site."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _OPEN.match(lines[i])
        if not opening:
            i += 1
            continue
        end = i + 1
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        if end == len(lines):
            raise AssertionError(f"{page}:{i + 1}: code block never closed")
        marker = _MARKER.match(lines[i - 1]) if i > 0 else None
        found.append(
            Block(
                page,
                i + 1,
                opening.group(1),
                "\n".join(lines[i + 1 : end]) + "\n",
                marker.group(1) if marker else None,
                marker.group(2) if marker else "",
            )
        )
        i = end + 1
    return found


def all_blocks() -> list[Block]:
    return [b for page in pages() for b in blocks(page)]


def example(name: str) -> Block:
    (block,) = [b for b in all_blocks() if b.marker == "example" and b.argument == name]
    return block


def run_block(block: Block, module_name: str) -> types.ModuleType:
    """Execute a block as the body of a new module, registered as ``module_name`` (so classes it
    defines have an importable ``__module__`` while the module stays in ``sys.modules``)."""
    module = types.ModuleType(module_name)
    module.__file__ = str(block.page)
    sys.modules[module_name] = module
    try:
        exec(compile(block.code, block.where, "exec"), module.__dict__)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


def load_example(name: str) -> types.ModuleType:
    """The module a named example defines (``docs_example_<name>``, loaded once)."""
    module_name = "docs_example_" + re.sub(r"\W", "_", name)
    if module_name in sys.modules:
        return sys.modules[module_name]
    return run_block(example(name), module_name)
