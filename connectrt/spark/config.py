"""Worker settings of the Spark executor backend (``task.executor=spark``).

Every ``spark.*`` key of the worker properties is handed to the SparkSession builder as is
(``spark.master``, ``spark.task.maxFailures``, ``spark.submit.pyFiles``...). The backend's own
keys start with ``task.executor.spark.`` so that Spark never sees them (``task.executor``
itself is a worker key). Pure Python: importing this module does not import pyspark.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connectrt.api.config import ConfigDef, ConfigType, Importance, Range
from connectrt.errors import ConfigError
from connectrt.runtime.config.worker_def import WORKER_CONFIG_DEF

__all__ = ["SPARK_BACKEND_CONFIG_DEF", "SparkBackendConfig", "spark_conf"]

SPARK_BACKEND_CONFIG_DEF = (
    ConfigDef()
    .define(
        "task.executor.spark.signal.topic",
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "Topic carrying pause/resume/stop signals from the driver to tasks on executors "
        "(default: <config.storage.topic>-spark-signals; created with one partition).",
    )
    .define(
        "task.executor.spark.slots",
        ConfigType.INT,
        0,
        Range.at_least(0),
        Importance.LOW,
        "Task slots of the Spark cluster (executor cores over spark.task.cpus), fixed. 0 (the "
        "default): on a cluster master, the slots of the executors registered with the "
        "driver, followed as executors join and leave (see "
        "task.executor.spark.slots.poll.ms); on a local master its threads; over Spark "
        "Connect the server's spark.default.parallelism. Set it to pin the count, e.g. with "
        "dynamic allocation, whose executors come and go with the load.",
    )
    .define(
        "task.executor.spark.slots.poll.ms",
        ConfigType.LONG,
        2000,
        Range.at_least(100),
        Importance.LOW,
        "How often the driver reads the registered executors' slots on a cluster master "
        "(when task.executor.spark.slots is 0); tasks waiting for slots start when enough "
        "appear.",
    )
    .define(
        "task.executor.spark.executors.wait.ms",
        ConfigType.LONG,
        60000,
        Range.at_least(0),
        Importance.LOW,
        "At startup on a cluster master (task.executor.spark.slots 0), how long to wait for "
        "executors to register before starting connectors: until the slots spark.cores.max "
        "or spark.executor.instances x spark.executor.cores promise, else the first slot. "
        "Connectors that do not fit afterwards wait UNASSIGNED until slots appear.",
    )
    .define(
        "task.executor.spark.free.slots",
        ConfigType.INT,
        None,
        Range.at_least(0),
        Importance.LOW,
        "Slots kept free beyond the long-running connector tasks (for other Spark jobs); the "
        "tasks of a connector that would leave fewer free wait (UNASSIGNED, the reason in "
        "their trace) until slots appear or other tasks end. "
        "Default: 0 on a local master (its slots are threads: local[2] runs a source and a "
        "sink task), 1 on a cluster.",
    )
    .define(
        "task.executor.spark.cancel.wait.ms",
        ConfigType.LONG,
        10000,
        Range.at_least(0),
        Importance.LOW,
        "After task.shutdown.graceful.timeout.ms a task still running is cancelled (its "
        "Spark job is killed, no final commit); how long to wait for the cancel to finish.",
    )
)


@dataclass(frozen=True)
class SparkBackendConfig:
    """The parsed ``task.executor*`` keys (immutable)."""

    executor: str
    signal_topic: str
    slots: int
    free_slots: int | None  # None: free_slots_for(master) decides
    cancel_wait_s: float
    slots_poll_s: float = 2.0
    executors_wait_s: float = 60.0

    def free_slots_for(self, master: str) -> int:
        """Slots to keep free on ``master``: as configured, else 0 on ``local[...]`` (a local
        master's slots are threads, and more cost nothing but ``local[N]``), else 1."""
        if self.free_slots is not None:
            return self.free_slots
        return 0 if master.startswith("local") else 1

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> SparkBackendConfig:
        known = {k: v for k, v in props.items() if k in SPARK_BACKEND_CONFIG_DEF.keys}
        executor = WORKER_CONFIG_DEF.parse(
            {"task.executor": props.get("task.executor", "threads")}
        )["task.executor"]
        values: dict[str, Any] = SPARK_BACKEND_CONFIG_DEF.parse(known)
        topic = values["task.executor.spark.signal.topic"] or (
            f"{props.get('config.storage.topic', 'connect-configs')}-spark-signals"
        )
        if props.get("offset.storage.type", "kafka") != "kafka":
            raise ConfigError(
                "task.executor=spark needs offset.storage.type=kafka: tasks on executors read "
                "and commit source offsets through the offsets topic",
                "offset.storage.type",
            )
        return cls(
            executor,
            topic,
            values["task.executor.spark.slots"],
            values["task.executor.spark.free.slots"],
            values["task.executor.spark.cancel.wait.ms"] / 1000.0,
            values["task.executor.spark.slots.poll.ms"] / 1000.0,
            values["task.executor.spark.executors.wait.ms"] / 1000.0,
        )


def spark_conf(props: Mapping[str, str]) -> dict[str, str]:
    """The ``spark.*`` keys of the worker properties, for the SparkSession builder."""
    return {k: str(v) for k, v in props.items() if k.startswith("spark.")}
