"""The worker's own bodies: ``GET /`` (server info), ``/health`` (KIP-1017), the control
topic's event outcomes and ``/admin/loggers``.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, Field

from connectrt.rest.models.base import Model
from connectrt.runtime.errors import BadRequestError
from connectrt.runtime.herder.loggers import KAFKA_LEVELS

__all__ = ["ControlEventOutcome", "Health", "LoggerLevel", "LoggerLevelRequest", "ServerInfo"]


class ServerInfo(Model):
    version: str
    commit: str
    kafka_cluster_id: str | None = Field(description="None while Kafka is unreachable")


class Health(Model):
    status: Literal["healthy", "starting", "unhealthy"]
    message: str

    @classmethod
    def of(cls, status: str, message: str) -> Self:
        return cls(status=status, message=message)  # type: ignore[arg-type]


class ControlEventOutcome(Model):
    id: str | None = None
    outcome: str | None = None


class LoggerLevel(Model):
    level: str
    last_modified: int | None


def _any_case(words: list[str]) -> str:
    """A regular expression matching any of ``words`` in any letter case."""
    alternatives = ("".join(f"[{c.upper()}{c.lower()}]" for c in w) for w in words)
    return "^(?:" + "|".join(alternatives) + ")$"


class LoggerLevelRequest(BaseModel):
    level: str = Field(
        description="A log4j or Python level name, in any case: " + ", ".join(KAFKA_LEVELS),
        pattern=_any_case(list(KAFKA_LEVELS)),
    )

    @classmethod
    def read(cls, raw: Any) -> str:
        """The level as sent (the herder checks the name)."""
        level = raw.get("level") if isinstance(raw, dict) else None
        if not level or not isinstance(level, str):
            raise BadRequestError("Desired 'level' parameter was not specified in request.")
        return level
