"""Field paths for SMTs (KIP-821): ``field.syntax.version`` V1 (a plain name) or V2 (dotted).

V2 splits ``a.b.c`` into steps; a step wrapped in backticks may contain dots
(``a.`b.c`.d`` is ``a``, ``b.c``, ``d``), and a backslash before a backtick that is followed
by a dot keeps the backtick in the name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connectrt.api.config import ConfigError, ConfigType, Importance, ValidString
from connectrt.data.schema import Field, Schema, Type
from connectrt.data.struct import Struct

__all__ = ["FIELD_SYNTAX_VERSION", "FIELD_SYNTAX_VERSION_ARGS", "SingleFieldPath"]

FIELD_SYNTAX_VERSION = "field.syntax.version"
FIELD_SYNTAX_VERSION_ARGS: tuple[Any, ...] = (
    FIELD_SYNTAX_VERSION,
    ConfigType.STRING,
    "V1",
    ValidString.of("V1", "V2", case_insensitive=True),
    Importance.HIGH,
    "Defines the version of the syntax to access fields. If set to `V1`, then the field paths "
    "are limited to access the elements at the root level of the struct or map. If set to "
    "`V2`, the syntax will support accessing nested elements. To access nested elements, "
    "dotted notation is used. If dots are already included in the field name, then backtick "
    "pairs can be used to wrap field names containing dots.",
)


def _split_v2(path: str, key: str) -> list[str]:
    steps: list[str] = []
    i, n = 0, len(path)
    while 0 <= i < n:
        if path[i] != "`":
            dot = path.find(".", i)
            if dot >= 0:
                steps.append(path[i:dot])
                i = dot + 1
            else:
                steps.append(path[i:])
                i = n
            continue
        opened = i
        i += 1
        start = i
        name: list[str] = []
        while True:
            i = path.find("`", i)
            if i < 0:
                raise ConfigError(
                    f"Incomplete backtick pair in path: [{path}], consider adding a backslash "
                    f"before backtick at position {opened} to escape it",
                    key,
                    path,
                )
            escaped = path[i - 1] == "\\"
            if i >= n - 1:
                if escaped:
                    raise ConfigError(
                        f"Incomplete backtick pair in path: [{path}], consider adding a "
                        f"backslash before backtick at position {opened} to escape it",
                        key,
                        path,
                    )
                name.append(path[start:i])
                steps.append("".join(name))
                i += 1
                break
            if path[i + 1] != ".":
                i += 1
                continue
            if escaped:
                name.append(path[start : i - 1] + "`")
                i += 1
                start = i
                continue
            name.append(path[start:i])
            steps.append("".join(name))
            i += 2
            break
    if path.endswith("."):
        steps.append("")
    return steps


class SingleFieldPath:
    """One field path; resolves fields in schemas and values in Structs or maps."""

    __slots__ = ("path", "steps")

    def __init__(self, path: str, version: str = "V1", key: str = "field") -> None:
        self.path = path
        self.steps = [path] if version.upper() == "V1" else _split_v2(path, key)

    def field_from(self, schema: Schema) -> Field | None:
        current = schema
        for step in self.steps[:-1]:
            if current.type is not Type.STRUCT:
                return None
            found = current.field(step)
            if found is None:
                return None
            current = found.schema
        if current.type is not Type.STRUCT:
            return None
        return current.field(self.steps[-1])

    def value_from_struct(self, struct: Struct, replace_null_with_default: bool = True) -> Any:
        current: Any = struct
        for step in self.steps[:-1]:
            if not isinstance(current, Struct) or current.schema.field(step) is None:
                return None
            current = current.get(step)
        if not isinstance(current, Struct) or current.schema.field(self.steps[-1]) is None:
            return None
        last = self.steps[-1]
        return current.get(last) if replace_null_with_default else current.get_without_default(last)

    def value_from_map(self, data: Mapping[str, Any]) -> Any:
        current: Any = data
        for step in self.steps[:-1]:
            current = current.get(step) if isinstance(current, Mapping) else None
            if current is None:
                return None
        return current.get(self.steps[-1]) if isinstance(current, Mapping) else None

    def __repr__(self) -> str:
        return f"SingleFieldPath({self.path!r}, steps={self.steps!r})"
