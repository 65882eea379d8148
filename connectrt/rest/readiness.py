"""Connector requests wait for the herder: 503 with ``Retry-After`` until it is ready.

The REST listener opens before the herder has read its config and status topics, so that
``GET /health`` can answer 503 ``starting`` (KIP-1017). Until :attr:`Herder.ready`, a request
under ``/connectors`` (reading or changing connectors, tasks, offsets, topics) would see an
incomplete worker, and a connector created then would be started a second time when the herder
replays its config topic. Kafka Connect does not serve those requests before its herder has
started either; :class:`StartupGate` answers them 503 with ``Retry-After`` and Kafka Connect's
error body. ``GET /``, ``/health``, ``/metrics``, plugins (listing, config definitions,
validation) and loggers do not depend on the herder's topics and are always served. The gate
closes again while the herder stops.

Stateless; ``ready`` is read once per gated request on the listener's event loop and must be
cheap and thread-safe (``Herder.ready`` reads a ``threading.Event``).
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send

from connectrt.listener.asgi import send_error

__all__ = ["NOT_READY_MESSAGE", "StartupGate", "gated"]

NOT_READY_MESSAGE = (
    "The worker is starting up (or shutting down) and cannot serve connector requests yet; "
    "retry later (GET /health answers 200 once it is ready)"
)


def gated(path: str) -> bool:
    """Whether a request for ``path`` needs the herder to be ready."""
    return path == "/connectors" or path.startswith("/connectors/")


class StartupGate:
    """ASGI middleware: 503 + ``Retry-After: retry_after`` on gated paths until ``ready()``."""

    def __init__(self, app: ASGIApp, ready: Callable[[], bool], retry_after: int = 1) -> None:
        self.app = app
        self.ready = ready
        self.retry_after = retry_after

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and gated(scope["path"]) and not self.ready():
            headers = {"Retry-After": str(self.retry_after)}
            await send_error(send, 503, NOT_READY_MESSAGE, headers)
            return
        await self.app(scope, receive, send)
