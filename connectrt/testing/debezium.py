"""Debezium's PostgreSQL connector in Apache Kafka Connect, from Maven jars, for side-by-side tests.

:func:`connect_classpath` resolves Kafka Connect 4.3.1 (``data/debezium/connect/pom.xml``; Debezium
3.6.1, built against Kafka 4.3, fails on Connect 4.4 where Kafka moved ``common.utils`` classes;
the 4.3 worker runs against the 4.4 broker) and
:func:`debezium_plugin_path` Debezium's PostgreSQL connector as a plugin folder
(``data/debezium/postgres/pom.xml``), each into a user cache the way
:mod:`connectrt.testing.kafka_jars` caches the broker (``$XDG_CACHE_HOME/connectrt/...``,
resolved with Maven only when missing or stale, under a lock). :func:`normalize_event` and
:func:`event_differences` compare two connectors' JsonConverter events. :func:`debezium_connect`
gives a :class:`~connectrt.testing.kafka_connect.KafkaConnect` worker (the launcher of the Kafka
Connect differential tests, lifecycle as there) on that 4.3.1 runtime with Debezium's plugin.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from connectrt.testing.kafka_connect import KafkaConnect
from connectrt.testing.kafka_jars import kafka_cache_root, maven_classpath

__all__ = [
    "CONNECT_VERSION",
    "DEBEZIUM_VERSION",
    "connect_classpath",
    "debezium_connect",
    "debezium_plugin_path",
    "event_differences",
    "normalize_event",
    "normalize_json",
]

CONNECT_VERSION = "4.3.1"  # Debezium 3.6.1 does not run on 4.4 (see the pom)
DEBEZIUM_VERSION = "3.6.1.Final"


def _pom(name: str) -> bytes:
    path = f"data/debezium/{name}/pom.xml"
    return resources.files("connectrt.testing").joinpath(path).read_bytes()


def _cache(name: str) -> Path:
    return kafka_cache_root().parent / name


def connect_classpath(*, mvn: str | None = None) -> Path:
    """The folder of Kafka Connect's jars (``java -cp 'FOLDER/*'``), resolved if needed."""
    return maven_classpath(
        _pom("connect"), _cache("kafka-connect") / CONNECT_VERSION, "connect-runtime-*.jar", mvn=mvn
    )


def debezium_plugin_path(*, mvn: str | None = None) -> Path:
    """A folder for Kafka Connect's ``plugin.path`` whose one plugin (its ``libs`` folder) is
    Debezium's PostgreSQL connector with its dependencies, resolved if needed."""
    libs = maven_classpath(
        _pom("postgres"),
        _cache("debezium-postgres") / DEBEZIUM_VERSION,
        "debezium-connector-postgres-*.jar",
        mvn=mvn,
    )
    return libs.parent


def debezium_connect(bootstrap: str, *, mvn: str | None = None) -> KafkaConnect:
    """A Kafka Connect 4.3.1 worker (not started: ``start()`` or ``with``) against
    ``bootstrap`` whose ``plugin.path`` holds Debezium's PostgreSQL connector, with
    JsonConverter keys and values (the jars resolved now, if needed)."""
    json_converter = "org.apache.kafka.connect.json.JsonConverter"
    return KafkaConnect(
        bootstrap,
        heap="512m",
        runtime_libs=connect_classpath(mvn=mvn),
        plugin_dirs=[debezium_plugin_path(mvn=mvn)],
        properties={
            "key.converter": json_converter,
            "value.converter": json_converter,
            "offset.flush.interval.ms": "1000",
            "offset.storage.partitions": "1",
            # Found by scanning too, whether or not the plugin ships ServiceLoader manifests.
            "plugin.discovery": "hybrid_warn",
        },
    )


_VARYING_ENVELOPE = {"ts_ms", "ts_us", "ts_ns"}
_VARYING_SOURCE = {"version", "name"}
# A snapshot's time, transaction and position are each connector's own (its slot's).
_VARYING_SNAPSHOT_SOURCE = {"ts_ms", "ts_us", "ts_ns", "txId", "lsn", "sequence"}


def _json_int(text: str) -> tuple[str, int]:
    return ("int", int(text))


def _json_float(text: str) -> tuple[str, float]:
    return ("float", float(text))


def normalize_event(event: Any, prefix: str) -> Any:
    """The event with ``prefix`` replaced by ``P`` in names and the varying fields removed."""
    if event is None:
        return None
    return normalize_json(json.dumps(event).encode(), prefix)


def normalize_json(raw: bytes | None, prefix: str) -> Any:
    """:func:`normalize_event` of a record's JSON as it is in the topic (parsed once). Numbers
    come out as ``("int", n)`` or ``("float", x)``, so that equal values of different JSON
    kinds differ; floats compare by value (Java and Python print some differently)."""
    if raw is None:
        return None
    quoted = prefix.encode()
    text = raw.replace(b'"' + quoted + b".", b'"P.').replace(b'"' + quoted + b'"', b'"P"')
    # Numbers keep their JSON kind: 1, 1.0 and true are three different values here.
    out = json.loads(text, parse_int=_json_int, parse_float=_json_float)
    payload = out.get("payload") if isinstance(out, dict) else None
    if isinstance(payload, dict) and "source" in payload:
        for name in _VARYING_ENVELOPE:
            payload.pop(name, None)
        source = payload["source"]
        for name in _VARYING_SOURCE:
            source.pop(name, None)
        if payload.get("op") == "r":
            for name in _VARYING_SNAPSHOT_SOURCE:
                source.pop(name, None)
    return out


def event_differences(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """Paths where ``a`` (Debezium's event) and ``b`` (connectrt's) differ, with both values
    (schema fields are matched by name)."""
    if a == b:  # the common case, at C speed
        return []
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                out.append((f"{path}.{k}", a.get(k, "<absent>"), b.get(k, "<absent>")))
            else:
                out.extend(event_differences(a[k], b[k], f"{path}.{k}"))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        if all(isinstance(x, dict) and "field" in x for x in a + b):  # schema fields by name
            return event_differences({x["field"]: x for x in a}, {x["field"]: x for x in b}, path)
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out.extend(event_differences(x, y, f"{path}[{i}]"))
        return out
    return [] if a == b else [(path, a, b)]
