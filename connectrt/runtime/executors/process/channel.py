"""The channel between the worker and one task process: framed messages over a socket pair.

Each message is a tuple whose first item names it, pickled and prefixed with its length. Both
ends belong to connectrt processes of the same installation started by the same user (the
worker spawns the child and hands it one end of a ``socketpair``), so pickle is safe here; no
other process can reach the socket.

Worker -> child: ``("payload", ProcessTaskPayload)`` first, then ``("target", "PAUSED" |
"STARTED")``, ``("stop",)`` and ``("reply", id, ok, value)`` answers to offset requests.
Child -> worker: ``("status", state, trace)``, ``("topic", topic)``, ``("offsets.get", id,
keys)``, ``("offsets.set", id, entries)``, ``("offsets.all", id)``, ``("metrics", snapshot,
call report)`` (:mod:`connectrt.runtime.executors.call_reports`) and, last, ``("done", failed)``.

The worker's death closes its end: the child's reader sees end-of-file at once (the kernel
closes the descriptors of a killed process), which is one of the two ways a child learns it
must exit (the other is ``PR_SET_PDEATHSIG``, :mod:`.lifeline`).

Threading: ``send`` may be called from any thread (a lock keeps frames whole); ``recv`` from
one reader thread only. ``close`` may be called from any thread and wakes a blocked reader.
Standard library only: the child imports this before its memory limit is in place.
"""

from __future__ import annotations

import pickle
import select
import socket
import struct
import threading
from typing import Any

__all__ = ["Channel", "ChannelClosed"]

_HEADER = struct.Struct("!I")


class ChannelClosed(EOFError):
    """The other end closed the channel (or died)."""


class Channel:
    """One end of a task process's channel (see the module docstring)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._send_lock = threading.Lock()
        self._closed = False

    @classmethod
    def from_fd(cls, fd: int) -> Channel:
        return cls(socket.socket(fileno=fd))

    def fileno(self) -> int:
        return self._sock.fileno()

    def send(self, message: tuple[Any, ...]) -> None:
        """Send one message; raises :class:`ChannelClosed` when the other end is gone."""
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        frame = _HEADER.pack(len(data)) + data
        with self._send_lock:
            try:
                self._sock.sendall(frame)
            except OSError as e:
                raise ChannelClosed(str(e)) from e

    def recv(self, timeout: float | None = None) -> tuple[Any, ...] | None:
        """The next message, or None when ``timeout`` seconds pass without one starting.

        Raises :class:`ChannelClosed` at end-of-file (the other end closed or died).
        """
        if timeout is not None:
            try:
                ready, _, _ = select.select([self._sock], [], [], timeout)
            except (OSError, ValueError) as e:
                raise ChannelClosed(str(e)) from e
            if not ready:
                return None
        header = self._read(_HEADER.size)
        (size,) = _HEADER.unpack(header)
        message: tuple[Any, ...] = pickle.loads(self._read(size))
        return message

    def _read(self, size: int) -> bytes:
        chunks: list[bytes] = []
        left = size
        while left:
            try:
                chunk = self._sock.recv(min(left, 1 << 20))
            except OSError as e:
                raise ChannelClosed(str(e)) from e
            if not chunk:
                raise ChannelClosed("the other end of the task channel closed it")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        """Close this end (idempotent); a reader blocked in :meth:`recv` sees end-of-file."""
        if self._closed:
            return
        self._closed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
