"""RegexRouter: rename the topic when it fully matches ``regex``.

The ``replacement`` uses Java's syntax: ``$1`` / ``${name}`` for groups, ``\\`` to escape. With
``regex=(.*)-(.*)`` and ``replacement=$2.$1`` the topic ``a-b`` becomes ``b.a``. Topics that
do not match are left alone. Java ``(?<name>...)`` named groups are accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from connectrt.api.config import ConfigDef, ConfigType, Importance
from connectrt.api.transform import R
from connectrt.transforms._util import (
    BundledTransformation,
    compile_java_regex,
    copy_record,
    expand_java_replacement,
    parse_java_replacement,
)

__all__ = ["RegexRouter"]

REGEX = "regex"
REPLACEMENT = "replacement"


def _valid_regex(name: str, value: Any) -> None:
    compile_java_regex(value, name)


class RegexRouter(BundledTransformation[R]):
    """Update the record topic using a regular expression and a replacement string."""

    CONFIG_DEF: ClassVar[ConfigDef] = (
        ConfigDef()
        .define(
            REGEX,
            ConfigType.STRING,
            validator=_valid_regex,
            importance=Importance.HIGH,
            documentation="Regular expression to use for matching.",
        )
        .define(
            REPLACEMENT,
            ConfigType.STRING,
            importance=Importance.HIGH,
            documentation="Replacement string.",
        )
    )

    def configure(self, config: Mapping[str, Any]) -> None:
        parsed = self.config_def().parse(config)
        self._regex = compile_java_regex(parsed[REGEX], REGEX)
        self._parts = parse_java_replacement(parsed[REPLACEMENT], self._regex, REPLACEMENT)

    def apply(self, record: R) -> R:
        m = self._regex.fullmatch(record.topic)
        if m is None:
            return record
        topic = expand_java_replacement(self._parts, m)
        return copy_record(record, topic=topic)
