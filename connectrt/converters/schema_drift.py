"""The schema drift policy of a connector (``schema.drift``): what a schema-registry converter
does when a record's schema is new to its subject and not compatible with the subject's
registered schemas under the subject's compatibility level.

* ``evolve`` (default; what Kafka Connect and connectrt always did): register the schema. The
  registry applies the subject's rule: a compatible schema becomes a new version, an
  incompatible one is refused and the record fails in the converter stage like any conversion
  failure (``errors.tolerance`` and the dead letter queue apply as usual).
* ``fail``: ask the registry first (``POST /compatibility/subjects/{subject}/versions?
  verbose=true``, the check registration makes). A compatible schema is registered; an
  incompatible one raises :class:`SchemaDriftError`, which fails the task whatever
  ``errors.tolerance`` says, its trace naming the fields that differ from the latest version
  and the registry's messages. The record is not written anywhere: it is read again when the
  task restarts (after the subject, its compatibility level or the policy is changed).
* ``dlq``: the same check; the record with an incompatible schema goes to the dead letter
  queue (``errors.deadletterqueue.topic.name``, required) with the ``connectrt.schema.drift*``
  headers of :meth:`SchemaDriftError.headers`, whatever ``errors.tolerance`` says, and the
  rest of the batch flows.

A schema already registered under the subject (an earlier version) is used as it is, as
registration does. The drift check costs registry calls only when a converter meets a schema
it has no id for (once per subject and schema, as registration does), and an incompatible
verdict is kept for the converter's life (until the task restarts), so a run of records with
the drifted schema costs no further call.

The task runtime interprets :class:`SchemaDriftError` (tolerance and the DLQ headers) through
:func:`drift_policy_of` and :func:`drift_headers`. Thread-safety: one :class:`DriftGuard` per
converter, used from that converter's task thread.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from connectrt.api.config import ConfigDef, ConfigType, Importance, ValidString, Width
from connectrt.converters._lru import LRU
from connectrt.converters.registry_client import SchemaRegistryClient
from connectrt.errors import ConfigError, DataError

__all__ = [
    "DLQ",
    "DRIFT_COMPATIBILITY_HEADER",
    "DRIFT_CONFIG",
    "DRIFT_FIELDS_HEADER",
    "DRIFT_HEADER",
    "DRIFT_SUBJECT_HEADER",
    "EVOLVE",
    "FAIL",
    "POLICIES",
    "SCHEMA_DRIFT_CONFIG_DEF",
    "DriftGuard",
    "FieldChange",
    "SchemaDriftError",
    "config_drift_policy",
    "drift_headers",
    "drift_policy_of",
    "field_changes",
    "schema_fields",
]

DRIFT_CONFIG: Final = "schema.drift"
EVOLVE: Final = "evolve"
FAIL: Final = "fail"
DLQ: Final = "dlq"
POLICIES: Final = (EVOLVE, FAIL, DLQ)

DRIFT_HEADER: Final = "connectrt.schema.drift"
"""DLQ header: the whole incompatibility (subject, level, fields, the registry's messages)."""
DRIFT_SUBJECT_HEADER: Final = "connectrt.schema.drift.subject"
DRIFT_COMPATIBILITY_HEADER: Final = "connectrt.schema.drift.compatibility"
DRIFT_FIELDS_HEADER: Final = "connectrt.schema.drift.fields"
"""DLQ header: the names of the top-level fields that differ, comma-separated."""

SCHEMA_DRIFT_CONFIG_DEF: Final = ConfigDef().define(
    DRIFT_CONFIG,
    ConfigType.STRING,
    EVOLVE,
    ValidString.of(*POLICIES, case_insensitive=True),
    Importance.MEDIUM,
    "connectrt: what a schema-registry converter (Avro, JSON Schema, Protobuf) does with a "
    "record whose schema is not compatible with its subject's registered schemas under the "
    "subject's compatibility level. 'evolve': register it (the registry refuses an "
    "incompatible schema and the record fails as any conversion failure); 'fail': fail the "
    "task, its trace naming the fields that differ; 'dlq': send the record to the dead letter "
    "queue (errors.deadletterqueue.topic.name) with connectrt.schema.drift* headers naming "
    "the incompatibility, the rest flowing on. Compatible schemas are registered in every case.",
    group="Schema Drift",
    order_in_group=1,
    width=Width.SHORT,
    display_name="Schema drift policy",
)


def config_drift_policy(config: Mapping[str, Any]) -> str:
    """The ``schema.drift`` policy of a converter config (``evolve`` when unset)."""
    raw = config.get(DRIFT_CONFIG)
    policy = str(raw if raw is not None else EVOLVE).strip().lower() or EVOLVE
    if policy not in POLICIES:
        raise ConfigError(
            f"Invalid value {raw!r} for configuration {DRIFT_CONFIG}: one of {', '.join(POLICIES)}",
            DRIFT_CONFIG,
            raw,
        )
    return policy


# -------------------------------------------------------------------------------- the error


@dataclass(frozen=True)
class FieldChange:
    """A top-level field that differs between the latest registered schema and the new one."""

    name: str
    old: str | None  # its type in the registered schema; None: added
    new: str | None  # its type in the new schema; None: removed

    def __str__(self) -> str:
        if self.old is None:
            return f"{self.name} added ({self.new})"
        if self.new is None:
            return f"{self.name} removed ({self.old})"
        return f"{self.name} changed ({self.old} -> {self.new})"


class SchemaDriftError(DataError):
    """A record's schema is not compatible with its subject's (see the module docstring).

    ``policy`` is the connector's (``fail`` or ``dlq``), ``subject`` and ``compatibility`` the
    subject's and its level, ``version`` the latest version compared with (None if unknown),
    ``changes`` the top-level fields that differ and ``messages`` the registry's verbose
    compatibility messages.
    """

    def __init__(
        self,
        policy: str,
        subject: str,
        compatibility: str,
        version: int | None,
        changes: tuple[FieldChange, ...],
        messages: tuple[str, ...],
    ) -> None:
        self.policy = policy
        self.subject = subject
        self.compatibility = compatibility
        self.version = version
        self.changes = changes
        self.messages = messages
        latest = "its latest version" if version is None else f"version {version}"
        fields = "; ".join(str(c) for c in changes) or "none at the top level"
        super().__init__(
            f"Schema drift on subject {subject} (compatibility {compatibility}, "
            f"{DRIFT_CONFIG}={policy}): the record's schema is not compatible with {latest}. "
            f"Fields that differ: {fields}. Registry: {' | '.join(messages) or 'incompatible'}"
        )

    @property
    def fields(self) -> list[str]:
        """The names of the fields that differ."""
        return [c.name for c in self.changes]

    def again(self) -> SchemaDriftError:
        """A fresh copy, to raise for the next record with the same schema."""
        return SchemaDriftError(
            self.policy,
            self.subject,
            self.compatibility,
            self.version,
            self.changes,
            self.messages,
        )

    def headers(self) -> list[tuple[str, bytes | None]]:
        """The ``connectrt.schema.drift*`` headers of the record's DLQ copy."""
        return [
            (DRIFT_HEADER, str(self).encode()),
            (DRIFT_SUBJECT_HEADER, self.subject.encode()),
            (DRIFT_COMPATIBILITY_HEADER, self.compatibility.encode()),
            (DRIFT_FIELDS_HEADER, ",".join(self.fields).encode()),
        ]


def drift_policy_of(error: BaseException | None) -> str | None:
    """The drift policy behind ``error`` (or one of its causes), None if it is no drift."""
    seen = 0
    while error is not None and seen < 8:
        if isinstance(error, SchemaDriftError):
            return error.policy
        error = error.__cause__
        seen += 1
    return None


def drift_headers(error: BaseException | None) -> list[tuple[str, bytes | None]]:
    """The DLQ headers naming the incompatibility behind ``error`` ([] if it is no drift)."""
    seen = 0
    while error is not None and seen < 8:
        if isinstance(error, SchemaDriftError):
            return error.headers()
        error = error.__cause__
        seen += 1
    return []


# -------------------------------------------------------------------------------- the guard


class DriftGuard:
    """Registers schemas for one converter under its ``schema.drift`` policy.

    Lifecycle: made by the converter's ``configure`` (again on reconfigure, which forgets the
    verdicts); :meth:`register` from the task thread only.
    """

    def __init__(self, policy: str = EVOLVE, cache_size: int = 1000) -> None:
        self.policy = policy
        self._verdicts = LRU(cache_size)

    @classmethod
    def from_config(cls, config: Mapping[str, Any], cache_size: int = 1000) -> DriftGuard:
        return cls(config_drift_policy(config), cache_size)

    def register(
        self,
        client: SchemaRegistryClient,
        subject: str,
        text: str,
        schema_type: str = "AVRO",
        references: list[dict[str, Any]] | None = None,
    ) -> int:
        """The id of ``text`` under ``subject``: registered (``evolve``, or compatible), or
        already registered; SchemaDriftError when the policy refuses it."""
        if self.policy == EVOLVE:
            return client.register(subject, text, schema_type, references)
        known = self._verdicts.get((subject, text))
        if known is not None:
            raise known.again()
        messages = client.compatibility(subject, text, schema_type, references)
        if messages is None:
            return client.register(subject, text, schema_type, references)
        try:
            return client.lookup(subject, text, schema_type, references)  # an earlier version
        except DataError:
            pass
        error = self._verdict(client, subject, text, schema_type, messages)
        self._verdicts.put((subject, text), error)
        raise error.again()

    def _verdict(
        self,
        client: SchemaRegistryClient,
        subject: str,
        text: str,
        schema_type: str,
        messages: list[str],
    ) -> SchemaDriftError:
        level = client.compatibility_level(subject)
        version: int | None = None
        changes: tuple[FieldChange, ...] = ()
        try:
            latest = client.get_version(subject, "latest")
            version = int(latest["version"])
            old = schema_fields(str(latest.get("schemaType") or "AVRO"), str(latest["schema"]))
            changes = tuple(field_changes(old, schema_fields(schema_type, text)))
        except (DataError, KeyError, ValueError, TypeError):
            pass  # the registry's messages still say what differs
        return SchemaDriftError(self.policy, subject, level, version, changes, tuple(messages))


# ----------------------------------------------------------------------- the fields that differ


def field_changes(old: Mapping[str, str], new: Mapping[str, str]) -> list[FieldChange]:
    """The fields added, removed or changed from ``old`` to ``new`` (in the new order, then
    the removed ones)."""
    out = [FieldChange(n, old.get(n), t) for n, t in new.items() if old.get(n) != t]
    out += [FieldChange(n, t, None) for n, t in old.items() if n not in new]
    return out


def schema_fields(schema_type: str, text: str) -> dict[str, str]:
    """The top-level fields of a registered schema and a short description of each type:
    an Avro record's fields, a JSON Schema object's properties (``?`` marks the optional
    ones), the first message of a ``.proto`` file ({} for anything else)."""
    if schema_type == "PROTOBUF":
        return _proto_fields(text)
    try:
        document = json.loads(text)
    except ValueError:
        return {}
    if schema_type == "JSON":
        return _json_schema_fields(document)
    if isinstance(document, dict) and document.get("type") == "record":
        return {str(f["name"]): _avro_type(f["type"]) for f in document.get("fields", [])}
    return {}


def _avro_type(node: Any) -> str:
    if isinstance(node, list):
        return "|".join(_avro_type(n) for n in node)
    if isinstance(node, dict):
        logical = node.get("logicalType") or node.get("connect.name")
        kind = node.get("type")
        if kind == "array":
            return f"array<{_avro_type(node.get('items'))}>"
        if kind == "map":
            return f"map<{_avro_type(node.get('values'))}>"
        if kind in ("record", "enum", "fixed"):
            return str(node.get("name") or kind)
        return str(logical or _avro_type(kind))
    return str(node)


def _json_schema_fields(document: Any) -> dict[str, str]:
    if not isinstance(document, dict):
        return {}
    props = document.get("properties")
    if not isinstance(props, dict):
        return {}
    required = set(document.get("required") or ())
    return {
        str(name): _json_type(node) + ("" if name in required else "?")
        for name, node in props.items()
    }


def _json_type(node: Any) -> str:
    if not isinstance(node, dict):
        return str(node)
    if "connect.type" in node:
        return str(node["connect.type"])
    for combinator in ("oneOf", "anyOf"):
        if isinstance(node.get(combinator), list):
            return "|".join(_json_type(n) for n in node[combinator])
    kind = node.get("type")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    return str(kind or node.get("$ref") or "any")


_PROTO_FIELD = re.compile(
    r"^\s*(?:(repeated|optional)\s+)?(map\s*<[^>]*>|[\w.]+)\s+(\w+)\s*=\s*(\d+)"
)


def _proto_fields(text: str) -> dict[str, str]:
    """The fields of the first top-level message of a ``.proto`` text (oneof members
    included), by name: their label, type and number."""
    out: dict[str, str] = {}
    depth = 0
    in_first = False
    done = False
    oneof_depth: int | None = None
    for raw_line in re.sub(r"//[^\n]*", "", text).splitlines():
        line = raw_line.strip()
        if not done and depth == 0 and re.match(r"message\s+\w+\s*\{", line):
            in_first = True
        elif in_first and (depth == 1 or (oneof_depth is not None and depth == oneof_depth)):
            if re.match(r"oneof\s+\w+\s*\{", line):
                oneof_depth = depth + 1
            else:
                m = _PROTO_FIELD.match(line)
                if m:
                    label = f"{m.group(1)} " if m.group(1) else ""
                    out[m.group(3)] = f"{label}{m.group(2)} = {m.group(4)}"
        depth += line.count("{") - line.count("}")
        if oneof_depth is not None and depth < oneof_depth:
            oneof_depth = None
        if in_first and depth == 0 and "}" in line:
            in_first, done = False, True
    return out
