"""The README stays true: its config reference is current and its example connector works."""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from connectrt.api import OffsetStorageReader, SourceTaskContext
from connectrt.cli.docs import config_reference

README = Path(__file__).resolve().parents[2] / "README.md"


def _section(name: str) -> str:
    text = README.read_text(encoding="utf-8")
    m = re.search(rf"<!-- {name}:start -->\n(.*?)<!-- {name}:end -->", text, re.S)
    assert m, f"README has no {name} section"
    return m.group(1)


def test_config_reference_is_current():
    assert _section("config-reference") == config_reference(), (
        "README configuration reference is stale: regenerate it with `connectrt config-docs`"
    )


def load_example() -> types.ModuleType:
    code = re.search(r"```python\n(.*?)```", _section("example"), re.S)
    assert code
    module = types.ModuleType("readme_example")
    sys.modules["readme_example"] = module
    exec(compile(code.group(1), "README.md", "exec"), module.__dict__)
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
