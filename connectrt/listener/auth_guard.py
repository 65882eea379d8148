"""Checking credentials without stalling a listener: :class:`AuthGuard` and its middleware.

A Basic credential check is PBKDF2 (tens of milliseconds of CPU). :class:`AuthGuard` keeps it
off the event loop and bounds what a flood of bad credentials can cost:

* checks run on a small dedicated thread pool shared by the process (at most half the CPUs,
  at least one thread), never on an event loop and never on the pool that serves routes; at
  most ``max_pending`` checks wait for it, further requests get 503 with ``Retry-After``;
* a successful check is remembered for ``cache_ttl`` seconds, keyed by a SHA-256 of the
  ``Authorization`` header (at most ``cache_size`` entries, least recently used dropped
  first); an entry counts only while the credential it matched is still configured
  (:meth:`Authenticator.holds`), so it never outlives a change of that password or token;
* an unknown user costs the same as a wrong password (:meth:`Authenticator.authenticate`);
* failures slow down the failing credentials, never a correct password and never other
  clients: they are counted per *subject*, the user name the header claims (all bearer tokens
  share one subject), and a failed check's 401 is sent only after a delay, awaited with
  ``asyncio.sleep`` (no thread held): none for the subject's first failure, then
  ``base_delay`` doubling per further failure up to ``max_delay``. The check itself always runs
  at once, so a correct password is answered at normal speed however many wrong ones came
  before it, from the same address or any other (behind a NAT or a proxy, an attacker cannot
  lock anyone out). A client guessing one account's password one request at a time gets one
  answer per ``max_delay``; many requests at once are bounded by the check pool and
  ``max_pending``, as before. ``forget_after`` seconds without a failure clear a subject (a
  success does not: an attacker cannot reset the count by waiting for the user to log in); at
  most ``tracked_subjects`` are remembered (oldest dropped). Requests without an
  ``Authorization`` header are refused without counting as failures.

Threading: one guard serves every listener of a worker, each listener on its own event loop
thread, so the cache and the failure counts sit behind one lock held only for dictionary
updates. :class:`AuthMiddleware` is the ASGI side: it answers 401 (Kafka Connect's error body,
``WWW-Authenticate``) unless the guard admits the request.
"""

from __future__ import annotations

import asyncio
import enum
import hashlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from connectrt.listener.asgi import request_header, send_error
from connectrt.listener.auth import Authenticator, Principal

__all__ = ["AuthGuard", "AuthMiddleware", "Verdict"]

_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def _check_pool() -> ThreadPoolExecutor:
    """The process-wide pool for credential checks (created on first use; idle threads exit
    with the process)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            threads = max(1, min(4, (os.cpu_count() or 2) // 2))
            _pool = ThreadPoolExecutor(threads, thread_name_prefix="auth-check")
        return _pool


class Verdict(enum.Enum):
    ADMIT = "admit"
    DENY = "deny"
    BUSY = "busy"  # too many checks waiting


@dataclass
class _Remembered:
    principal: Principal
    expires: float


@dataclass
class _Failures:
    count: int
    last: float


class AuthGuard:
    """Decides whether a request's credentials are accepted; see the module docstring."""

    def __init__(
        self,
        auth: Authenticator,
        *,
        cache_ttl: float = 60.0,
        cache_size: int = 1024,
        base_delay: float = 0.1,
        max_delay: float = 2.0,
        forget_after: float = 60.0,
        tracked_subjects: int = 4096,
        max_pending: int = 256,
        executor: Executor | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self.auth = auth
        self.cache_ttl = cache_ttl
        self.cache_size = cache_size
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.forget_after = forget_after
        self.tracked_subjects = tracked_subjects
        self.max_pending = max_pending
        self._executor = executor
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._cache: OrderedDict[bytes, _Remembered] = OrderedDict()
        self._failures: OrderedDict[str, _Failures] = OrderedDict()
        self._pending = 0
        self.checks = 0  # full credential checks run (read by tests and metrics)

    async def admit(self, authorization: str | None) -> Verdict:
        """Whether to serve a request with this ``Authorization`` value. Call on an event
        loop; waits for the check, and after a failure for the subject's delay."""
        if not self.auth.enabled:
            return Verdict.ADMIT
        if not authorization:
            return Verdict.DENY
        key = hashlib.sha256(authorization.encode("utf-8", "surrogateescape")).digest()
        if self._remembered(key):
            return Verdict.ADMIT
        with self._lock:
            if self._pending >= self.max_pending:
                return Verdict.BUSY
            self._pending += 1
        try:
            loop = asyncio.get_running_loop()
            pool = self._executor or _check_pool()
            principal = await loop.run_in_executor(pool, self.auth.authenticate, authorization)
        finally:
            with self._lock:
                self._pending -= 1
                self.checks += 1
        if principal is None:
            delay = self._record_failure(self.auth.subject(authorization))
            if delay > 0:
                await self._sleep(delay)
            return Verdict.DENY
        self._remember(key, principal)
        return Verdict.ADMIT

    def delay_for(self, subject: str) -> float:
        """Seconds the next failure of ``subject`` (``user:<name>``, ``bearer``) waits before
        its 401 (0 when it has no failure on record)."""
        with self._lock:
            failures = self._failures.get(subject)
            if failures is None:
                return 0.0
            if self._clock() - failures.last > self.forget_after:
                del self._failures[subject]
                return 0.0
            return self._delay(failures.count + 1)

    def _delay(self, failure: int) -> float:
        """The delay of a subject's ``failure``-th failure in a row (the first has none)."""
        if failure <= 1:
            return 0.0
        return min(self.max_delay, self.base_delay * 2 ** min(failure - 2, 30))

    @property
    def tracked(self) -> int:
        """Subjects with failures on record (bounded by ``tracked_subjects``)."""
        with self._lock:
            return len(self._failures)

    @property
    def remembered(self) -> int:
        """Successful checks remembered (bounded by ``cache_size``)."""
        with self._lock:
            return len(self._cache)

    def _remembered(self, key: bytes) -> bool:
        with self._lock:
            entry = self._cache.get(key)
            if entry is None:
                return False
            if entry.expires > self._clock() and self.auth.holds(entry.principal):
                self._cache.move_to_end(key)
                return True
            del self._cache[key]
            return False

    def _remember(self, key: bytes, principal: Principal) -> None:
        with self._lock:
            if self.cache_ttl <= 0 or self.cache_size <= 0:
                return
            self._cache[key] = _Remembered(principal, self._clock() + self.cache_ttl)
            self._cache.move_to_end(key)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    def _record_failure(self, subject: str) -> float:
        """Count a failure of ``subject``; returns the delay its answer waits."""
        if self.max_delay <= 0:
            return 0.0
        with self._lock:
            now = self._clock()
            failures = self._failures.pop(subject, None)
            if failures is None or now - failures.last > self.forget_after:
                failures = _Failures(0, now)
            failures.count += 1
            failures.last = now
            self._failures[subject] = failures  # most recent last
            while len(self._failures) > self.tracked_subjects:
                self._failures.popitem(last=False)
            return self._delay(failures.count)


class AuthMiddleware:
    """Lets a request through to ``app`` only if ``guard`` admits its credentials.

    ``open_paths`` (exact paths, e.g. ``/health``) pass without credentials; lifespan
    messages pass through; websockets are closed (1008) unless admitted. Runs on the
    listener's event loop; all state is the guard's.
    """

    def __init__(self, app: ASGIApp, guard: AuthGuard, open_paths: Collection[str] = ()) -> None:
        self.app = app
        self.guard = guard
        self.open_paths = frozenset(open_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket") or not self.guard.auth.enabled:
            await self.app(scope, receive, send)
            return
        if kind == "http" and scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        verdict = await self.guard.admit(request_header(scope, b"authorization"))
        if verdict is Verdict.ADMIT:
            await self.app(scope, receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        elif verdict is Verdict.BUSY:
            await send_error(
                send, 503, "Too many authentication checks in progress", {"Retry-After": "1"}
            )
        else:
            challenge = self.guard.auth.challenge
            await send_error(send, 401, "Unauthorized", {"WWW-Authenticate": challenge})
