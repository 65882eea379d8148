"""``connectrt spark WORKER.properties``: the distributed worker with its tasks on Spark.

The Spark driver runs what ``connectrt worker`` runs (herder, REST API, config/status/offset
topics, control topic, schema registry); only the worker's task executor differs
(:class:`~connectrt.spark.backend.SparkTaskExecutor`). Under ``spark-submit`` the session
comes from spark-submit's settings; run directly, the worker properties' ``spark.*`` keys
build it (``spark.master`` defaults to ``local[*,4]``: all cores, 4 attempts per task). With
``spark.remote=sc://host:port`` the session is a Spark Connect client and tasks are launched
through the DataFrame API (:class:`~connectrt.spark.launchers.ConnectLauncher`). With
``standby.enable=true`` the session (the Spark application) is created only once the worker is
elected leader (:attr:`WorkerProcess.prepare`, :mod:`connectrt.process.standby`): a standby
runs no Spark driver.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from connectrt.process.assembly import WorkerProcess
from connectrt.process.standalone import install_signal_handlers
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.properties import load_properties
from connectrt.spark.backend import SparkTaskExecutor
from connectrt.spark.config import SparkBackendConfig
from connectrt.spark.launchers import ClassicLauncher, ConnectLauncher, TaskLauncher
from connectrt.spark.offsets_view import FreshOffsetStore
from connectrt.spark.python_env import is_connect_session
from connectrt.spark.session import spark_session_from_props

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["attach_spark", "build_spark_worker", "run_spark_worker"]

log = logging.getLogger(__name__)


def build_spark_worker(
    props: Mapping[str, str], session: SparkSession
) -> tuple[WorkerProcess, SparkTaskExecutor]:
    """A worker process (``worker`` mode) whose tasks run on ``session``'s cluster.

    Starts the executor (creates the signal topic, begins relaying statuses); the caller runs
    the process (:meth:`WorkerProcess.run`), whose stop also stops the executor.
    """
    process = WorkerProcess.build(_spark_props(props), "worker")
    return process, attach_spark(process, props, session)


def _spark_props(props: Mapping[str, str]) -> dict[str, str]:
    return {**props, "task.executor": "spark"}


def attach_spark(
    process: WorkerProcess, props: Mapping[str, str], session: SparkSession
) -> SparkTaskExecutor:
    """Make ``session``'s cluster the task executor of ``process`` (built from ``props``, not
    started) and start it (creates the signal topic, begins relaying statuses)."""
    config = SparkBackendConfig.from_props(_spark_props(props))
    # The herder's config: its client security keys' config provider references resolved at
    # start-up (executors get the values, as every task client does; never the references,
    # which an executor could not resolve without the driver's providers and files).
    wc = process.herder.config
    worker = process.herder.worker
    worker.offset_store = FreshOffsetStore(worker.offset_store)
    launcher: TaskLauncher
    if is_connect_session(session):
        launcher = ConnectLauncher(session, config.slots or None)
    else:
        launcher = ClassicLauncher(session.sparkContext)
    executor = SparkTaskExecutor(launcher, wc, config)
    worker.executor = executor
    executor.start()
    return executor


def run_spark_worker(worker_props_path: str, stop_event: threading.Event | None = None) -> int:
    """Run until SIGINT/SIGTERM (or ``stop_event``); bad input raises ConfigError first.

    A single worker starts its Spark application (the SparkSession) before its herder; with
    ``standby.enable=true`` only once it is elected leader, so that a standby runs no Spark
    driver (a deposed leader restarts its process image, which ends its driver JVM with it)."""
    props = load_properties(worker_props_path)
    SparkBackendConfig.from_props(props)  # fail on bad settings before Spark starts
    WorkerConfig.from_props(props)
    stop = stop_event or threading.Event()
    sessions: list[SparkSession] = []
    try:
        process = WorkerProcess.build(_spark_props(props), "worker")

        def start_spark() -> None:
            log.info("Starting this worker's Spark application")
            sessions.append(spark_session_from_props(props))
            attach_spark(process, props, sessions[0])

        if process.herder.config["standby.enable"]:
            # On the leadership's thread once elected: pyspark installs its own SIGINT handler
            # (cancel every job) only on the main thread, so ours below stays in place.
            process.prepare = start_spark
        else:
            start_spark()  # before our signal handlers, which replace pyspark's SIGINT one
        install_signal_handlers(stop)
        process.run((), stop)
    finally:
        for session in sessions:
            session.stop()
    return 0
