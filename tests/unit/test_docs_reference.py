"""The docs stay true: the configuration reference is current and the guide's example works."""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from connectrt.api import OffsetStorageReader, SourceTaskContext
from connectrt.cli.docs import config_reference

DOCS = Path(__file__).resolve().parents[2] / "docs"
REFERENCE = DOCS / "reference" / "configuration.md"
SOURCE_GUIDE = DOCS / "guide" / "source-connectors.md"


def _section(page: Path, name: str) -> str:
    text = page.read_text(encoding="utf-8")
    m = re.search(rf"<!-- {name}:start -->\n(.*?)<!-- {name}:end -->", text, re.S)
    assert m, f"{page.name} has no {name} section"
    return m.group(1)


def test_config_reference_is_current():
    assert _section(REFERENCE, "config-reference") == config_reference(), (
        "docs/reference/configuration.md is stale: regenerate it with `connectrt config-docs`"
    )


def load_example() -> types.ModuleType:
    code = re.search(r"```python\n(.*?)```", _section(SOURCE_GUIDE, "example"), re.S)
    assert code
    module = types.ModuleType("guide_example")
    sys.modules["guide_example"] = module
    exec(compile(code.group(1), str(SOURCE_GUIDE), "exec"), module.__dict__)
    return module


class _Reader(OffsetStorageReader):
    def __init__(self, stored: dict[str, Any] | None) -> None:
        self.stored = stored

    def offsets(self, partitions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any] | None]:
        return [self.stored for _ in partitions]


class _Context(SourceTaskContext):
    def __init__(self, stored: dict[str, Any] | None) -> None:
        self._reader = _Reader(stored)

    @property
    def configs(self) -> Mapping[str, str]:
        return {}

    @property
    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._reader


def test_example_connector_counts_and_resumes():
    ex = load_example()
    connector = ex.CounterSource()
    connector.start({"topic": "numbers", "batch.size": "3"})
    (task_config,) = connector.task_configs(4)
    task = ex.CounterTask()
    task.initialize(_Context(None))
    task.start(task_config)
    first = task.poll()
    assert [r.value for r in first] == [0, 1, 2]
    assert first[-1].source_offset == {"next": 3}
    resumed = ex.CounterTask()
    resumed.initialize(_Context({"next": 42}))
    resumed.start(task_config)
    assert [r.value for r in resumed.poll()] == [42, 43, 44]
    resumed.stop()
    assert resumed.poll() is None
