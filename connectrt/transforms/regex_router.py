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
    compile_java_regex,
    expand_java_replacement,
    parse_java_replacement,
)
from connectrt.transforms.base import BundledTransformation

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
        self._routes: dict[str, str | None] = {}  # topic -> new topic (None: no match)

    def _route(self, topic: str) -> str | None:
        m = self._regex.fullmatch(topic)
        new = None if m is None else expand_java_replacement(self._parts, m)
        if len(self._routes) < 10000:  # topics are few; bound it anyway
            self._routes[topic] = new
        return new

    def apply(self, record: R) -> R:
        topic = record.topic
        routes = self._routes
        new = routes[topic] if topic in routes else self._route(topic)
        if new is None:
            return record
        return record._with(new, record.key_schema, record.key, record.value_schema, record.value)

    def apply_owned(self, record: R) -> R:
        topic = record.topic
        routes = self._routes
        new = routes[topic] if topic in routes else self._route(topic)
        if new is not None:
            record.topic = new
        return record

    def apply_batch_owned(self, records: list[R]) -> bool:
        routes = self._routes
        for r in records:
            topic = r.topic
            new = routes[topic] if topic in routes else self._route(topic)
            if new is not None:
                r.topic = new
        return True
