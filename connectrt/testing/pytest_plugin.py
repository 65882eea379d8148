"""pytest fixtures for connector authors: ``broker`` and ``unique_name``.

Enable in a ``conftest.py`` with ``pytest_plugins = ["connectrt.testing.pytest_plugin"]``.
"""

from __future__ import annotations

import itertools
import re
import uuid
from collections.abc import Callable, Iterator

import pytest

from connectrt.testing.broker import EmbeddedBroker

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
