"""What every HTTP listener of a worker enforces, built once from the worker config.

One :class:`ListenerSecurity` per worker process is shared by all its listeners (the REST API
and the built-in schema registry), so they accept the same users with the same schemes.
:meth:`ListenerSecurity.wrap` puts the checks around a listener's ASGI app; each listener
chooses only its ``open_paths`` (the REST API opens ``/health`` when
``rest.auth.health.open=true``; the registry has no open path).

Immutable after construction; :meth:`wrap` may be called from any thread, and the wrapped app
may run on several listeners' event loops at once.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from starlette.types import ASGIApp

from connectrt.listener.auth import Authenticator
from connectrt.listener.auth_guard import AuthGuard, AuthMiddleware
from connectrt.listener.cross_origin import CrossOriginMiddleware, CrossOriginPolicy
from connectrt.listener.limits import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_MAX_BODY_BYTES,
    BodyLimitMiddleware,
)
from connectrt.runtime.config.worker import WorkerConfig

__all__ = ["ListenerSecurity"]


@dataclass(frozen=True)
class ListenerSecurity:
    """Cross-origin policy, authentication and the request body bounds of a worker's
    listeners (``ListenerSecurity()``: no authentication, only the worker's own origin may
    write, the default bounds)."""

    guard: AuthGuard = field(default_factory=lambda: AuthGuard(Authenticator()))
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    body_timeout: float | None = DEFAULT_BODY_TIMEOUT
    cross_origin: CrossOriginPolicy = field(default_factory=CrossOriginPolicy)

    @classmethod
    def from_worker_config(cls, wc: WorkerConfig) -> ListenerSecurity:
        guard = AuthGuard(
            Authenticator.from_worker_config(wc.originals),
            cache_ttl=wc["rest.auth.cache.ttl.ms"] / 1000.0,
            max_delay=wc["rest.auth.failure.delay.max.ms"] / 1000.0,
        )
        return cls(
            guard,
            wc["rest.request.max.bytes"],
            wc["rest.request.body.timeout.ms"] / 1000.0,
            CrossOriginPolicy.from_settings(
                wc.get("access.control.allow.origin"), wc.get("access.control.allow.methods")
            ),
        )

    @property
    def authenticator(self) -> Authenticator:
        return self.guard.auth

    @property
    def health_paths(self) -> frozenset[str]:
        """The REST API's paths served without credentials (``/health`` unless closed)."""
        return frozenset({"/health"}) if self.authenticator.health_open else frozenset()

    def wrap(self, app: ASGIApp, open_paths: Collection[str] = ()) -> ASGIApp:
        """``app`` behind the listener checks: the cross-origin policy first (a preflight
        carries no credentials; a foreign write is refused before anything else), then
        authentication (``open_paths`` skip it), then the body bounds, so an unauthenticated
        body is never read."""
        bounded = BodyLimitMiddleware(app, self.max_body_bytes, self.body_timeout)
        return CrossOriginMiddleware(
            AuthMiddleware(bounded, self.guard, open_paths), self.cross_origin
        )
