"""Types of the optional C extension (connectrt/_speedups.c)."""

from collections.abc import Callable
from typing import Any

class SlotFiller:
    """Fills new instances of ``cls`` (a plain slotted Python class) from columns, without
    ``__init__``: one instance per row, the i-th column stored in the i-th of ``slots``."""

    def __init__(self, cls: type, slots: tuple[str, ...]) -> None: ...
    def __call__(self, columns: tuple[tuple[Any, ...], ...]) -> list[Any]: ...

def timestamp_columns(
    msgs: list[Any], timestamp: Callable[[Any], Any], types: tuple[Any, ...]
) -> tuple[tuple[Any, ...], tuple[Any, ...]]: ...
