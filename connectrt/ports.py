"""Free loopback ports for test servers (broker, PostgreSQL, REST, registry).

A port is free when chosen, and nothing holds it until the server binds it: a JVM may take
10-30 s to get there on a loaded machine. The ports are therefore chosen *below* the kernel's
ephemeral range (Linux: ``net.ipv4.ip_local_port_range``, 32768-60999 by default), where the
kernel never hands out a port by itself: not as the local port of an outgoing connection, nor
to a server that binds port 0. Choosing inside that range (``bind`` to port 0, then close)
let a busy test run's own client connections take a chosen port before its server bound it.
Within the span below the range the choice is random, so that test processes running side by
side rarely choose alike. Where no span of :data:`_MIN_SPAN` ports lies between
:data:`_LOWEST` and the range, the kernel's choice is taken (bind port 0).
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

__all__ = ["ephemeral_start", "free_port"]

_LOWEST = 20000
"""The lowest port chosen: above the registered ports most local services use."""
_DEFAULT_EPHEMERAL_START = 32768
"""Linux's default first ephemeral port, when the running kernel's cannot be read (and below
the IANA range, 49152, other systems use)."""
_MIN_SPAN = 1000
_TRIES = 100
_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_CHOOSER = random.SystemRandom()
"""From the OS's randomness: processes forked from one test process do not choose alike."""


def ephemeral_start() -> int:
    """The first port of the kernel's ephemeral range (see the module docstring)."""
    try:
        return int(_RANGE_FILE.read_text("ascii").split()[0])
    except (OSError, ValueError, IndexError):
        return _DEFAULT_EPHEMERAL_START


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago, below the ephemeral range.

    Another process may still take it before the caller binds it (a server of another test
    process that chose alike); callers that start a server on it should retry or fail with a
    clear message.
    """
    stop = min(ephemeral_start(), _DEFAULT_EPHEMERAL_START)
    if stop - _LOWEST >= _MIN_SPAN:
        for _ in range(_TRIES):
            port = _CHOOSER.randrange(_LOWEST, stop)
            if _bindable(port):
                return port
    return _kernel_choice()


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _kernel_choice() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
