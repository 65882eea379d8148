"""Schema storage for the registry: the registry's rules over an in-memory state, persisted by
applying the same records Confluent Schema Registry writes to its ``_schemas`` topic.

State changes are expressed as ``(key, value)`` records (JSON objects; ``value=None`` is a
tombstone), in Confluent's format:

* ``{"keytype":"SCHEMA","subject":s,"version":v,"magic":1}`` ->
  ``{"subject":s,"version":v,"id":n,"schema":"...","deleted":false}``
* ``{"keytype":"CONFIG","subject":s|null,"magic":0}`` -> ``{"compatibilityLevel":"BACKWARD"}``
  (``subject: null`` is the global level)
* ``DELETE_SUBJECT`` records (written by Confluent) mark versions up to ``version`` deleted;
  other key types (``NOOP``, ...) are ignored.

Applying a record is idempotent, so :class:`KafkaSchemaStore` can apply its own writes at once
and again when read back. Ids are assigned monotonically (the highest id ever seen plus one);
a schema whose canonical form was registered before, under any subject, gets the same id.
Soft deletion rewrites a version with ``deleted: true``; permanent deletion writes a tombstone.

The store serializes all registry operations with one lock; the Kafka store assumes it is
the only writer of its topic (Confluent elects a single leader for the same reason).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from connectrt.schema_registry.compatibility import (
    LEVELS,
    InvalidSchemaError,
    ParsedSchema,
    check_compatibility,
    parse_avro,
)
from connectrt.storage.kafka_log import TopicLog

__all__ = [
    "KafkaSchemaStore",
    "MemorySchemaStore",
    "RegistryError",
    "SchemaStore",
    "SchemaVersion",
]

DEFAULT_COMPATIBILITY = "BACKWARD"
_MAX_VERSION = 2**31 - 1

Key = dict[str, Any]
Value = dict[str, Any] | None


@dataclass(frozen=True)
class SchemaVersion:
    subject: str
    version: int
    id: int
    schema: str
    deleted: bool = False


class RegistryError(Exception):
    """An error with Confluent's HTTP status and ``error_code``."""

    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.message = message


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version: int | str) -> RegistryError:
    return RegistryError(404, 40402, f"Version {version} not found.")


def schema_not_found(schema_id: int | None = None) -> RegistryError:
    message = "Schema not found" if schema_id is None else f"Schema {schema_id} not found"
    return RegistryError(404, 40403, message)


def invalid_version(version: Any) -> RegistryError:
    return RegistryError(
        422,
        42202,
        f"The specified version '{version}' is not a valid version id. Allowed values are "
        'between [1, 2^31-1] and the string "latest"',
    )


def invalid_level() -> RegistryError:
    return RegistryError(
        422,
        42203,
        "Invalid compatibility level. Valid values are none, backward, forward, full, "
        "backward_transitive, forward_transitive, and full_transitive",
    )


def parse_version(version: str | int) -> int | None:
    """``"latest"`` and ``-1`` -> None; a number in [1, 2^31-1] -> itself; else 42202."""
    if isinstance(version, str):
        if version.strip().lower() == "latest":
            return None
        try:
            number = int(version)
        except ValueError:
            raise invalid_version(version) from None
    else:
        number = version
    if number == -1:
        return None
    if not 1 <= number <= _MAX_VERSION:
        raise invalid_version(version)
    return number


def _canonical(text: str) -> str:
    try:
        return json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return text


class SchemaStore(Protocol):
    """What the registry REST API needs. Errors are :class:`RegistryError`."""

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def subjects(self, deleted: bool = False) -> list[str]: ...
    def versions(self, subject: str, deleted: bool = False) -> list[int]: ...
    def get_version(
        self, subject: str, version: str | int, deleted: bool = False
    ) -> SchemaVersion: ...
    def schema_by_id(self, schema_id: int) -> str: ...
    def versions_by_id(self, schema_id: int, deleted: bool = False) -> list[SchemaVersion]: ...
    def lookup(self, subject: str, schema: str, deleted: bool = False) -> SchemaVersion: ...
    def register(self, subject: str, schema: str) -> SchemaVersion: ...
    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]: ...
    def delete_version(self, subject: str, version: str | int, permanent: bool = False) -> int: ...
    def get_compatibility(self, subject: str | None, default_to_global: bool = False) -> str: ...
    def set_compatibility(self, subject: str | None, level: str) -> str: ...
    def delete_compatibility(self, subject: str | None) -> str: ...
    def test_compatibility(
        self, subject: str, schema: str, version: str | int | None = None
    ) -> list[str]: ...


class _RegistryCore:
    """The registry's rules over in-memory state; subclasses persist records in ``_write``."""

    def __init__(self, default_compatibility: str = DEFAULT_COMPATIBILITY) -> None:
        level = default_compatibility.upper()
        if level not in LEVELS:
            raise ValueError(f"Unknown compatibility level {default_compatibility}")
        self._default_level = level
        self._lock = threading.RLock()
        self._subjects: dict[str, dict[int, SchemaVersion]] = {}
        self._by_id: dict[int, dict[tuple[str, int], SchemaVersion]] = {}
        self._ids: dict[str, int] = {}  # canonical schema -> id (never forgotten)
        self._max_id = 0
        self._config: dict[str | None, str] = {}
        self._parsed: dict[str, ParsedSchema] = {}

    # -- persistence ------------------------------------------------------------------------

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def _write(self, records: list[tuple[Key, Value]]) -> None:
        raise NotImplementedError

    def _apply(self, key: Key, value: Value) -> None:
        keytype = key.get("keytype")
        if keytype == "SCHEMA":
            subject, version = str(key["subject"]), int(key["version"])
            versions = self._subjects.setdefault(subject, {})
            old = versions.pop(version, None)
            if old is not None:
                self._by_id.get(old.id, {}).pop((subject, version), None)
            if value is None:
                if not versions:
                    del self._subjects[subject]
                return
            sv = SchemaVersion(
                subject,
                version,
                int(value["id"]),
                str(value["schema"]),
                bool(value.get("deleted", False)),
            )
            versions[version] = sv
            self._by_id.setdefault(sv.id, {})[(subject, version)] = sv
            self._ids.setdefault(_canonical(sv.schema), sv.id)
            self._max_id = max(self._max_id, sv.id)
        elif keytype == "CONFIG":
            level = None if value is None else value.get("compatibilityLevel")
            if level is None:
                self._config.pop(key.get("subject"), None)
            else:
                self._config[key.get("subject")] = str(level).upper()
        elif keytype == "DELETE_SUBJECT" and value is not None:
            subject, upto = str(value["subject"]), int(value.get("version", _MAX_VERSION))
            for v, sv in list(self._subjects.get(subject, {}).items()):
                if v <= upto and not sv.deleted:
                    self._apply(_schema_key(subject, v), _schema_value(sv, deleted=True))

    # -- helpers ----------------------------------------------------------------------------

    def _parse(self, text: str) -> ParsedSchema:
        parsed = self._parsed.get(text)
        if parsed is None:
            try:
                parsed = parse_avro(text)
            except InvalidSchemaError as exc:
                raise RegistryError(422, 42201, str(exc)) from None
            if len(self._parsed) > 10_000:
                self._parsed.clear()
            self._parsed[text] = parsed
        return parsed

    def _live(self, subject: str, deleted: bool = False) -> dict[int, SchemaVersion]:
        return {
            v: sv
            for v, sv in sorted(self._subjects.get(subject, {}).items())
            if deleted or not sv.deleted
        }

    def _existing(self, subject: str, deleted: bool = False) -> dict[int, SchemaVersion]:
        live = self._live(subject, deleted)
        if not live:
            raise subject_not_found(subject)
        return live

    def _find(self, subject: str, version: str | int, deleted: bool) -> SchemaVersion:
        number = parse_version(version)
        live = self._existing(subject, deleted)
        if number is None:
            return live[max(live)]
        sv = live.get(number)
        if sv is None:
            raise version_not_found(number)
        return sv

    def _level(self, subject: str | None) -> str:
        if subject is not None and subject in self._config:
            return self._config[subject]
        return self._config.get(None, self._default_level)

    # -- reads ------------------------------------------------------------------------------

    def subjects(self, deleted: bool = False) -> list[str]:
        with self._lock:
            return sorted(s for s in self._subjects if self._live(s, deleted))

    def versions(self, subject: str, deleted: bool = False) -> list[int]:
        with self._lock:
            return list(self._existing(subject, deleted))

    def get_version(self, subject: str, version: str | int, deleted: bool = False) -> SchemaVersion:
        with self._lock:
            return self._find(subject, version, deleted)

    def schema_by_id(self, schema_id: int) -> str:
        with self._lock:
            refs = self._by_id.get(schema_id)
            if not refs:
                raise schema_not_found(schema_id)
            return next(iter(refs.values())).schema

    def versions_by_id(self, schema_id: int, deleted: bool = False) -> list[SchemaVersion]:
        with self._lock:
            refs = self._by_id.get(schema_id)
            if not refs:
                raise schema_not_found(schema_id)
            return sorted(
                (sv for sv in refs.values() if deleted or not sv.deleted),
                key=lambda sv: (sv.subject, sv.version),
            )

    def lookup(self, subject: str, schema: str, deleted: bool = False) -> SchemaVersion:
        with self._lock:
            canonical = self._parse(schema).canonical
            live = self._existing(subject, deleted)
            for sv in reversed(live.values()):
                if _canonical(sv.schema) == canonical:
                    return sv
            raise schema_not_found()

    def get_compatibility(self, subject: str | None, default_to_global: bool = False) -> str:
        with self._lock:
            if subject is None or default_to_global:
                return self._level(subject)
            level = self._config.get(subject)
            if level is None:
                raise RegistryError(
                    404,
                    40408,
                    f"Subject '{subject}' does not have subject-level compatibility configured",
                )
            return level

    def test_compatibility(
        self, subject: str, schema: str, version: str | int | None = None
    ) -> list[str]:
        with self._lock:
            new = self._parse(schema)
            level = self._level(subject)
            if version is None:
                previous = [self._parse(sv.schema) for sv in self._live(subject).values()]
            else:
                previous = [self._parse(self._find(subject, version, False).schema)]
                level = level.replace("_TRANSITIVE", "")
            return check_compatibility(level, new, previous)

    # -- writes -----------------------------------------------------------------------------

    def register(self, subject: str, schema: str) -> SchemaVersion:
        with self._lock:
            parsed = self._parse(schema)
            live = self._live(subject)
            for sv in reversed(live.values()):
                if _canonical(sv.schema) == parsed.canonical:
                    return sv
            previous = [self._parse(sv.schema) for sv in live.values()]
            messages = check_compatibility(self._level(subject), parsed, previous)
            if messages:
                raise RegistryError(
                    409,
                    409,
                    "Schema being registered is incompatible with an earlier schema for "
                    f'subject "{subject}", details: {messages}',
                )
            schema_id = self._ids.get(parsed.canonical, self._max_id + 1)
            version = max(self._subjects.get(subject, {}), default=0) + 1
            sv = SchemaVersion(subject, version, schema_id, schema)
            self._write([(_schema_key(subject, version), _schema_value(sv))])
            return sv

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        with self._lock:
            everything = self._existing(subject, deleted=True)
            live = self._live(subject)
            records: list[tuple[Key, Value]] = []
            if permanent:
                if live:
                    raise RegistryError(
                        404,
                        40405,
                        f"Subject '{subject}' was not deleted first before being permanently "
                        "deleted",
                    )
                records = [(_schema_key(subject, v), None) for v in everything]
                if subject in self._config:
                    records.append((_config_key(subject), None))
                self._write(records)
                return list(everything)
            if not live:
                raise RegistryError(
                    404,
                    40404,
                    f"Subject '{subject}' was soft deleted.Set permanent=true to delete "
                    "permanently",
                )
            records = [
                (_schema_key(subject, v), _schema_value(sv, deleted=True)) for v, sv in live.items()
            ]
            self._write(records)
            return list(live)

    def delete_version(self, subject: str, version: str | int, permanent: bool = False) -> int:
        with self._lock:
            sv = self._find(subject, version, deleted=permanent)
            if permanent:
                if not sv.deleted:
                    raise RegistryError(
                        404,
                        40407,
                        f"Subject '{subject}' Version {sv.version} was not deleted first before "
                        "being permanently deleted",
                    )
                self._write([(_schema_key(subject, sv.version), None)])
            else:
                self._write([(_schema_key(subject, sv.version), _schema_value(sv, deleted=True))])
            return sv.version

    def set_compatibility(self, subject: str | None, level: str) -> str:
        if not isinstance(level, str) or level.upper() not in LEVELS:
            raise invalid_level()
        with self._lock:
            self._write([(_config_key(subject), {"compatibilityLevel": level.upper()})])
            return level.upper()

    def delete_compatibility(self, subject: str | None) -> str:
        with self._lock:
            if subject is not None and subject not in self._subjects:
                raise subject_not_found(subject)
            old = self._level(subject)
            self._write([(_config_key(subject), None)])
            return old


def _schema_key(subject: str, version: int) -> Key:
    return {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}


def _schema_value(sv: SchemaVersion, deleted: bool | None = None) -> dict[str, Any]:
    return {
        "subject": sv.subject,
        "version": sv.version,
        "id": sv.id,
        "schema": sv.schema,
        "deleted": sv.deleted if deleted is None else deleted,
    }


def _config_key(subject: str | None) -> Key:
    return {"keytype": "CONFIG", "subject": subject, "magic": 0}


def _encode(obj: Mapping[str, Any] | None) -> bytes | None:
    return None if obj is None else json.dumps(obj, separators=(",", ":")).encode()


class MemorySchemaStore(_RegistryCore):
    """A registry whose state lives in memory only (tests, throwaway setups)."""

    def _write(self, records: list[tuple[Key, Value]]) -> None:
        for key, value in records:
            self._apply(key, value)


class KafkaSchemaStore(_RegistryCore):
    """A registry persisted in a compacted, one-partition Kafka topic (default ``_schemas``).

    ``start()`` creates the topic if needed and replays it, so ids and versions survive a
    restart. Writes wait for ``acks=all`` and are then applied; a failed write raises
    :class:`~connectrt.errors.ConnectError` and changes nothing.
    """

    def __init__(
        self,
        topic: str = "_schemas",
        *,
        bootstrap_servers: str | None = None,
        default_compatibility: str = DEFAULT_COMPATIBILITY,
        replication_factor: int = -1,
        producer_config: Mapping[str, Any] | None = None,
        consumer_config: Mapping[str, Any] | None = None,
        admin_config: Mapping[str, Any] | None = None,
        topic_configs: Mapping[str, str] | None = None,
        timeout: float = 30.0,
    ) -> None:
        super().__init__(default_compatibility)
        self._log = TopicLog.for_clients(
            topic,
            bootstrap_servers,
            producer_config,
            consumer_config,
            admin_config,
            self._on_record,
            partitions=1,
            replication_factor=replication_factor,
            topic_configs=topic_configs,
            timeout=timeout,
        )

    @property
    def topic(self) -> str:
        return self._log.topic

    def start(self) -> None:
        self._log.start()

    def stop(self) -> None:
        self._log.stop()

    def refresh(self, timeout: float | None = None) -> None:
        """Read records written to the topic by others since the last read."""
        with self._lock:
            self._log.read_to_end(timeout)

    def _on_record(
        self, key: bytes | None, value: bytes | None, partition: int, offset: int
    ) -> None:
        if key is None:
            return
        try:
            decoded_key = json.loads(key)
            decoded_value = None if value is None else json.loads(value)
        except ValueError:
            return
        if not isinstance(decoded_key, dict):
            return
        if decoded_value is not None and not isinstance(decoded_value, dict):
            return
        with self._lock:
            try:
                self._apply(decoded_key, decoded_value)
            except (KeyError, TypeError, ValueError):
                pass  # a record this registry does not understand

    def _write(self, records: list[tuple[Key, Value]]) -> None:
        self._log.send_and_wait([(_encode(k), _encode(v)) for k, v in records])
        for key, value in records:
            self._apply(key, value)
