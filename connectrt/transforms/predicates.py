"""Predicates: ``TopicNameMatches``, ``HasHeaderKey`` and ``RecordIsTombstone``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import connectrt
from connectrt.api.config import ConfigDef, ConfigType, Importance, NonEmptyString
from connectrt.api.transform import Predicate, R
from connectrt.transforms._util import compile_java_regex

__all__ = ["HasHeaderKey", "RecordIsTombstone", "TopicNameMatches"]


class _Bundled(Predicate[R]):
    def version(self) -> str:
        return connectrt.__version__


def _regex(name: str, value: Any) -> None:
    NonEmptyString()(name, value)
    compile_java_regex(value, name)


class TopicNameMatches(_Bundled[R]):
    """True when the record's topic matches ``pattern`` in full (a Java regex)."""

    CONFIG_DEF: ClassVar[ConfigDef] = ConfigDef().define(
        "pattern",
        ConfigType.STRING,
        validator=_regex,
        importance=Importance.MEDIUM,
        documentation="A Java regular expression for matching against the name of a record's "
        "topic.",
    )

    def configure(self, config: Mapping[str, Any]) -> None:
        pattern = self.config_def().parse(config)["pattern"]
        self._pattern = compile_java_regex(pattern, "pattern")

    def test(self, record: R) -> bool:
        return record.topic is not None and self._pattern.fullmatch(record.topic) is not None

    def __repr__(self) -> str:
        return f"TopicNameMatches{{pattern={self._pattern.pattern}}}"


class HasHeaderKey(_Bundled[R]):
    """True when the record has at least one header with the key ``name``."""

    CONFIG_DEF: ClassVar[ConfigDef] = ConfigDef().define(
        "name",
        ConfigType.STRING,
        validator=NonEmptyString(),
        importance=Importance.MEDIUM,
        documentation="The header name.",
    )

    def configure(self, config: Mapping[str, Any]) -> None:
        self._name: str = self.config_def().parse(config)["name"]

    def test(self, record: R) -> bool:
        return any(h.key == self._name for h in record.headers or ())

    def __repr__(self) -> str:
        return f"HasHeaderKey{{name='{self._name}'}}"


class RecordIsTombstone(_Bundled[R]):
    """True when the record's value is null (a tombstone)."""

    def configure(self, config: Mapping[str, Any]) -> None:
        """Nothing to configure."""

    def test(self, record: R) -> bool:
        return record.value is None

    def __repr__(self) -> str:
        return "RecordIsTombstone{}"
