"""The bodies of connectrt's dead letter queue replay (``/connectors/{name}/dlq/replay``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Self

from pydantic import Field

from connectrt.rest.models.base import Model
from connectrt.runtime.dlq_replay.progress import ReplayStatus as ReplayRun

__all__ = ["REPLAY_REQUEST_SCHEMA", "ReplayCounts", "ReplayPartition", "ReplayStatus"]


class ReplayCounts(Model):
    read: int
    replayed: int
    skipped: int
    failed_again: int


class ReplayPartition(Model):
    partition: int
    start: int
    end: int
    position: int


class ReplayStatus(Model):
    """connectrt: one dead letter queue replay run (``/connectors/{name}/dlq/replay``)."""

    id: str
    connector: str
    type: str
    state: str
    dlq_topic: str
    group: str
    dry_run: bool
    from_: str | None = Field(alias="from")
    to: str | None
    max_replays: int | None
    started: str | None
    finished: str | None
    counts: ReplayCounts
    skipped_reasons: dict[str, int]
    partitions: list[ReplayPartition]
    sink_caught_up: bool | None
    message: str | None

    @classmethod
    def of(cls, status: ReplayRun) -> Self:
        request = status.request
        return cls.model_validate(
            {
                "id": status.id,
                "connector": status.connector,
                "type": status.connector_type,
                "state": status.state.value,
                "dlq_topic": status.dlq_topic,
                "group": status.group,
                "dry_run": request.dry_run,
                "from": _iso(request.from_ms),
                "to": _iso(request.to_ms),
                "max_replays": request.max_replays,
                "started": _iso(status.started_ms),
                "finished": _iso(status.finished_ms),
                "counts": {
                    "read": status.read,
                    "replayed": status.replayed,
                    "skipped": status.skipped,
                    "failed_again": status.failed_again,
                },
                "skipped_reasons": dict(status.skipped_reasons),
                "partitions": [
                    {
                        "partition": p.partition,
                        "start": p.start,
                        "end": p.end,
                        "position": p.position,
                    }
                    for p in status.partitions
                ],
                "sink_caught_up": status.sink_caught_up,
                "message": status.message,
            }
        )


def _iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


_TIMESTAMP = {
    "anyOf": [
        {"type": "string", "format": "date-time"},
        {"type": "integer", "minimum": 0, "description": "epoch milliseconds"},
        {"type": "null"},
    ]
}
#: The body of ``POST /connectors/{name}/dlq/replay`` (every field optional): the route's own
#: schema in the document; the runtime's ``replay_request`` reads and checks it.
REPLAY_REQUEST_SCHEMA = {
    "type": "object",
    "properties": {
        "from": _TIMESTAMP,
        "to": _TIMESTAMP,
        "dry_run": {"type": "boolean"},
        "max_replays": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
    },
    "additionalProperties": False,
}
