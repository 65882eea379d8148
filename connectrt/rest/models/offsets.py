"""The bodies of a connector's offsets (KIP-875) and of connectrt's rewind."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Self

from pydantic import BaseModel, Field

from connectrt.rest.models.base import Model
from connectrt.runtime.errors import BadRequestError

__all__ = [
    "AlterOffsetsRequest",
    "ConnectorOffsets",
    "OffsetsMessage",
    "PartitionOffset",
    "RewindRequest",
]


class PartitionOffset(Model):
    partition: dict[str, Any]
    offset: dict[str, Any] | None


class OffsetsMessage(Model):
    message: str

    @classmethod
    def of(cls, message: str) -> Self:
        return cls(message=message)


class ConnectorOffsets(Model):
    offsets: list[PartitionOffset]


class AlterOffsetsRequest(BaseModel):
    offsets: list[PartitionOffset] = Field(description="KIP-875: the offsets to write")

    @classmethod
    def read(cls, raw: Any) -> Any:
        """The ``offsets`` as sent (None when missing), for the herder to check."""
        return raw.get("offsets") if isinstance(raw, dict) else None


class RewindRequest(BaseModel):
    to: Literal["earliest", "latest", "timestamp", "offset"]
    timestamp: datetime | None = Field(default=None, description="ISO-8601, for to=timestamp")
    offset: int | None = Field(default=None, description="For to=offset", ge=0, le=2**63 - 1)
    topic: str | None = Field(default=None, description="One topic (default: every topic)")

    @classmethod
    def read(cls, raw: Any) -> RewindRequest:
        """Checked for types; ``to`` (any string) and the offset's range are the herder's."""
        if not isinstance(raw, dict) or not isinstance(raw.get("to"), str):
            raise BadRequestError("Body must be a JSON object with a 'to' string")
        when = None
        if raw.get("timestamp") is not None:
            try:
                when = datetime.fromisoformat(str(raw["timestamp"]).replace("Z", "+00:00"))
            except ValueError:
                raise BadRequestError(f"Invalid ISO-8601 timestamp {raw['timestamp']}") from None
            if when.timestamp() < 0:  # Kafka's offsets for times start at the epoch
                raise BadRequestError(f"Timestamp {raw['timestamp']} is before 1970-01-01")
        offset = raw.get("offset")
        if offset is not None and (not isinstance(offset, int) or isinstance(offset, bool)):
            raise BadRequestError("'offset' must be an integer")
        topic = raw.get("topic")
        if topic is not None and not isinstance(topic, str):
            raise BadRequestError("'topic' must be a string")
        return cls.model_construct(to=raw["to"], timestamp=when, offset=offset, topic=topic)
