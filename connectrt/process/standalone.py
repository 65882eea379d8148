"""The standalone worker: one process, connectors given as files on the command line.

``run_standalone`` loads the worker properties, opens the offset store (the Kafka topic by
default), starts every connector file's connector and runs until SIGINT/SIGTERM, then stops
gracefully: tasks stop, flush and commit their offsets before the process exits.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Sequence
from types import FrameType

from connectrt.errors import ConfigError
from connectrt.process.assembly import WorkerProcess
from connectrt.runtime.clients.settings import OverridePolicy
from connectrt.runtime.config.connector import validate_connector_config
from connectrt.runtime.config.worker import WorkerConfig
from connectrt.runtime.plugins.registry import registry
from connectrt.runtime.properties import load_connector_file, load_properties

log = logging.getLogger(__name__)

__all__ = ["install_signal_handlers", "run_distributed", "run_standalone"]

_INITIAL_STATES = ("RUNNING", "PAUSED", "STOPPED")


def install_signal_handlers(stop: threading.Event) -> None:
    def _on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("Received signal %d, stopping", signum)
        stop.set()

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, _on_signal)


def run_standalone(
    worker_props_path: str,
    connector_paths: Sequence[str],
    stop_event: threading.Event | None = None,
) -> int:
    """``connectrt standalone``: the command-line connectors, plus the REST API.

    Connector configs live in memory (as with Kafka's connect-standalone): the files given on
    the command line are started again at every start. Runs until SIGINT/SIGTERM (or
    ``stop_event``). Raises ConfigError for bad input, before anything starts.
    """

    connectors = [load_connector_file(p) for p in connector_paths]
    props = load_properties(worker_props_path)
    wc = WorkerConfig.from_props(props)
    policy = OverridePolicy.from_worker_config(wc)
    registry.add_plugin_path(wc["plugin.path"], wc["plugin.packages"])
    for _name, config, initial in connectors:
        validate_connector_config(
            config,
            registry,
            policy,
            executor=wc["task.executor"],
            exactly_once_source=wc["exactly.once.source.support"],
        ).raise_if_invalid()
        if (initial or "RUNNING").upper() not in _INITIAL_STATES:
            raise ConfigError(f"Invalid initial_state {initial} for connector {_name}")
    stop = stop_event or threading.Event()
    install_signal_handlers(stop)
    WorkerProcess.build(props, "standalone").run(connectors, stop)
    return 0


def run_distributed(worker_props_path: str, stop_event: threading.Event | None = None) -> int:
    """``connectrt worker``: connectors are managed over REST and stored in Kafka topics."""

    props = load_properties(worker_props_path)
    stop = stop_event or threading.Event()
    install_signal_handlers(stop)
    WorkerProcess.build(props, "worker").run((), stop)
    return 0
