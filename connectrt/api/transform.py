"""Single message transformations (SMTs) and predicates: the plugin-author contracts.

A :class:`Transformation` changes one record at a time between the connector and the converter
(source side) or between the converter and the sink task (sink side). A :class:`Predicate` gates
a transformation: the runtime applies the transformation only to records the predicate accepts
(or rejects, when the connector config sets ``transforms.<alias>.negate=true``).

Lifecycle (both types): the runtime creates one instance per alias **per task**, calls
``configure(config)`` once with the alias' keys (``transforms.<alias>.`` or
``predicates.<alias>.`` stripped), then ``apply``/``test`` for each record, and ``close()`` once
when the task stops. ``config_def()`` may be called on an un-configured instance (the REST
validate endpoint does this), so it must not depend on ``configure``.

Threading: all calls for one instance come from that task's thread, never concurrently, so
implementations need no locking; they must not share mutable state between instances.

Results of :meth:`Transformation.apply`:

* a record - the (usually new) record that continues down the chain;
* ``None`` - drop the record (source records dropped this way are still committed);
* a list of records - fan out: each continues down the chain, in order (connectrt extension;
  Kafka's SMTs return exactly one record or null). An empty list drops the record.

Records are not mutated in place: derive a changed copy with ``record.new_record(**changes)``.
A record that cannot be transformed raises :class:`~connectrt.errors.DataError`; bad
configuration raises :class:`~connectrt.errors.ConfigError` naming the key.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Generic, TypeVar

from connectrt.api.config import ConfigDef
from connectrt.api.records import ConnectRecord

__all__ = ["Predicate", "R", "Transformation", "apply_each_in_place"]

R = TypeVar("R", bound=ConnectRecord)
"""The record type a transformation or predicate handles (SourceRecord or SinkRecord)."""


class _AliasPlugin(abc.ABC):
    """What transformations and predicates share (see the module docstring for the lifecycle):
    keys declared once as the class attribute ``CONFIG_DEF``, ``configure`` before the first
    record, ``close`` when the task stops."""

    CONFIG_DEF: ClassVar[ConfigDef] = ConfigDef()

    def config_def(self) -> ConfigDef:
        """The keys this plugin understands (``CONFIG_DEF`` by default)."""
        return self.CONFIG_DEF

    @abc.abstractmethod
    def configure(self, config: Mapping[str, Any]) -> None:
        """Called once before the first record. Raise ConfigError naming a bad key."""

    def close(self) -> None:
        """Release resources; called once when the task stops. The default does nothing."""

    def version(self) -> str:
        return "unknown"


class Transformation(_AliasPlugin, Generic[R]):
    """A single message transformation.

    Subclasses usually declare their keys once as the class attribute ``CONFIG_DEF`` and parse
    them in :meth:`configure` with ``self.config_def().parse(config)``.
    """

    @abc.abstractmethod
    def apply(self, record: R) -> R | list[R] | None:
        """Transform one record: return it (changed or not), None to drop it, or a list.

        Do not change ``record`` itself (the runtime keeps it to report errors with the
        original record); derive a changed copy with ``record.new_record(...)``. A record you
        return that is not ``record`` must be new, referenced by nothing else: the runtime takes
        ownership of it.
        """

    def apply_owned(self, record: R) -> R | list[R] | None:
        """:meth:`apply` for a record the runtime owns; the default just calls :meth:`apply`.

        The runtime calls this instead of :meth:`apply` when ``record`` was created by an
        earlier transformation of the same chain, so nothing else refers to it. An override may
        then set the record's own attributes (topic, key, value, their schemas, the headers
        list) in place and return ``record``, saving a copy. The objects those attributes point
        to (a value dict, a Struct) may be shared with the original record: never mutate them.
        """
        return self.apply(record)

    def apply_batch_owned(self, records: list[R]) -> bool:
        """Transform a batch of runtime-owned records one to one, in place; the batch fast path.

        Every record in ``records`` is a copy the runtime made for this chain (nothing else
        refers to it). Replace element ``i`` by what :meth:`apply_owned` would return for it -
        usually by updating the record's attributes in place, as :meth:`apply_owned` may. Keep
        the list's length and order and return True.

        Return False, leaving the list in any state, when a record would be dropped or fanned
        out: the runtime then discards this batch's copies, runs the whole batch record by
        record through :meth:`apply` and no longer uses the batch path for this chain. An
        exception is handled the same way for that one batch, so that the failure is reported
        against the record that caused it. The default calls :meth:`apply_owned` per record;
        override it to save the per-record call where it matters.
        """
        return apply_each_in_place(records, self.apply_owned)


class Predicate(_AliasPlugin, Generic[R]):
    """A condition on a record that decides whether a transformation applies to it."""

    @abc.abstractmethod
    def test(self, record: R) -> bool:
        """True when the record matches. Must not change the record."""


def apply_each_in_place(records: list[R], apply: Callable[[R], R | list[R] | None]) -> bool:
    """``records[i] = apply(records[i])`` for each record, as long as ``apply`` returns one
    record; False at the first None or list (the batch is not one to one). The loop behind
    :meth:`Transformation.apply_batch_owned`."""
    for index, record in enumerate(records):
        result = apply(record)
        if result is record:
            continue
        if result is None or isinstance(result, list):
            return False
        records[index] = result
    return True
