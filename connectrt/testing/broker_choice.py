"""Which broker the tests run on: ``CONNECTRT_TEST_BROKER``.

* ``embedded`` (the default, also when unset or empty): :class:`connectrt.broker.EmbeddedBroker`,
  the in-memory Tansu broker; no Java needed.
* ``kafka``: :class:`connectrt.testing.kafka_broker.KafkaBroker`, a single-node Apache Kafka
  started for the session (Java 17+; Maven the first time, to fetch the jars).
* ``HOST:PORT`` (``[::1]:9092`` for IPv6): :class:`ExternalBroker`, a broker the user runs;
  the tests neither start nor stop it, they check that it answers a metadata request.

All three offer the :class:`SessionBroker` interface the ``broker`` fixture yields.

``make test`` and CI choose with :func:`default_test_broker` (``python -m
connectrt.testing.broker_choice`` prints it): Apache Kafka wherever Java 17+ runs and its jars
are cached or Maven can fetch them, the embedded broker elsewhere.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from connectrt.broker import EmbeddedBroker
from connectrt.errors import ConnectError
from connectrt.service import ManagedService
from connectrt.testing.java_runtime import JavaUnavailable, require_java
from connectrt.testing.kafka_broker import KafkaBroker
from connectrt.testing.kafka_jars import kafka_jars_cached

__all__ = [
    "TEST_BROKER_ENV",
    "ExternalBroker",
    "SessionBroker",
    "apache_kafka",
    "broker_from_env",
    "default_test_broker",
]

#: The environment variable that chooses the test broker.
TEST_BROKER_ENV = "CONNECTRT_TEST_BROKER"

_client_logger = logging.getLogger("connectrt.testing.broker_choice.client")


class SessionBroker(Protocol):
    """What tests may use of the ``broker`` fixture, whichever broker it is."""

    @property
    def port(self) -> int: ...

    @property
    def bootstrap_servers(self) -> str: ...

    @property
    def pid(self) -> int | None: ...

    def is_alive(self) -> bool: ...

    def output_tail(self) -> str: ...

    def start(self) -> SessionBroker: ...

    def stop(self) -> None: ...


class ExternalBroker(ManagedService):
    """A Kafka broker someone else runs at ``host:port``: never started or stopped here.

    ``start()`` only checks that it answers a metadata request within ``startup_timeout``
    seconds (ConnectError otherwise); ``stop()`` does nothing. ``pid`` is None and
    ``output_tail()`` empty: its process and logs are not ours. Thread-safe.
    """

    def __init__(self, host: str, port: int, *, startup_timeout: float = 30.0) -> None:
        self.host = host
        self._port = port
        self._startup_timeout = startup_timeout

    @property
    def port(self) -> int:
        return self._port

    @property
    def bootstrap_servers(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self._port}"

    @property
    def pid(self) -> int | None:
        return None

    def output_tail(self) -> str:
        return ""

    def is_alive(self) -> bool:
        """Whether the broker answers a metadata request within 5 s."""
        return self._metadata_error(5.0) is None

    def start(self) -> ExternalBroker:
        deadline = time.monotonic() + self._startup_timeout
        error = self._metadata_error(self._startup_timeout)
        while error is not None and time.monotonic() < deadline:
            time.sleep(0.5)
            error = self._metadata_error(max(deadline - time.monotonic(), 0.5))
        if error is not None:
            raise ConnectError(
                f"No Kafka broker answers at {self.bootstrap_servers} ({TEST_BROKER_ENV}) "
                f"within {self._startup_timeout:.0f} s: {error}"
            )
        return self

    def stop(self) -> None:
        """Nothing to do: the broker is not ours."""

    def _metadata_error(self, timeout: float) -> Exception | None:
        # Local import: only this adapter talks to the client library.
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        settings: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "socket.connection.setup.timeout.ms": 5000,
            "logger": _client_logger,
        }
        admin = AdminClient(settings)
        try:
            admin.list_topics(timeout=timeout)
        except KafkaException as exc:
            return exc
        return None


def broker_from_env(value: str | None = None) -> EmbeddedBroker | KafkaBroker | ExternalBroker:
    """The (not yet started) broker ``value`` names; ``None`` reads ``CONNECTRT_TEST_BROKER``.

    Raises ConnectError naming the three accepted forms for anything else.
    """
    if value is None:
        value = os.environ.get(TEST_BROKER_ENV, "")
    choice = value.strip()
    if choice in ("", "embedded"):
        return EmbeddedBroker()
    if choice == "kafka":
        return KafkaBroker()
    host, sep, port_text = choice.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if sep and host and port_text.isdigit() and 0 < int(port_text) < 65536:
        return ExternalBroker(host, int(port_text))
    raise ConnectError(
        f"{TEST_BROKER_ENV}={value!r}: expected 'embedded' (the default), 'kafka' (Apache "
        "Kafka started for the session) or HOST:PORT of a running broker"
    )


def default_test_broker() -> str:
    """``kafka`` where an Apache Kafka test broker can start (Java 17+, and its jars cached or
    ``mvn`` on ``PATH`` to fetch them), else ``embedded``: the value ``make test`` gives
    ``CONNECTRT_TEST_BROKER`` when the caller set none. Runs ``java -version`` once."""
    try:
        require_java()
    except JavaUnavailable:
        return "embedded"
    if kafka_jars_cached() or shutil.which("mvn"):
        return "kafka"
    return "embedded"


@contextmanager
def apache_kafka(broker: SessionBroker) -> Iterator[SessionBroker]:
    """``broker`` unless it is the embedded one, else an Apache Kafka started for the block and
    stopped after it: for tests of what the embedded broker does not do (KIP-848 and share
    groups, a right ListOffsets LATEST). Java 17+ (and Maven the first time) then."""
    if not isinstance(broker, EmbeddedBroker):
        yield broker
        return
    with KafkaBroker() as started:
        yield started


if __name__ == "__main__":
    print(default_test_broker())
