"""pytest fixtures for connector authors: ``broker``, ``unique_name``, ``postgres``, ``spark``.

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
