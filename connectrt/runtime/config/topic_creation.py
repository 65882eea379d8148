"""Topic creation by source tasks (KIP-158): ``topic.creation.*`` connector settings.

Connector keys (Kafka's names)::

    topic.creation.groups=compacted,big            extra groups, in matching order
    topic.creation.default.replication.factor=3    required when topic creation is used; -1 =
    topic.creation.default.partitions=6            broker default (both)
    topic.creation.<g>.include=orders\\..*,audit    regex list (full match); required for a group
    topic.creation.<g>.exclude=orders\\.tmp        regex list; exclude wins over include
    topic.creation.<g>.partitions=2                missing -> the default group's value
    topic.creation.<g>.replication.factor=1        missing -> the default group's value
    topic.creation.<g>.<topic-config>=...          topic-level config, e.g. cleanup.policy=compact

Topic creation is used when the connector sets both ``topic.creation.default.replication.factor``
and ``topic.creation.default.partitions`` and the worker has ``topic.creation.enable=true``.
Before a task first produces to a topic, the topic is created (if it does not exist yet) with
the settings of the first listed group whose include matches and whose exclude does not, else
of the ``default`` group.

As in Kafka:

* the ``default`` group is the fallback for every topic: its ``include``/``exclude`` are
  accepted (and checked) but do not keep a topic out of it; a group named ``default`` in
  ``topic.creation.groups`` is ignored;
* only ``partitions`` and ``replication.factor`` fall back to the default group's values; the
  default group's topic-level configs are not copied into other groups;
* lists are comma separated (whitespace around items trimmed), so a regex cannot contain ``,``.

Stricter than Kafka: a listed group without ``include`` is a validation error (Kafka accepts it
and the group then matches no topic); a group with ``cleanup.policy=compact`` is refused for a
connector whose records have no key, when the connector says so
(:meth:`~connectrt.api.SourceConnector.records_have_keys`) and no transform could set one
(:func:`compacted_group_errors`); and replication factors above the cluster's broker count are
refused at validate time (:mod:`connectrt.runtime.config.cluster_limits`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from connectrt.api.config import ConfigType, parse_type
from connectrt.errors import ConfigError, ConnectError
from connectrt.runtime.clients.kafka import (
    KafkaAdmin,
    KafkaError,
    KafkaException,
    NewTopic,
    new_admin,
)

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_GROUP",
    "TopicCreationConfig",
    "TopicCreationGroup",
    "TopicCreator",
    "compacted_group_errors",
    "uses_topic_creation",
    "validate_topic_creation",
]

PREFIX = "topic.creation."
GROUPS_CONFIG = "topic.creation.groups"
DEFAULT_GROUP = "default"
INCLUDE = "include"
EXCLUDE = "exclude"
PARTITIONS = "partitions"
REPLICATION_FACTOR = "replication.factor"
_GROUP_KEYS = frozenset({INCLUDE, EXCLUDE, PARTITIONS, REPLICATION_FACTOR})
DEFAULT_PARTITIONS_CONFIG = PREFIX + DEFAULT_GROUP + "." + PARTITIONS
DEFAULT_REPLICATION_FACTOR_CONFIG = PREFIX + DEFAULT_GROUP + "." + REPLICATION_FACTOR
BROKER_DEFAULT = -1
"""``partitions`` / ``replication.factor`` value meaning "the broker's default"."""

_PARTITIONS_MSG = "Number of partitions must be positive, or -1 to use the broker's default"
_RF_MSG = (
    "Replication factor must be positive and not larger than the number of brokers in the Kafka "
    "cluster, or -1 to use the broker's default"
)


@dataclass(frozen=True)
class TopicCreationGroup:
    """One group's settings. Immutable; safe to share between threads."""

    name: str
    include: tuple[re.Pattern[str], ...]
    exclude: tuple[re.Pattern[str], ...]
    partitions: int
    replication_factor: int
    configs: Mapping[str, str] = field(default_factory=dict)

    def matches(self, topic: str) -> bool:
        """True when an include regex fully matches ``topic`` and no exclude regex does."""
        if any(p.fullmatch(topic) for p in self.exclude):
            return False
        return any(p.fullmatch(topic) for p in self.include)

    def new_topic(self, topic: str) -> NewTopic:
        return NewTopic(
            topic,
            num_partitions=self.partitions,
            replication_factor=self.replication_factor,
            config=dict(self.configs),
        )


@dataclass(frozen=True)
class TopicCreationConfig:
    """The parsed ``topic.creation.*`` settings of one connector. Immutable."""

    default: TopicCreationGroup
    groups: tuple[TopicCreationGroup, ...] = ()

    @classmethod
    def from_connector_config(cls, config: Mapping[str, str]) -> TopicCreationConfig | None:
        """The settings, or None when topic creation is not used (the two required default-group
        keys are not both set). Raises ConfigError (first problem) when they are invalid."""
        if not (
            config.get(DEFAULT_PARTITIONS_CONFIG) and config.get(DEFAULT_REPLICATION_FACTOR_CONFIG)
        ):
            return None
        parsed, errors = _parse(config)
        if errors:
            key, messages = next(iter(errors.items()))
            raise ConfigError(messages[0], key, config.get(key))
        assert parsed is not None
        return parsed

    def group_for(self, topic: str) -> TopicCreationGroup:
        """The first listed group matching ``topic``, else the default group."""
        for group in self.groups:
            if group.matches(topic):
                return group
        return self.default


def uses_topic_creation(config: Mapping[str, str | None]) -> bool:
    """Whether ``config`` has any ``topic.creation.*`` key (then the default keys are required)."""
    return any(k.startswith(PREFIX) and v is not None for k, v in config.items())


def validate_topic_creation(config: Mapping[str, str | None]) -> dict[str, list[str]]:
    """Per-key error messages for the ``topic.creation.*`` settings of ``config`` (empty if
    valid, or if no ``topic.creation.*`` key is set)."""
    if not uses_topic_creation(config):
        return {}
    return _parse(config)[1]


def compacted_group_errors(config: Mapping[str, str | None]) -> dict[str, list[str]]:
    """Per-key errors for the groups of ``config`` (default and listed) whose
    ``cleanup.policy`` includes ``compact``: for a connector whose records carry no key (a
    compacted topic refuses a record without a key: Kafka's "Broker failed to validate
    record"). The caller decides that the records have no key."""
    errors: dict[str, list[str]] = {}
    names = [DEFAULT_GROUP, *(g.strip() for g in (config.get(GROUPS_CONFIG) or "").split(","))]
    for name in dict.fromkeys(n for n in names if n):
        key = f"{PREFIX}{name}.cleanup.policy"
        value = config.get(key)
        policies = {p.strip().lower() for p in (value or "").split(",")}
        if "compact" in policies:
            errors[key] = [
                _invalid(
                    key,
                    value,
                    "a topic with cleanup.policy=compact accepts only records with a key, and "
                    "this connector's records have none (nor does any transform set one), so "
                    "the broker would refuse every record it writes to such a topic. Remove "
                    "compact from the policy, or add transforms that set a key (e.g. "
                    "ValueToKey)",
                )
            ]
    return errors


def _invalid(key: str, value: object, reason: str) -> str:
    return f"Invalid value {value} for configuration {key}: {reason}"


def _parse(
    config: Mapping[str, str | None],
) -> tuple[TopicCreationConfig | None, dict[str, list[str]]]:
    errors: dict[str, list[str]] = {}

    def error(key: str, message: str) -> None:
        errors.setdefault(key, []).append(message)

    def typed(key: str, type_: ConfigType) -> Any:
        try:
            return parse_type(key, config.get(key), type_)
        except ConfigError as e:
            error(key, str(e))
            return None

    def patterns(key: str, default: list[str]) -> tuple[re.Pattern[str], ...]:
        items = typed(key, ConfigType.LIST) if config.get(key) is not None else default
        out = []
        for item in items or ():
            try:
                out.append(re.compile(item))
            except re.error as e:
                error(
                    key, _invalid(key, config.get(key), f"Syntax error in regular expression: {e}")
                )
        return tuple(out)

    def count(key: str, type_: ConfigType, reason: str, inherited: int | None) -> int | None:
        if config.get(key) is None:
            if inherited is None and not errors.get(key):
                error(key, f'Missing required configuration "{key}" which has no default value.')
            return inherited
        n = typed(key, type_)
        if n is not None and n != BROKER_DEFAULT and n < 1:
            error(key, _invalid(key, n, reason))
            return None
        return n

    def other_configs(group: str) -> dict[str, str]:
        prefix = f"{PREFIX}{group}."
        return {
            k[len(prefix) :]: str(v)
            for k, v in config.items()
            if k.startswith(prefix) and v is not None and k[len(prefix) :] not in _GROUP_KEYS
        }

    default_prefix = f"{PREFIX}{DEFAULT_GROUP}."
    default_partitions = count(DEFAULT_PARTITIONS_CONFIG, ConfigType.INT, _PARTITIONS_MSG, None)
    default_rf = count(DEFAULT_REPLICATION_FACTOR_CONFIG, ConfigType.SHORT, _RF_MSG, None)
    default = TopicCreationGroup(
        DEFAULT_GROUP,
        patterns(default_prefix + INCLUDE, [".*"]),
        patterns(default_prefix + EXCLUDE, []),
        default_partitions if default_partitions is not None else BROKER_DEFAULT,
        default_rf if default_rf is not None else BROKER_DEFAULT,
        other_configs(DEFAULT_GROUP),
    )

    names: list[str] = typed(GROUPS_CONFIG, ConfigType.LIST) or []
    if len(names) != len(set(names)):
        error(
            GROUPS_CONFIG,
            _invalid(GROUPS_CONFIG, config.get(GROUPS_CONFIG), "Duplicate alias provided."),
        )
    groups: list[TopicCreationGroup] = []
    for name in dict.fromkeys(names):
        if name == DEFAULT_GROUP:
            continue  # always the fallback group (Kafka ignores it in the list too)
        if not name:
            error(
                GROUPS_CONFIG,
                _invalid(GROUPS_CONFIG, config.get(GROUPS_CONFIG), "Empty group name."),
            )
            continue
        prefix = f"{PREFIX}{name}."
        if config.get(prefix + INCLUDE) is None:
            error(
                prefix + INCLUDE,
                f'Missing required configuration "{prefix + INCLUDE}" which has no default '
                f"value (topic creation group '{name}' is listed in {GROUPS_CONFIG}).",
            )
        partitions = count(prefix + PARTITIONS, ConfigType.INT, _PARTITIONS_MSG, default.partitions)
        rf = count(
            prefix + REPLICATION_FACTOR, ConfigType.SHORT, _RF_MSG, default.replication_factor
        )
        groups.append(
            TopicCreationGroup(
                name,
                patterns(prefix + INCLUDE, []),
                patterns(prefix + EXCLUDE, []),
                partitions if partitions is not None else BROKER_DEFAULT,
                rf if rf is not None else BROKER_DEFAULT,
                other_configs(name),
            )
        )
    if errors:
        return None, errors
    return TopicCreationConfig(default, tuple(groups)), {}


class TopicCreator:
    """Creates the topics a source task produces to, once per topic and task.

    :meth:`ensure` lists the cluster's topics (``list_topics()`` for all topics: a metadata
    request naming the topic may auto-create it) and, when the topic is missing, creates it with
    the settings of its group. ``TOPIC_ALREADY_EXISTS`` (another task won the race) is fine.
    The admin client is created on first use.

    Thread contract: one creator per task, used from the task thread only.
    """

    def __init__(
        self,
        admin_config: dict[str, Any],
        creation: TopicCreationConfig,
        timeout: float = 30.0,
        admin_factory: Callable[[dict[str, Any]], KafkaAdmin] = new_admin,
    ) -> None:
        self._admin_config = admin_config
        self.creation = creation
        self._timeout = timeout
        self._admin_factory = admin_factory
        self._admin: KafkaAdmin | None = None
        self._ensured: set[str] = set()

    def ensure(self, topic: str) -> None:
        """Make sure ``topic`` exists; raise ConnectError if it neither exists nor can be made."""
        if topic in self._ensured:
            return
        if self._admin is None:
            self._admin = self._admin_factory(self._admin_config)
        admin = self._admin
        log.info(
            "Task will send records to topic '%s' for the first time; checking it exists", topic
        )
        try:
            existing = admin.list_topics(timeout=self._timeout).topics
        except KafkaException as e:
            raise ConnectError(
                f"Could not list topics to check whether '{topic}' exists: {e}"
            ) from e
        if topic in existing:
            log.debug("Topic '%s' already exists", topic)
            self._ensured.add(topic)
            return
        group = self.creation.group_for(topic)
        new = group.new_topic(topic)
        future = admin.create_topics([new], operation_timeout=self._timeout)[topic]
        try:
            future.result(self._timeout)
        except KafkaException as e:
            err = e.args[0] if e.args else None
            if not (isinstance(err, KafkaError) and err.code() == KafkaError.TOPIC_ALREADY_EXISTS):
                raise ConnectError(
                    f"Task failed to create new topic '{topic}' (creation group '{group.name}', "
                    f"partitions={group.partitions}, replication.factor="
                    f"{group.replication_factor}, configs={dict(group.configs)}): {e}. Ensure "
                    "that the task is authorized to create topics or that the topic exists and "
                    "restart the task"
                ) from e
            log.info("Found existing topic '%s'", topic)
        except Exception as e:  # timeout (concurrent.futures.TimeoutError) and others
            raise ConnectError(
                f"Task failed to create new topic '{topic}' (creation group '{group.name}'): "
                f"{e!r}. Ensure that the task is authorized to create topics or that the topic "
                "exists and restart the task"
            ) from e
        else:
            log.info(
                "Created topic '%s' using creation group '%s' (partitions=%d, "
                "replication.factor=%d, configs=%s)",
                topic,
                group.name,
                group.partitions,
                group.replication_factor,
                dict(group.configs),
            )
        self._ensured.add(topic)

    def close(self) -> None:
        """Drop the admin client (confluent-kafka frees it when unreferenced)."""
        self._admin = None
