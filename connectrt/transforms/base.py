"""Base classes of the bundled SMTs: the ``$Key``/``$Value`` families and whole-record SMTs."""

from __future__ import annotations

import abc
from typing import Any, ClassVar, Generic

import connectrt
from connectrt.api.records import ConnectRecord
from connectrt.api.transform import R, Transformation
from connectrt.data.schema import Schema

__all__ = ["BundledTransformation", "KeyOrValueTransformation", "Part", "PartRewrite"]


Part = tuple[Schema | None, Any]
"""A record's key or value with its schema: what :meth:`KeyOrValueTransformation.rewrite`
returns."""


class KeyOrValueTransformation(Transformation[R], Generic[R]):
    """Base of the ``$Key``/``$Value`` SMT pairs: which part of the record they act on.

    The variants are declared with a class keyword, ``class CastKey(Cast[R], key=True)``,
    which sets ``IS_KEY``. ``SMT_NAME``, the Kafka class' simple name used in error messages,
    is the family class' (``Cast``'s) own name unless it sets one. Most families subclass
    :class:`PartRewrite` and write only how the part changes. Lifecycle and threading are
    those of :class:`Transformation`.
    """

    SMT_NAME: ClassVar[str] = "Transformation"
    IS_KEY: ClassVar[bool] = False

    def __init_subclass__(cls, key: bool | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if key is not None:
            cls.IS_KEY = key
        elif "SMT_NAME" not in cls.__dict__:
            cls.SMT_NAME = cls.__name__

    @classmethod
    def smt_name(cls) -> str:
        """Kafka's name for this variant, e.g. ``Cast$Value`` (used in error messages)."""
        return f"{cls.SMT_NAME}${'Key' if cls.IS_KEY else 'Value'}"

    def part(self, record: ConnectRecord) -> Part:
        """The operated-on ``(schema, value)`` of ``record``: its key or its value."""
        if self.IS_KEY:
            return record.key_schema, record.key
        return record.value_schema, record.value

    def with_part(self, record: R, schema: Schema | None, value: Any) -> R:
        """A copy of ``record`` with the operated-on part replaced."""
        r = record
        if self.IS_KEY:
            return r._with(r.topic, schema, value, r.value_schema, r.value)
        return r._with(r.topic, r.key_schema, r.key, schema, value)

    def set_part(self, record: R, schema: Schema | None, value: Any) -> R:
        """``record`` with the operated-on part replaced in place (only for owned records)."""
        if self.IS_KEY:
            record.key_schema, record.key = schema, value
        else:
            record.value_schema, record.value = schema, value
        return record

    def version(self) -> str:
        return connectrt.__version__


class PartRewrite(KeyOrValueTransformation[R], Generic[R]):
    """A ``$Key``/``$Value`` SMT that only replaces the part: it writes just :meth:`rewrite`.

    This class turns :meth:`rewrite` into :meth:`apply` (a copy of the record),
    :meth:`apply_owned` and :meth:`apply_batch_owned` (the chain-owned record updated in
    place), so the copy and in-place paths cannot drift apart.
    """

    @abc.abstractmethod
    def rewrite(self, record: ConnectRecord, schema: Schema | None, value: Any) -> Part | None:
        """The new ``(schema, value)`` of the operated-on part, or None to keep ``record``.

        ``schema``/``value`` are the record's key or value (per ``IS_KEY``); ``record`` is
        there for its other attributes and must not be changed. Raise DataError for a record
        that cannot be transformed.
        """

    # The three methods below spell out the key and value cases instead of calling part(),
    # with_part() and set_part(): they run once per record.

    def apply(self, record: R) -> R:
        """A copy of ``record`` with the part :meth:`rewrite` returns (``record`` on None)."""
        r = record
        if self.IS_KEY:
            part = self.rewrite(r, r.key_schema, r.key)
            return (
                r if part is None else r._with(r.topic, part[0], part[1], r.value_schema, r.value)
            )
        part = self.rewrite(r, r.value_schema, r.value)
        return r if part is None else r._with(r.topic, r.key_schema, r.key, part[0], part[1])

    def apply_owned(self, record: R) -> R:
        """:meth:`apply` updating the chain-owned ``record`` in place instead of copying it."""
        r = record
        if self.IS_KEY:
            part = self.rewrite(r, r.key_schema, r.key)
            if part is not None:
                r.key_schema, r.key = part
        else:
            part = self.rewrite(r, r.value_schema, r.value)
            if part is not None:
                r.value_schema, r.value = part
        return r

    def apply_batch_owned(self, records: list[R]) -> bool:
        """:meth:`apply_owned` for each record (always one to one, so always True)."""
        rewrite = self.rewrite
        if self.IS_KEY:
            for r in records:
                part = rewrite(r, r.key_schema, r.key)
                if part is not None:
                    r.key_schema, r.key = part
        else:
            for r in records:
                part = rewrite(r, r.value_schema, r.value)
                if part is not None:
                    r.value_schema, r.value = part
        return True


class BundledTransformation(Transformation[R], Generic[R]):
    """Base of the bundled SMTs that act on the whole record (routers, header SMTs)."""

    def version(self) -> str:
        return connectrt.__version__
