"""Types of the optional C extension (connectrt/_speedups.c)."""

from collections.abc import Callable
from typing import Any

class SlotFiller:
    """Fills new instances of ``cls`` (a plain slotted Python class) from columns, without
    ``__init__``: one instance per row, the i-th column stored in the i-th of ``slots``;
    ``lazy`` names the two slots of a lazily filled instance's batch columns and row."""

    def __init__(
        self, cls: type, slots: tuple[str, ...], lazy: tuple[str, str] | None = None
    ) -> None: ...
    def __call__(self, columns: tuple[tuple[Any, ...], ...]) -> list[Any]: ...
    def make(self, *values: Any) -> Any: ...
    def fill_lazy(
        self, n: int, columns: tuple[tuple[Any, ...] | None, ...], loader: Callable[[str], Any]
    ) -> list[Any]: ...
    def descriptors(self) -> tuple[LazySlot, ...]: ...

class LazySlot:
    """A slot descriptor that loads an unset slot from its batch's column (see the C file)."""

    def __get__(self, obj: Any, cls: type | None = None) -> Any: ...
    def __set__(self, obj: Any, value: Any) -> None: ...
    def __delete__(self, obj: Any) -> None: ...

def timestamp_columns(
    msgs: list[Any], timestamp: Callable[[Any], Any], types: tuple[Any, ...]
) -> tuple[tuple[Any, ...], tuple[Any, ...]]: ...
