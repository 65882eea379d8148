"""pytest fixtures for connector authors: ``broker``, ``unique_name``, ``postgres``, ``spark``,
``spark_connect_server`` and ``spark_connect``.

Enable in a ``conftest.py`` with ``pytest_plugins = ["connectrt.testing.pytest_plugin"]``.
``CONNECTRT_TEST_BROKER`` chooses the broker (see :mod:`connectrt.testing.broker_choice`).
"""

from __future__ import annotations

import itertools
import re
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest

from connectrt.testing.broker_choice import SessionBroker, broker_from_env
from connectrt.testing.kafka_broker import KafkaBroker

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from connectrt.testing.postgres import PostgresServer
    from connectrt.testing.spark_connect import SparkConnectServer

_counter = itertools.count()


# Data folders of Apache Kafka test brokers kept because tests failed; named in the summary.
_kept_broker_folders: list[str] = []


@pytest.fixture(scope="session")
def broker(request: pytest.FixtureRequest) -> Iterator[SessionBroker]:
    """One broker for the whole session, chosen by ``CONNECTRT_TEST_BROKER``: ``embedded``
    (the default: the in-memory embedded broker), ``kafka`` (a single-node Apache Kafka started
    for the session) or ``HOST:PORT`` (a broker you run, neither started nor stopped here).

    Isolate tests by unique topic and group names (see ``unique_name``), never by restarting it.
    When tests failed, an Apache Kafka broker's data folder and log are kept and named at the
    end of the run.
    """
    chosen = broker_from_env()
    chosen.start()
    try:
        yield chosen
    finally:
        if isinstance(chosen, KafkaBroker) and request.session.testsfailed:
            keep_broker_log(request, chosen)
        chosen.stop()


def keep_broker_log(request: pytest.FixtureRequest, broker: KafkaBroker) -> None:
    """Keep ``broker``'s data folder and log (call before it stops) and name them in the run's
    summary: for a fixture whose broker served failed tests (e.g. a module's own broker that
    its tests kill)."""
    broker.keep_data = True
    _kept_broker_folders.append(str(broker.log_path))
    # A pytest-xdist worker: its controller prints the summary.
    worker_output = getattr(request.config, "workeroutput", None)
    if worker_output is not None:
        worker_output["connectrt_kept_broker_logs"] = list(_kept_broker_folders)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """pytest-xdist's controller: collect the broker logs a worker kept."""
    output = getattr(node, "workeroutput", None) or {}
    _kept_broker_folders.extend(output.get("connectrt_kept_broker_logs", ()))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Name the Apache Kafka broker logs kept for failed tests."""
    for log_path in _kept_broker_folders:
        terminalreporter.write_line(f"Apache Kafka test broker log kept: {log_path}")


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """A factory of names unique to this test run: ``unique_name("offsets")``.

    Names use only characters valid in Kafka topic and group names.
    """
    test = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name)[:80].strip("-")
    run = uuid.uuid4().hex[:8]

    def make(prefix: str = "t") -> str:
        return f"{prefix}-{test}-{run}-{next(_counter)}"

    return make


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A private PostgreSQL server for the session (Debian's binaries, installed when missing).

    Isolate tests with ``postgres.create_database(name)``, never by restarting the server.
    """
    from connectrt.testing.postgres import PostgresServer

    with PostgresServer() as server:
        yield server


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """One local SparkSession for the session (see :mod:`connectrt.testing.spark`)."""
    from connectrt.testing.spark import local_spark_session

    session = local_spark_session()
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_connect_server() -> Iterator[SparkConnectServer]:
    """One local Spark Connect server for the session, started from the installed pyspark
    (see :mod:`connectrt.testing.spark_connect`); its Python workers import this project."""
    from connectrt.testing.spark_connect import SparkConnectServer

    with SparkConnectServer() as server:
        yield server


@pytest.fixture(scope="module")
def spark_connect(spark_connect_server: SparkConnectServer) -> Iterator[SparkSession]:
    """A Spark Connect client session on :func:`spark_connect_server`, for one test module.

    PySpark switches its functions (``pyspark.sql.functions`` and others) to Spark Connect
    while ``SPARK_CONNECT_MODE_ENABLED`` is set; it is set for the module and removed after,
    so a classic ``spark`` session in the same pytest run keeps working.
    """
    import os

    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    had = os.environ.get("SPARK_CONNECT_MODE_ENABLED")
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    session = RemoteSparkSession.builder.remote(spark_connect_server.url).create()
    try:
        yield session  # type: ignore[misc]
    finally:
        try:
            session.stop()
        finally:
            if had is None:
                os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
            else:
                os.environ["SPARK_CONNECT_MODE_ENABLED"] = had
