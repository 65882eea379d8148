"""The worker settings of standby workers (high availability, ``connectrt worker`` only).

With ``standby.enable=true`` several workers of one ``group.id`` (and the same internal topics)
form one cluster: Kafka's group coordinator picks the leader, which runs every connector and
task; the others stand by and forward connector requests to it
(:mod:`connectrt.runtime.herder.leadership`). Without it a second worker on the same topics is
refused, as before.
"""

from __future__ import annotations

from connectrt.api.config import ConfigDef, ConfigType, Importance, Range

__all__ = ["WORKER_STANDBY_CONFIG_DEF"]

WORKER_STANDBY_CONFIG_DEF = (
    ConfigDef()
    .define(
        "standby.enable",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "`connectrt worker`: let several workers with this group.id and the same internal "
        "topics form one cluster: one leader, chosen by Kafka's group coordinator, runs every "
        "connector and task; the others stand by, forward connector requests to it and take "
        "over when it fails. false: a second worker on the same topics is refused.",
    )
    .define(
        "standby.leadership.topic",
        ConfigType.STRING,
        "connect-leadership",
        None,
        Importance.LOW,
        "One-partition topic the workers' leadership group (consumer group "
        "'<group.id>-leadership') subscribes to; the member assigned its partition leads. "
        "Created if absent; never written. Several clusters may share it.",
    )
    .define(
        "standby.session.timeout.ms",
        ConfigType.INT,
        10000,
        Range.at_least(1000),
        Importance.MEDIUM,
        "session.timeout.ms of each worker's leadership group member: a leader whose process "
        "dies is replaced this long after its last heartbeat (plus a rebalance). Must lie "
        "within the broker's group.min/max.session.timeout.ms.",
    )
    .define(
        "standby.fence.margin.ms",
        ConfigType.INT,
        5000,
        Range.at_least(500),
        Importance.MEDIUM,
        "A leader whose membership the group coordinator has not confirmed for "
        "standby.session.timeout.ms minus this margin (a lost connection, a paused process) "
        "ends its connectors and tasks at once (its process restarts as a standby), before "
        "the coordinator can give the leadership to a successor. The margin covers the time "
        "to notice (0.1 s checks) and clock and scheduling slack. Must be less than "
        "standby.session.timeout.ms.",
    )
)
