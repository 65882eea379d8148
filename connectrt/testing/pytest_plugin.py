"""pytest fixtures for connector authors: ``broker``, ``unique_name``, ``postgres``, ``spark``,
``spark_connect_server`` and ``spark_connect``.

Enable in a ``conftest.py`` with ``pytest_plugins = ["connectrt.testing.pytest_plugin"]``.
"""

from __future__ import annotations

import itertools
import re
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest

from connectrt.broker import EmbeddedBroker

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from connectrt.testing.postgres import PostgresServer
    from connectrt.testing.spark_connect import SparkConnectServer

_counter = itertools.count()


@pytest.fixture(scope="session")
def broker() -> Iterator[EmbeddedBroker]:
    """One embedded Kafka-protocol broker for the whole session (memory storage).

    Isolate tests by unique topic and group names (see ``unique_name``), never by restarting it.
    """
    with EmbeddedBroker() as embedded:
        yield embedded


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
