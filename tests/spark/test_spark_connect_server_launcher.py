"""The test Spark Connect server's launcher on a busy machine: a port chosen free and taken
before the JVM binds it (a loaded CI lost every Spark Connect test to one such port)."""

from __future__ import annotations

import logging
import socket

import pytest

from connectrt.errors import ConnectError
from connectrt.ports import free_port
from connectrt.testing.spark_connect import SparkConnectServer

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def test_a_port_taken_before_the_server_binds_it_starts_it_again_elsewhere(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The first port the launcher chooses is taken before the JVM binds it (here: by this
    # test, listening on it), as an outgoing connection's ephemeral port may be.
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    taken_port = taken.getsockname()[1]
    ports = iter([taken_port])
    monkeypatch.setattr(
        "connectrt.testing.spark_connect.free_port", lambda: next(ports, None) or free_port()
    )
    server = SparkConnectServer(master="local[1]")
    try:
        with caplog.at_level(logging.WARNING, logger="connectrt.testing.spark_connect"):
            server.start()
        assert server.port != taken_port
        assert f"port {taken_port} was taken" in caplog.text
        assert "attempt 2 of 3" in caplog.text
        with socket.create_connection(("127.0.0.1", server.port), timeout=10):
            pass  # the restarted server accepts connections on its new port
    finally:
        server.stop()
        taken.close()


def test_a_given_port_that_is_taken_fails_with_the_servers_reason() -> None:
    # A port the caller gave is not swapped for another: the start fails, saying why.
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    server = SparkConnectServer(master="local[1]", port=taken.getsockname()[1])
    try:
        with pytest.raises(ConnectError, match="exited with code") as caught:
            server.start()
        assert f"Failed to bind to address /127.0.0.1:{taken.getsockname()[1]}" in str(caught.value)
        assert not server.is_alive()
    finally:
        server.stop()
        taken.close()
