"""The registry's rules over its in-memory state: what :class:`RegistryCore` answers and which
records each change writes (see :mod:`connectrt.schema_registry.schema_records`).

Applying a record is idempotent, so a store can apply its own writes at once and again when
read back. Ids are assigned monotonically (the highest id ever seen plus one); a schema whose
canonical form was registered before, under any subject, gets the same id. Soft deletion
rewrites a version with ``deleted: true``; permanent deletion writes a tombstone. All
operations are serialized with one lock.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from connectrt.schema_registry.compatibility import LEVELS, InvalidSchemaError
from connectrt.schema_registry.registry_errors import (
    RegistryError,
    invalid_level,
    schema_not_found,
    subject_not_found,
    version_not_found,
)
from connectrt.schema_registry.schema_records import (
    MAX_VERSION,
    Key,
    Reference,
    SchemaVersion,
    Value,
    canonical_schema,
    config_key,
    parse_version,
    schema_identity,
    schema_key,
    schema_value,
)
from connectrt.schema_registry.schema_types import SCHEMA_TYPES, check_compatibility, parse

__all__ = ["DEFAULT_COMPATIBILITY", "RegistryCore"]

DEFAULT_COMPATIBILITY = "BACKWARD"


class RegistryCore:
    """The registry's rules over in-memory state; subclasses persist records in ``_write``."""

    def __init__(self, default_compatibility: str = DEFAULT_COMPATIBILITY) -> None:
        level = default_compatibility.upper()
        if level not in LEVELS:
            raise ValueError(f"Unknown compatibility level {default_compatibility}")
        self._default_level = level
        self._lock = threading.RLock()
        self._subjects: dict[str, dict[int, SchemaVersion]] = {}
        self._by_id: dict[int, dict[tuple[str, int], SchemaVersion]] = {}
        self._ids: dict[str, int] = {}  # schema identity -> id (never forgotten)
        self._max_id = 0
        self._config: dict[str | None, str] = {}
        self._parsed: dict[tuple[str, str, tuple[Reference, ...]], Any] = {}

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
                str(value.get("schemaType") or "AVRO").upper(),
                tuple(Reference.from_json(r) for r in value.get("references") or ()),
            )
            versions[version] = sv
            self._by_id.setdefault(sv.id, {})[(subject, version)] = sv
            self._ids.setdefault(
                schema_identity(sv.schema_type, canonical_schema(sv.schema), sv.references),
                sv.id,
            )
            self._max_id = max(self._max_id, sv.id)
        elif keytype == "CONFIG":
            level = None if value is None else value.get("compatibilityLevel")
            if level is None:
                self._config.pop(key.get("subject"), None)
            else:
                self._config[key.get("subject")] = str(level).upper()
        elif keytype == "DELETE_SUBJECT" and value is not None:
            subject, upto = str(value["subject"]), int(value.get("version", MAX_VERSION))
            for v, sv in list(self._subjects.get(subject, {}).items()):
                if v <= upto and not sv.deleted:
                    self._apply(schema_key(subject, v), schema_value(sv, deleted=True))

    # -- helpers ----------------------------------------------------------------------------

    def _parse(
        self, text: str, schema_type: str = "AVRO", references: Sequence[Reference] = ()
    ) -> Any:
        """``text`` parsed as a ``schema_type`` schema, its references resolved (422 when
        it is invalid or a reference is missing)."""
        key = (text, schema_type, tuple(references))
        parsed = self._parsed.get(key)
        if parsed is None:
            if schema_type not in SCHEMA_TYPES:
                raise RegistryError(422, 42201, f"Invalid schema type {schema_type}")
            try:
                parsed = parse(schema_type, text, self._resolve(references, set()))
            except InvalidSchemaError as exc:
                raise RegistryError(422, 42201, str(exc)) from None
            if len(self._parsed) > 10_000:
                self._parsed.clear()
            self._parsed[key] = parsed
        return parsed

    def _parse_version(self, sv: SchemaVersion) -> Any:
        return self._parse(sv.schema, sv.schema_type, sv.references)

    def _resolve(self, references: Sequence[Reference], seen: set[str]) -> dict[str, str]:
        """The texts of ``references`` and, transitively, of theirs, by reference name."""
        texts: dict[str, str] = {}
        for ref in references:
            key = f"{ref.subject}/{ref.version}"
            if key in seen:
                continue
            seen.add(key)
            try:
                target = self._find(ref.subject, ref.version, deleted=False)
            except RegistryError:
                raise RegistryError(
                    422,
                    42201,
                    f"Invalid schema: reference {ref.name} to subject {ref.subject} version "
                    f"{ref.version} not found",
                ) from None
            texts.update(self._resolve(target.references, seen))
            texts[ref.name] = target.schema
        return texts

    def _same(self, sv: SchemaVersion, identity: str) -> bool:
        return schema_identity(sv.schema_type, canonical_schema(sv.schema), sv.references) == (
            identity
        )

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
        return self.schema_version_by_id(schema_id).schema

    def schema_version_by_id(self, schema_id: int) -> SchemaVersion:
        """A version holding ``schema_id`` (its text, type and references)."""
        with self._lock:
            refs = self._by_id.get(schema_id)
            if not refs:
                raise schema_not_found(schema_id)
            return next(iter(refs.values()))

    def referenced_by(self, subject: str, version: str | int) -> list[int]:
        """The ids of the schemas that reference ``subject``'s ``version``."""
        with self._lock:
            target = self._find(subject, version, deleted=False)
            ids = {
                sv.id
                for versions in self._subjects.values()
                for sv in versions.values()
                if not sv.deleted
                and any(r.subject == subject and r.version == target.version for r in sv.references)
            }
            return sorted(ids)

    def versions_by_id(self, schema_id: int, deleted: bool = False) -> list[SchemaVersion]:
        with self._lock:
            refs = self._by_id.get(schema_id)
            if not refs:
                raise schema_not_found(schema_id)
            return sorted(
                (sv for sv in refs.values() if deleted or not sv.deleted),
                key=lambda sv: (sv.subject, sv.version),
            )

    def lookup(
        self,
        subject: str,
        schema: str,
        deleted: bool = False,
        schema_type: str = "AVRO",
        references: Sequence[Reference] = (),
    ) -> SchemaVersion:
        with self._lock:
            refs = tuple(references)
            self._parse(schema, schema_type, refs)
            identity = schema_identity(schema_type, canonical_schema(schema), refs)
            live = self._existing(subject, deleted)
            for sv in reversed(live.values()):
                if self._same(sv, identity):
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
        self,
        subject: str,
        schema: str,
        version: str | int | None = None,
        schema_type: str = "AVRO",
        references: Sequence[Reference] = (),
    ) -> list[str]:
        with self._lock:
            new = self._parse(schema, schema_type, tuple(references))
            level = self._level(subject)
            if version is None:
                previous = [self._parse_version(sv) for sv in self._live(subject).values()]
            else:
                previous = [self._parse_version(self._find(subject, version, False))]
                level = level.replace("_TRANSITIVE", "")
            return check_compatibility(schema_type, level, new, previous)

    # -- writes -----------------------------------------------------------------------------

    def register(
        self,
        subject: str,
        schema: str,
        schema_type: str = "AVRO",
        references: Sequence[Reference] = (),
    ) -> SchemaVersion:
        with self._lock:
            refs = tuple(references)
            parsed = self._parse(schema, schema_type, refs)
            identity = schema_identity(schema_type, canonical_schema(schema), refs)
            live = self._live(subject)
            for sv in reversed(live.values()):
                if self._same(sv, identity):
                    return sv
            previous = [self._parse_version(sv) for sv in live.values()]
            messages = check_compatibility(schema_type, self._level(subject), parsed, previous)
            if messages:
                raise RegistryError(
                    409,
                    409,
                    "Schema being registered is incompatible with an earlier schema for "
                    f'subject "{subject}", details: {messages}',
                )
            schema_id = self._ids.get(identity, self._max_id + 1)
            version = max(self._subjects.get(subject, {}), default=0) + 1
            sv = SchemaVersion(subject, version, schema_id, schema, False, schema_type, refs)
            self._write([(schema_key(subject, version), schema_value(sv))])
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
                records = [(schema_key(subject, v), None) for v in everything]
                if subject in self._config:
                    records.append((config_key(subject), None))
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
                (schema_key(subject, v), schema_value(sv, deleted=True)) for v, sv in live.items()
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
                self._write([(schema_key(subject, sv.version), None)])
            else:
                self._write([(schema_key(subject, sv.version), schema_value(sv, deleted=True))])
            return sv.version

    def set_compatibility(self, subject: str | None, level: str) -> str:
        if not isinstance(level, str) or level.upper() not in LEVELS:
            raise invalid_level()
        with self._lock:
            self._write([(config_key(subject), {"compatibilityLevel": level.upper()})])
            return level.upper()

    def delete_compatibility(self, subject: str | None) -> str:
        with self._lock:
            if subject is not None and subject not in self._subjects:
                raise subject_not_found(subject)
            old = self._level(subject)
            self._write([(config_key(subject), None)])
            return old
