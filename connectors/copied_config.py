"""The sink connector shape four bundled sinks share: every task runs with the connector's config.

:class:`CopiedConfigSinkConnector` keeps the config ``start`` was given and hands a copy of it
to each of ``max_tasks`` tasks (Kafka's consumer group spreads the partitions over them). A
subclass names its version, its ConfigDef, its task class (as a :class:`~connectors.
declared_plugin.DeclaredConnector`) and the function finding the broken
rules between keys (:data:`RuleCheck`) as class attributes, checks the config in
:meth:`~CopiedConfigSinkConnector.check` (run by ``start``, so a bad config fails the connector
before any task starts) and reports the broken rules per key from
:meth:`~CopiedConfigSinkConnector.rule_errors` (run by ``validate`` once every key parsed).
:func:`parse_with_rules` is the parse that fails on the first broken rule.

Lifecycle and threading: as :class:`connectrt.api.SinkConnector`'s (the runtime calls one
method at a time); ``stop`` has nothing to release.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

from connectors.declared_plugin import DeclaredConnector
from connectrt.api import ConfigDef, ConfigError, ConfigValue, SinkConnector

__all__ = ["CopiedConfigSinkConnector", "RuleCheck", "parse_with_rules"]

RuleCheck = Callable[[Mapping[str, Any]], list[tuple[str, str]]]
"""``(key, message)`` of each rule between keys that a config (its parsed values) breaks."""


def parse_with_rules(
    definition: ConfigDef, config: Mapping[str, Any], rules: RuleCheck
) -> dict[str, Any]:
    """``definition.parse(config)``; ConfigError on the key of the first rule ``rules`` finds
    broken in the parsed values."""
    parsed = definition.parse(config)
    errors = rules(parsed)
    if errors:
        key, message = errors[0]
        raise ConfigError(message, key, parsed.get(key))
    return parsed


class CopiedConfigSinkConnector(DeclaredConnector, SinkConnector):
    """A sink connector whose tasks all get its own config (see the module docstring)."""

    #: The rules between keys :meth:`rule_errors` reports (given the raw config with the
    #: parsed values over it); None: no rules, or :meth:`rule_errors` is overridden.
    rules: ClassVar[RuleCheck | None] = None

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def check(self, config: Mapping[str, str]) -> None:
        """Raise (a ConfigError, or what opening the destination raises) unless ``config``
        can run; the default parses it with :attr:`definition`."""
        self.definition.parse(config)

    def rule_errors(
        self, config: Mapping[str, str], values: Mapping[str, object]
    ) -> Iterable[tuple[str, str]]:
        """``(key, message)`` of each rule between keys that ``config`` breaks (``values``: the
        parsed value of each key), by :attr:`rules`."""
        rules = type(self).rules
        return () if rules is None else rules({**config, **values})

    def validate(self, config: Mapping[str, str]) -> dict[str, ConfigValue]:
        """The per-key results, plus :meth:`rule_errors` on the keys they name once every key
        is valid on its own."""
        result = super().validate(config)
        if any(v.errors for v in result.values()):
            return result
        values = {name: v.value for name, v in result.items()}
        for key, message in self.rule_errors(config, values):
            result[key].errors.append(message)
        return result

    def start(self, config: Mapping[str, str]) -> None:
        self.check(config)
        self._props = dict(config)

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass
