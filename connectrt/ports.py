"""Free loopback ports for test servers (broker, PostgreSQL, REST, registry)."""

from __future__ import annotations

import socket

__all__ = ["free_port"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (bind port 0, then close it).

    Another process may take it before the caller binds it; callers that start a server on
    it should retry or fail with a clear message.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
