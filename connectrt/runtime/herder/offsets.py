"""A connector's offsets: read, altered and reset (KIP-875), and rewound (connectrt's own).

Source connectors' offsets live in the worker's offset store (keys and values in Kafka
Connect's JSON encoding, :mod:`connectrt.storage.offset_codec`); sink connectors' offsets are
their consumer group's (``connect-<name>``) committed offsets, reached through the
:class:`~connectrt.runtime.offsets.admin.OffsetAdmin`. Altering and resetting need the connector
STOPPED, as in Kafka; the connector class is asked first (``alter_offsets``) so that it can move
offsets it keeps elsewhere too. A rewind stops the connector itself, moves the offsets, and puts
back the target state it had.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any, Protocol

from connectrt.api.connector import Connector
from connectrt.api.records import TopicPartition
from connectrt.errors import ConfigError, ConnectError
from connectrt.runtime.config.exactly_once import exactly_once_settings
from connectrt.runtime.config.share_group import uses_share_group
from connectrt.runtime.errors import BadRequestError
from connectrt.runtime.herder.views import connector_kind
from connectrt.runtime.offsets.admin import OffsetAdmin
from connectrt.runtime.offsets.stores import create_kafka_offset_store
from connectrt.runtime.plugins.registry import PluginRegistry
from connectrt.runtime.status import TargetState
from connectrt.runtime.worker.connector import ResolvedConnector
from connectrt.runtime.worker.worker import Worker
from connectrt.storage.offset_codec import decode_key, decode_value, encode_key, encode_value
from connectrt.storage.offsets import OffsetStore

__all__ = ["ConnectorControl", "ConnectorOffsets"]

_SHARE_GROUP = (
    "The offsets of connector {name} cannot be {what}: its tasks run in a share group "
    "(consumer.group.type=share), which has no committed offsets to change; the broker keeps "
    "each share partition's start offset (kafka-share-groups.sh --reset-offsets moves it while "
    "the connector is stopped)"
)
_NOT_STOPPED = (
    "Connectors must be in the STOPPED state before their offsets can be modified. This can be "
    "done for the specified connector by issuing a 'PUT' request to the "
    "'/connectors/{name}/stop' endpoint"
)


class ConnectorControl(Protocol):
    """What offset changes need of the connectors' owner (the herder is one)."""

    def require(self, name: str) -> None:
        """Raise :class:`~connectrt.errors.NotFoundError` unless connector ``name`` exists."""

    def connector_type(self, name: str) -> str:
        """``source``, ``sink`` or ``unknown``."""

    def resolve(self, config: Mapping[str, str]) -> dict[str, str]:
        """A raw connector config with its config-provider references resolved."""

    def stop_connector(self, name: str) -> None:
        """Store and apply the STOPPED target state (tasks stop, their configs are dropped)."""

    def set_target_state(self, name: str, target: TargetState) -> None:
        """Store and apply ``target`` for an existing connector."""


class ConnectorOffsets:
    """Reads and changes connectors' offsets for the offsets REST API and the control topic.

    ``worker`` holds the source offsets and tells whether a connector still runs; ``registry``
    builds the connector instance asked to alter its offsets; ``offset_admin`` reads and moves
    sink consumer groups; ``control`` is the connectors' owner (existence, type, config
    resolution, target states).

    Lifecycle: built once per herder, next to it; nothing to start or stop (the offset store is
    the worker's). Threading: every method may be called from any thread. Changes hold
    ``lock(name)``, the herder's lock of that connector, so that an offset change never
    interleaves with a lifecycle change of the same connector (a rewind stops and restores the
    connector under it; the lock is reentrant). :meth:`get` takes no lock.
    """

    def __init__(
        self,
        worker: Worker,
        registry: PluginRegistry,
        offset_admin: OffsetAdmin,
        control: ConnectorControl,
        lock: Callable[[str], AbstractContextManager[None]],
    ) -> None:
        self._worker = worker
        self._registry = registry
        self._offset_admin = offset_admin
        self._control = control
        self._lock = lock

    def get(self, name: str) -> list[dict[str, Any]]:
        """KIP-875 GET: ``[{"partition": {...}, "offset": {...}}]``."""
        self._control.require(name)
        kind = self._control.connector_type(name)
        if kind == "sink" and self._share_group(name):
            return []  # a share group commits no offsets: its share partitions are the broker's
        if kind == "sink":
            offsets = self._offset_admin.group_offsets(_group(name))
            return [
                {
                    "partition": {"kafka_topic": t, "kafka_partition": p},
                    "offset": {"kafka_offset": o},
                }
                for (t, p), o in sorted(offsets.items())
            ]
        out = []
        with self._source_store(name) as store:
            stored = store.all()
        for key, value in stored.items():
            decoded = decode_key(key)
            if decoded is not None and decoded[0] == name:
                out.append({"partition": decoded[1], "offset": decode_value(value)})
        return out

    @contextmanager
    def _source_store(
        self, name: str, resolved: ResolvedConnector | None = None
    ) -> Iterator[OffsetStore]:
        """The store holding a source connector's offsets: the worker's, or for a connector
        running exactly-once (KIP-618) its offsets topic, read afresh (its tasks write it
        inside their transactions, which the worker's view does not follow). ``resolved``:
        the connector's config as a create just resolved it (else resolved here)."""
        worker = self._worker
        if resolved is not None:
            config = resolved.resolved
        else:
            config = self._control.resolve(worker.connector_config(name))
        try:
            eos = exactly_once_settings(worker.config, config, name, 0)
        except ConfigError:
            eos = None
        if eos is None:
            yield worker.offset_store
            return
        store = create_kafka_offset_store(
            worker.config, eos.offsets_topic, f"-admin-{name}", start_at_snapshot=True
        )
        store.start()
        try:
            yield store
        finally:
            store.stop()

    def _share_group(self, name: str) -> bool:
        """Whether ``name`` is a sink connector whose tasks run in a share group
        (``consumer.group.type=share``): it has no consumer group offsets."""
        if self._control.connector_type(name) != "sink":
            return False
        try:
            return uses_share_group(self._worker.connector_config(name))
        except ConnectError:  # not on this worker: its config is not known here
            return False

    def _refuse_share_group(self, name: str, what: str) -> None:
        if self._share_group(name):
            raise BadRequestError(_SHARE_GROUP.format(name=name, what=what))

    def _require_stopped(self, name: str) -> None:
        if self._worker.target_state(name) is not TargetState.STOPPED or self._worker.runners(name):
            raise BadRequestError(_NOT_STOPPED.replace("{name}", name))

    def _new_connector(
        self, name: str, resolved: ResolvedConnector | None = None
    ) -> tuple[Connector, dict[str, str]]:
        """A new instance of the connector's class and its resolved config (``resolved``'s,
        when a create just resolved them)."""
        if resolved is not None:
            return resolved.connector_class(), dict(resolved.resolved)
        raw = self._worker.connector_config(name)
        cls = self._registry.connector_class(
            raw["connector.class"], raw.get("connector.plugin.version")
        )
        return cls(), self._control.resolve(raw)

    def alter(self, name: str, offsets: Any) -> str:
        """KIP-875 PATCH: ``offsets`` is the request's ``offsets`` list."""
        with self._lock(name):
            self._control.require(name)
            _check_shape(offsets)
            self._refuse_share_group(name, "altered")
            self._require_stopped(name)
            if self._control.connector_type(name) == "sink":
                return self._alter_sink(name, _parse_sink(offsets))
            return self._alter_source(name, *_parse_source(name, offsets))

    def initial(self, name: str, resolved: ResolvedConnector, offsets: Any) -> Callable[[], str]:
        """KIP-995: check ``offsets`` (a ``POST /connectors`` ``initial_offsets`` list) for the
        connector a create resolved as ``resolved`` before it exists (BadRequestError, nothing
        written); returns what replaces every offset stored under ``name`` by them once the
        connector exists, STOPPED, and gives KIP-875's message (with ``resolved``: the config
        is not resolved again nor the class looked up again)."""
        _check_shape(offsets)
        if connector_kind(resolved.connector_class) == "sink":
            wanted = _parse_sink(offsets)

            def apply_sink() -> str:
                self._offset_admin.delete_group(_group(name))  # a former connector's offsets
                return self._alter_sink(name, wanted, resolved)

            return apply_sink
        entries, by_partition = _parse_source(name, offsets)

        def apply_source() -> str:
            stale = {key: None for key in self._source_keys(name, resolved) if key not in entries}
            return self._alter_source(name, {**stale, **entries}, by_partition, resolved)

        return apply_source

    def _source_keys(self, name: str, resolved: ResolvedConnector | None = None) -> list[bytes]:
        out = []
        with self._source_store(name, resolved) as store:
            keys = list(store.all())
        for key in keys:
            decoded = decode_key(key)
            if decoded is not None and decoded[0] == name:
                out.append(key)
        return out

    def _connector_alter(
        self,
        name: str,
        call: Callable[[Connector, dict[str, str]], bool],
        resolved: ResolvedConnector | None = None,
    ) -> bool:
        connector, config = self._new_connector(name, resolved)
        try:
            return bool(call(connector, config))
        except NotImplementedError as e:
            raise BadRequestError(
                f"Failed to modify offsets for connector {name} because it doesn't support "
                "external modification of offsets"
            ) from e
        except ConnectError as e:
            raise BadRequestError(f"Failed to modify offsets for connector {name}: {e}") from e

    def _alter_source(
        self,
        name: str,
        entries: dict[bytes, bytes | None],
        by_partition: dict[Any, Any],
        resolved: ResolvedConnector | None = None,
    ) -> str:
        handled = self._connector_alter(
            name,
            lambda c, cfg: c.alter_offsets(cfg, by_partition),  # type: ignore[attr-defined]
            resolved,
        )
        with self._source_store(name, resolved) as store:
            store.set(entries)
        return _offsets_message("altered", handled)

    def _alter_sink(
        self,
        name: str,
        wanted: dict[TopicPartition, int | None],
        resolved: ResolvedConnector | None = None,
    ) -> str:
        handled = self._connector_alter(
            name,
            lambda c, cfg: c.alter_offsets(cfg, wanted),  # type: ignore[attr-defined]
            resolved,
        )
        resets = [tp for tp, o in wanted.items() if o is None]
        # confluent-kafka cannot delete single partition offsets: with auto.offset.reset=earliest
        # a deleted offset means "start from the earliest", which we set explicitly.
        explicit = {tp: o for tp, o in wanted.items() if o is not None}
        explicit.update(self._offset_admin.earliest(resets))
        self._offset_admin.alter_group_offsets(_group(name), explicit)
        return _offsets_message("altered", handled)

    def reset(self, name: str) -> str:
        """KIP-875 DELETE: forget every offset of the connector."""
        with self._lock(name):
            self._control.require(name)
            self._refuse_share_group(name, "reset")
            self._require_stopped(name)
            if self._control.connector_type(name) == "sink":
                handled = self._connector_alter(
                    name,
                    lambda c, cfg: c.alter_offsets(  # type: ignore[attr-defined]
                        cfg, dict.fromkeys(self._offset_admin.group_offsets(_group(name)))
                    ),
                )
                self._offset_admin.delete_group(_group(name))
                return _offsets_message("reset", handled)
            tombstones: dict[bytes, bytes | None] = {}
            partitions: dict[Any, Any] = {}
            with self._source_store(name) as store:
                keys = list(store.all())
            for key in keys:
                decoded = decode_key(key)
                if decoded is not None and decoded[0] == name:
                    tombstones[key] = None
                    partitions[tuple(decoded[1].items())] = None
            handled = self._connector_alter(
                name,
                lambda c, cfg: c.alter_offsets(cfg, partitions),  # type: ignore[attr-defined]
            )
            with self._source_store(name) as store:
                store.set(tombstones)
            return _offsets_message("reset", handled)

    def rewind(
        self,
        name: str,
        to: str,
        timestamp: datetime | None = None,
        offset: int | None = None,
        topic: str | None = None,
    ) -> dict[str, Any]:
        """Reset beyond KIP-875: stop the connector, move its offsets, resume it if it ran.

        Sinks: ``to`` = earliest | latest | timestamp | offset (for all its topics, or one).
        Sources: ``to=earliest`` deletes the stored offsets (start over); other targets are
        set with the KIP-875 PATCH endpoint.
        """
        with self._lock(name):
            self._control.require(name)
            kind = self._control.connector_type(name)
            self._refuse_share_group(name, "rewound")
            if to not in ("earliest", "latest", "timestamp", "offset"):
                raise BadRequestError("'to' must be one of earliest, latest, timestamp, offset")
            if kind != "sink" and to != "earliest":
                raise BadRequestError(
                    "Source connectors can only be reset to earliest (delete their offsets); use "
                    "PATCH /connectors/{name}/offsets to set explicit source offsets"
                )
            previous = self._worker.target_state(name)
            if previous is not TargetState.STOPPED:
                self._control.stop_connector(name)
            try:
                if kind != "sink":
                    self.reset(name)
                    result: dict[str, Any] = {"offsets": []}
                else:
                    result = {"offsets": self._rewind_sink(name, to, timestamp, offset, topic)}
            finally:
                if previous is not TargetState.STOPPED:
                    self._control.set_target_state(name, previous)
            return result

    def _rewind_sink(
        self,
        name: str,
        to: str,
        timestamp: datetime | None,
        offset: int | None,
        topic: str | None,
    ) -> list[dict[str, Any]]:
        config = self._control.resolve(self._worker.connector_config(name))
        topics = [t.strip() for t in config.get("topics", "").split(",") if t.strip()]
        regex = config.get("topics.regex") or None
        tps = self._offset_admin.partitions(topics, regex)
        if topic is not None:
            tps = [tp for tp in tps if tp.topic == topic]
            if not tps:
                raise BadRequestError(f"Connector {name} does not consume topic {topic}")
        if to == "earliest":
            target = self._offset_admin.earliest(tps)
        elif to == "latest":
            target = self._offset_admin.latest(tps)
        elif to == "timestamp":
            if timestamp is None:
                raise BadRequestError("'timestamp' is required with to=timestamp")
            target = self._offset_admin.for_time(tps, timestamp)
        else:
            if offset is None or offset < 0:
                raise BadRequestError("a non-negative 'offset' is required with to=offset")
            target = dict.fromkeys(tps, offset)
        self._offset_admin.alter_group_offsets(_group(name), target)
        return [
            {"partition": {"kafka_topic": t, "kafka_partition": p}, "offset": {"kafka_offset": o}}
            for (t, p), o in sorted(target.items())
        ]


def _check_shape(offsets: Any) -> None:
    """KIP-875's request shape: a non-empty list of objects, each with a ``partition`` object."""
    if not offsets:
        raise BadRequestError(
            "Partitions / offsets need to be provided for an alter offsets request"
        )
    if not isinstance(offsets, list) or not all(
        isinstance(o, dict) and isinstance(o.get("partition"), dict) for o in offsets
    ):
        raise BadRequestError("Each entry of 'offsets' needs a 'partition' object")


def _parse_source(
    name: str, offsets: list[dict[str, Any]]
) -> tuple[dict[bytes, bytes | None], dict[Any, Any]]:
    """Source offsets: the offset store entries and the ``alter_offsets`` argument."""
    entries: dict[bytes, bytes | None] = {}
    by_partition: dict[Any, Any] = {}
    for item in offsets:
        partition, offset = item["partition"], item.get("offset")
        if offset is not None and not isinstance(offset, dict):
            raise BadRequestError("Offsets must be JSON objects or null")
        try:
            entries[encode_key(name, partition)] = encode_value(offset)
        except Exception as e:
            raise BadRequestError(f"Invalid offset for partition {partition}: {e}") from e
        by_partition[tuple(partition.items())] = offset
    return entries, by_partition


def _parse_sink(offsets: list[dict[str, Any]]) -> dict[TopicPartition, int | None]:
    """Sink offsets (``kafka_topic``/``kafka_partition``/``kafka_offset``); None resets."""
    wanted: dict[TopicPartition, int | None] = {}
    for item in offsets:
        partition, offset = item["partition"], item.get("offset")
        topic = partition.get("kafka_topic")
        if not isinstance(topic, str) or not topic:
            raise BadRequestError("Partitions must contain a non-empty 'kafka_topic' string")
        try:
            number = int(partition.get("kafka_partition"))
        except (TypeError, ValueError):
            raise BadRequestError(
                "Partitions must contain a valid integer 'kafka_partition'"
            ) from None
        if offset is None:
            wanted[TopicPartition(topic, number)] = None
            continue
        try:
            wanted[TopicPartition(topic, number)] = int(offset.get("kafka_offset"))
        except (AttributeError, TypeError, ValueError):
            raise BadRequestError("Offsets must contain a valid long 'kafka_offset'") from None
    return wanted


def _group(name: str) -> str:
    """The consumer group of sink connector ``name`` (Kafka Connect's naming)."""
    return f"connect-{name}"


def _offsets_message(verb: str, handled: bool) -> str:
    if handled:
        return f"The offsets for this connector have been {verb} successfully"
    return (
        f"The Connect framework-managed offsets for this connector have been {verb} "
        "successfully. However, if this connector manages offsets externally, they will need to "
        f"be manually {verb} in the system that the connector uses."
    )
