"""``connectrt spark WORKER.properties``: the distributed worker with its tasks on Spark.

The Spark driver runs what ``connectrt worker`` runs (herder, REST API, config/status/offset
topics, control topic, schema registry); only the worker's task executor differs
(:class:`~connectrt.spark.backend.SparkTaskExecutor`). Under ``spark-submit`` the session
comes from spark-submit's settings; run directly, the worker properties' ``spark.*`` keys
build it (``spark.master`` defaults to ``local[*,4]``: all cores, 4 attempts per task). With
``spark.remote=sc://host:port`` the session is a Spark Connect client and tasks are launched
through the DataFrame API (:class:`~connectrt.spark.launchers.ConnectLauncher`).
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

__all__ = ["build_spark_worker", "run_spark_worker"]

log = logging.getLogger(__name__)


def build_spark_worker(
    props: Mapping[str, str], session: SparkSession
) -> tuple[WorkerProcess, SparkTaskExecutor]:
    """A worker process (``worker`` mode) whose tasks run on ``session``'s cluster.

    Starts the executor (creates the signal topic, begins relaying statuses); the caller runs
    the process (:meth:`WorkerProcess.run`), whose stop also stops the executor.
    """
    props = {**props, "task.executor": "spark"}
    config = SparkBackendConfig.from_props(props)
    wc = WorkerConfig.from_props(props)
    process = WorkerProcess.build(props, "worker")
    worker = process.herder.worker
    worker.offset_store = FreshOffsetStore(worker.offset_store)
    launcher: TaskLauncher
    if is_connect_session(session):
        launcher = ConnectLauncher(session, config.slots or None)
    else:
        launcher = ClassicLauncher(session.sparkContext)
    executor = SparkTaskExecutor(launcher, wc, config)
    process.herder.worker.executor = executor
    executor.start()
    return process, executor


def run_spark_worker(worker_props_path: str, stop_event: threading.Event | None = None) -> int:
    """Run until SIGINT/SIGTERM (or ``stop_event``); bad input raises ConfigError first."""
    props = load_properties(worker_props_path)
    SparkBackendConfig.from_props(props)  # fail on bad settings before Spark starts
    WorkerConfig.from_props(props)
    session = spark_session_from_props(props)
    stop = stop_event or threading.Event()
    install_signal_handlers(stop)
    try:
        process, _executor = build_spark_worker(props, session)
        process.run((), stop)
    finally:
        session.stop()
    return 0
