"""The context-manager half every test service shares: ``with Service(...) as s`` starts it and
stops it on the way out.

:class:`ManagedService` is the base of the test services that own a process or a server
(:class:`~connectrt.testing.jvm_service.JvmService`, the OIDC provider, PostgreSQL, the Spark
Connect server, the external broker adapter); each writes its own ``start()`` (returning the
started instance) and an idempotent ``stop()``. Threading: as the subclass's lifecycle calls
(one thread).
"""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["ManagedService"]


class ManagedService:
    """``__enter__`` is ``start()``, ``__exit__`` is ``stop()`` (whatever the exception)."""

    def start(self) -> Self:
        """Start the service and return it once it is ready (each subclass's own)."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop the service; idempotent (each subclass's own)."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
