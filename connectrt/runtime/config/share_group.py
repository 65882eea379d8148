"""Sink connector keys of share-group consumption (KIP-932; experimental).

``consumer.group.type=share`` runs a sink connector's tasks as members of the share group
``connect-<name>`` instead of the consumer group of that name (the default, ``classic``): every
task reads every partition of the subscription, each record is acquired by one task and
acknowledged by it, so ``tasks.max`` may exceed the partition count
(:mod:`connectrt.runtime.sink.share_runner`). ``share.record.lock.duration.ms`` and
``share.delivery.count.limit`` are set on the share group through the admin API when the
connector sets them (else the broker's group defaults apply); the group's
``share.auto.offset.reset`` comes from ``consumer.override.auto.offset.reset`` (default
``earliest``, as for Connect's sink consumers).

:data:`SHARE_GROUP_CONFIG_DEF` is merged into the sink framework definition;
:func:`share_group_errors` adds the errors that depend on several keys or on the installed
client; :func:`uses_share_group` and :func:`group_settings` serve the runtime. Read-only after
import; pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping

from connectrt.api.config import ConfigDef, ConfigType, Importance, Range, ValidString, Width
from connectrt.runtime.clients.share_consumer import share_consumer_available

__all__ = [
    "GROUP_TYPE",
    "SHARE_GROUP_CONFIG_DEF",
    "group_settings",
    "share_group_errors",
    "uses_share_group",
]

GROUP_TYPE = "consumer.group.type"
LOCK_DURATION = "share.record.lock.duration.ms"
DELIVERY_LIMIT = "share.delivery.count.limit"
_OFFSET_RESET = "consumer.override.auto.offset.reset"
_RESETS = ("earliest", "latest")
_GROUP = "Share Group (experimental)"

SHARE_GROUP_CONFIG_DEF = (
    ConfigDef()
    .define(
        GROUP_TYPE,
        ConfigType.STRING,
        "classic",
        ValidString.of("classic", "share", case_insensitive=True),
        Importance.MEDIUM,
        "connectrt, experimental: 'classic' (the default) runs the sink tasks in the consumer "
        "group connect-<name>, each partition read by one task; 'share' runs them in the "
        "share group connect-<name> (KIP-932, Apache Kafka 4.1+ and confluent-kafka 2.15+): "
        "every task reads every partition, each record is acquired by one task and "
        "acknowledged once put() and flush() returned, so tasks.max may exceed the partition "
        "count. Offsets cannot be altered or reset through the REST API for a share group.",
        group=_GROUP,
        order_in_group=1,
        width=Width.SHORT,
        display_name="Consumer group type",
    )
    .define(
        LOCK_DURATION,
        ConfigType.INT,
        None,
        Range.at_least(1000),
        Importance.LOW,
        "connectrt, with consumer.group.type=share: the share group's record lock duration "
        "(how long a task holds an acquired record before the broker hands it to another), "
        "set on the group when the tasks start. Unset: the group's or broker's value "
        "(group.share.record.lock.duration.ms, 30000); the broker bounds it "
        "(group.share.min/max.record.lock.duration.ms).",
        group=_GROUP,
        order_in_group=2,
        width=Width.SHORT,
        display_name="Record lock duration",
    )
    .define(
        DELIVERY_LIMIT,
        ConfigType.INT,
        None,
        Range.between(2, 10),
        Importance.LOW,
        "connectrt, with consumer.group.type=share: how many times the broker delivers a "
        "record before it archives it (the retry budget of put()'s retriable errors), set on "
        "the group when the tasks start. Unset: the group's or broker's value "
        "(group.share.delivery.count.limit, 5).",
        group=_GROUP,
        order_in_group=3,
        width=Width.SHORT,
        display_name="Delivery count limit",
    )
)


def uses_share_group(config: Mapping[str, str | None]) -> bool:
    """Whether a sink connector config asks for share-group consumption."""
    return str(config.get(GROUP_TYPE) or "classic").strip().lower() == "share"


def group_settings(config: Mapping[str, str | None]) -> dict[str, str]:
    """The share group configs the runtime sets for a connector: ``share.auto.offset.reset``
    (``consumer.override.auto.offset.reset``, default ``earliest``) and the lock duration and
    delivery limit where the connector sets them."""
    reset = str(config.get(_OFFSET_RESET) or "earliest").strip().lower()
    out = {"share.auto.offset.reset": reset}
    for key in (LOCK_DURATION, DELIVERY_LIMIT):
        value = config.get(key)
        if value is not None and str(value).strip():
            out[key] = str(value).strip()
    return out


def share_group_errors(config: Mapping[str, str | None]) -> dict[str, str]:
    """Config key -> error for a sink connector config asking for a share group that cannot
    run: a client without share consumers, a ``topics.regex`` subscription (share consumers
    subscribe to named topics only), an offset reset a share group does not know. Empty when
    the connector uses a classic group."""
    if not uses_share_group(config):
        return {}
    errors: dict[str, str] = {}
    if not share_consumer_available():
        errors[GROUP_TYPE] = (
            "consumer.group.type=share needs confluent-kafka 2.15 or later (its ShareConsumer); "
            "the installed client has no share consumer"
        )
    if (config.get("topics.regex") or "").strip():
        errors["topics.regex"] = (
            "topics.regex cannot be used with consumer.group.type=share: share consumers "
            "subscribe to named topics only (list them in topics)"
        )
    reset = config.get(_OFFSET_RESET)
    if reset is not None and reset.strip().lower() not in _RESETS:
        errors[_OFFSET_RESET] = (
            f"Invalid value {reset} for configuration {_OFFSET_RESET} with "
            f"consumer.group.type=share: String must be one of: {', '.join(_RESETS)} (it "
            "becomes the share group's share.auto.offset.reset)"
        )
    return errors
