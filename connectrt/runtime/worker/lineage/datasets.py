"""A connector's input and output datasets, named by OpenLineage's dataset naming conventions.

:func:`connector_datasets` reads them from the connector's (resolved) config, its type and the
topics its tasks used; nothing here connects anywhere. Kafka topics are ``kafka://host:port``
(the first bootstrap server) + the topic; the connector's other side is named from the config
keys of the bundled connectors:

* JDBC (``connection.url``): ``postgres://host:port`` + ``database.schema.table`` (schema
  ``public`` when the table names none), ``mysql://host:port`` + ``database.table``, SQLite
  ``sqlite://<database file's path>`` + ``main.table``; tables from ``table.whitelist`` /
  ``table.include.list`` / ``tables`` (source) or ``table.name.format`` per topic (sink);
* PostgreSQL CDC (``database.hostname``): ``postgres://host:port`` + ``dbname.schema.table``
  of ``table.include.list``;
* FileStream (``file``, connectors whose class name says File): ``file://<this host>`` + the
  file's absolute path;
* object stores (``s3.bucket.name`` / ``store.url``): ``s3://bucket`` (or ``file://host``) +
  ``<prefix>/<topics.dir>/<topic>``;
* Iceberg (``iceberg.tables``): the warehouse location's ``scheme://authority`` + its path and
  the table's namespace path, or ``iceberg://<catalog>`` + ``namespace.table`` without one.

A URL's user information (``user:password@``) and query (``?password=...``) never reach a
dataset name: only scheme, host, port and path are read. Pure functions, thread-safe.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

__all__ = ["Dataset", "DatasetSides", "connector_datasets", "kafka_namespace"]

_DEFAULT_PORTS = {"postgres": 5432, "mysql": 3306}


@dataclass(frozen=True)
class Dataset:
    """One OpenLineage dataset: ``namespace`` (the data source) and ``name`` within it;
    ``fields`` (name, type) for its schema facet when known."""

    namespace: str
    name: str
    fields: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class DatasetSides:
    inputs: list[Dataset] = field(default_factory=list)
    outputs: list[Dataset] = field(default_factory=list)


def kafka_namespace(bootstrap_servers: str) -> str:
    """``kafka://host:port`` of the first bootstrap server (a ``PLAINTEXT://`` style listener
    prefix dropped, port 9092 when none)."""
    first = bootstrap_servers.split(",")[0].strip()
    if "://" in first:
        first = first.split("://", 1)[1]
    host, _, port = first.rpartition(":")
    if not host or not port.isdigit():
        host, port = first, "9092"
    return f"kafka://{host}:{port}"


def _list(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def _database(url: str) -> tuple[str, str, str] | None:
    """``(kind, namespace, database)`` of a JDBC or SQLAlchemy URL; kind is ``postgres``,
    ``mysql``, ``sqlite`` or the URL's own scheme. User info and query are dropped."""
    text = url.strip()
    if text.startswith("jdbc:"):
        text = text[len("jdbc:") :]
    scheme = text.split(":", 1)[0].split("+", 1)[0].lower()
    if scheme == "sqlite":
        rest = text.split(":", 1)[1] if ":" in text else ""
        rest = rest.split("?", 1)[0]
        if rest.startswith("///"):
            path = rest[3:]
        elif rest.startswith("//"):
            path = rest[2:]
        else:
            path = rest
        path = ":memory:" if path in ("", ":memory:") else os.path.abspath(path)
        return "sqlite", f"sqlite://{path}", "main"
    kind = "postgres" if scheme in ("postgresql", "postgres", "psql") else scheme
    parts = urlsplit(text if "://" in text else f"{kind}://{text}")
    host = parts.hostname or "localhost"
    try:
        port = parts.port or _DEFAULT_PORTS.get(kind)
    except ValueError:
        port = _DEFAULT_PORTS.get(kind)
    authority = f"{host}:{port}" if port else host
    database = unquote(parts.path.lstrip("/").split("/")[0]) if parts.path else ""
    return kind, f"{kind}://{authority}", database


def _table_name(kind: str, database: str, table: str) -> str:
    """``database.schema.table`` (PostgreSQL, schema ``public`` by default), ``database.table``
    (MySQL), ``main.table`` (SQLite), else the table as given."""
    table = table.replace('"', "").replace("`", "")
    parts = table.split(".")
    if kind == "postgres":
        if len(parts) == 1:
            parts = ["public", *parts]
        return ".".join([database, *parts[-2:]])
    if kind == "mysql":
        return ".".join([database, parts[-1]])
    if kind == "sqlite":
        return f"main.{parts[-1]}"
    return ".".join([database, *parts]) if database else table


def _file_namespace() -> str:
    return f"file://{socket.gethostname()}"


def _location(url: str) -> tuple[str, str]:
    """``(namespace, path)`` of a storage location URL (``s3://bucket/p``, ``file:///p``, a
    plain path)."""
    parts = urlsplit(url)
    if parts.scheme in ("", "file"):
        return _file_namespace(), os.path.abspath(parts.path or url)
    return f"{parts.scheme}://{parts.hostname or ''}", parts.path.strip("/")


def _join(*parts: str) -> str:
    return "/".join(p.strip("/") for p in parts if p.strip("/"))


def _jdbc(config: Mapping[str, str], source: bool, topics: list[str]) -> list[Dataset]:
    db = _database(config.get("connection.url", ""))
    if db is None:
        return []
    kind, namespace, database = db
    if source:
        tables = (
            _list(config.get("table.whitelist"))
            or _list(config.get("table.include.list"))
            or _list(config.get("tables"))
        )
    else:
        pattern = config.get("table.name.format") or "${topic}"
        tables = [pattern.replace("${topic}", t) for t in topics]
    return [Dataset(namespace, _table_name(kind, database, t)) for t in tables]


def _jdbc_source_topics(config: Mapping[str, str]) -> list[str]:
    prefix = config.get("topic.prefix", "")
    if config.get("query", "").strip():
        return [prefix] if prefix else []
    tables = (
        _list(config.get("table.whitelist"))
        or _list(config.get("table.include.list"))
        or _list(config.get("tables"))
    )
    return [prefix + t.split(".")[-1].replace('"', "") for t in tables]


def _cdc(config: Mapping[str, str]) -> list[Dataset]:
    host = config.get("database.hostname", "localhost")
    port = config.get("database.port", "5432") or "5432"
    database = config.get("database.dbname", "")
    namespace = f"postgres://{host}:{port}"
    return [
        Dataset(namespace, _table_name("postgres", database, t))
        for t in _list(config.get("table.include.list"))
        if not re.search(r"[*?\[\]()|+\\]", t)  # a pattern names no one table
    ]


def _objectstore(config: Mapping[str, str], topics: list[str]) -> list[Dataset]:
    topics_dir = config.get("topics.dir", "topics") or "topics"
    bucket = config.get("s3.bucket.name", "").strip()
    store = config.get("store.url", "").strip()
    if store:
        namespace, prefix = _location(store)
    elif bucket:
        namespace, prefix = f"s3://{bucket}", ""
    else:
        return []
    return [Dataset(namespace, _join(prefix, topics_dir, t)) for t in topics]


def _iceberg(config: Mapping[str, str]) -> list[Dataset]:
    tables = _list(config.get("iceberg.tables"))
    warehouse = config.get("iceberg.catalog.warehouse", "").strip()
    if warehouse:
        namespace, path = _location(warehouse)
        return [Dataset(namespace, _join(path, *t.split("."))) for t in tables]
    catalog = config.get("iceberg.catalog", "") or config.get("iceberg.catalog.name", "")
    return [Dataset(f"iceberg://{catalog or 'default'}", t) for t in tables]


def _file(config: Mapping[str, str], class_name: str) -> list[Dataset]:
    path = config.get("file", "").strip()
    if not path or "file" not in class_name.lower():
        return []
    return [Dataset(_file_namespace(), os.path.abspath(path))]


def connector_datasets(
    config: Mapping[str, str],
    connector_type: str,
    class_name: str,
    bootstrap_servers: str,
    topics_used: Iterable[str] = (),
) -> DatasetSides:
    """The inputs and outputs of a connector (``connector_type``: ``source`` or ``sink``;
    ``class_name``: its class's name; ``topics_used``: the topics its tasks used so far)."""
    kafka = kafka_namespace(config.get("bootstrap.servers") or bootstrap_servers)
    used = sorted(set(topics_used))
    if connector_type == "sink":
        topics = sorted(set(_list(config.get("topics"))) | set(used))
        external = (
            _jdbc(config, False, topics)
            if config.get("connection.url")
            else _objectstore(config, topics)
            if config.get("s3.bucket.name") or config.get("store.url")
            else _iceberg(config)
            if config.get("iceberg.tables")
            else _file(config, class_name)
        )
        return DatasetSides([Dataset(kafka, t) for t in topics], external)
    if config.get("connection.url"):
        external = _jdbc(config, True, [])
        declared = _jdbc_source_topics(config)
    elif config.get("database.hostname"):
        external, declared = _cdc(config), []
    else:
        external = _file(config, class_name)
        declared = _list(config.get("topic"))
    topics = sorted(set(declared) | set(used))
    return DatasetSides(external, [Dataset(kafka, t) for t in topics])
