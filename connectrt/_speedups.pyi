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
    def store(self, obj: Any, *values: Any) -> None: ...
    def plain_values(self, records: list[Any]) -> tuple[str, int | None, list[bytes | None]] | None:
        """One pass over a list of source records (a filler of SourceRecord): their topic,
        timestamp and values when every one is exactly ``cls`` with no key, key schema,
        headers or partition, one topic, one timestamp and a bytes or None value; else None."""
    def fill_lazy(
        self, n: int, columns: tuple[tuple[Any, ...] | None, ...], loader: Callable[[str], Any]
    ) -> list[Any]: ...
    def descriptors(self, names: tuple[str, ...]) -> tuple[LazySlot, ...]: ...
    def copy(self, obj: Any, list_slot: int) -> Any: ...
    def own_dealloc(self, slots: tuple[str, ...]) -> None: ...

class LazySlot:
    """A slot descriptor that loads an unset slot from its batch's column (see the C file)."""

    def __get__(self, obj: Any, cls: type | None = None) -> Any: ...
    def __set__(self, obj: Any, value: Any) -> None: ...
    def __delete__(self, obj: Any) -> None: ...

def method_column(
    method: Callable[[Any], Any], items: list[Any] | tuple[Any, ...]
) -> tuple[Any, ...]: ...
def framed_slices(
    items: list[Any] | tuple[Any, ...], prefix: bytes, suffix: bytes
) -> list[bytes] | None: ...
def method_any(method: Callable[[Any], Any], items: list[Any] | tuple[Any, ...]) -> bool: ...
def timestamp_columns(
    msgs: list[Any], timestamp: Callable[[Any], Any], types: tuple[Any, ...]
) -> tuple[tuple[Any, ...], tuple[Any, ...]]: ...
def otlp_sink_batch(
    record: tuple[Any, ...],
    base: bytes,
    topic_attribute: bytes,
    process: bytes,
    shared_of: dict[int, bytes],
    where_of: dict[tuple[str, int | None], bytes],
    where_new: Callable[[str, int], bytes],
    pool: bytes,
    at: int,
    new_pool: Callable[[int], bytes],
) -> tuple[bytes, bytes, int]:
    """A ``sink`` trace record's spans (the batch span, its consume, per traced record its span
    and stage spans), and the span id pool and its position after them (RequestEncoder._sink)."""

def otlp_commit_spans(
    records: list[tuple[Any, ...]],
    middle: bytes,
    shared_of: dict[int, bytes],
    shared_new: Callable[[tuple[Any, ...]], bytes],
    pool: bytes,
    at: int,
    new_pool: Callable[[int], bytes],
) -> tuple[bytes, bytes, int]:
    """The offset commit spans of committed records (RequestEncoder._commit's loop)."""

def trace_records(
    chosen: list[Any],
    parent_based: bool,
    arrived: int,
    new_id: Callable[[int], int],
    parse: Callable[[Any], tuple[int, int, int] | None],
) -> list[tuple[Any, ...]]:
    """A sink batch's chosen records made into trace records (tracing.sink_batch's loop)."""
