"""Kafka Connect's JsonConverter jars (connect-json 4.4.0 and its dependencies), resolved from
Maven Central into ``$XDG_CACHE_HOME/connectrt/connect-json/<version>/libs`` by the shipped
``data/connect_json/pom.xml``, for the Java-vs-Python JSON converter differential test.

Resolution, caching and locking are :func:`connectrt.testing.kafka_jars.maven_classpath`'s:
Maven runs only when the folder is missing or was resolved from another pom.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from connectrt.testing.kafka_jars import kafka_cache_root, maven_classpath

__all__ = ["CONNECT_JSON_VERSION", "connect_json_classpath", "harness_source"]

#: The Kafka Connect version the shipped pom pins.
CONNECT_JSON_VERSION = "4.4.0"

_DATA = resources.files("connectrt.testing").joinpath("data/connect_json")


def connect_json_classpath(*, mvn: str | None = None, timeout: float = 1800.0) -> Path:
    """The folder of connect-json's jars (for ``javac -cp 'FOLDER/*'``), resolved if needed;
    raises :class:`~connectrt.testing.kafka_jars.MavenUnavailable` when Maven cannot."""
    folder = kafka_cache_root().parent / "connect-json" / CONNECT_JSON_VERSION
    pom = _DATA.joinpath("pom.xml").read_bytes()
    return maven_classpath(pom, folder, "connect-json-*.jar", mvn=mvn, timeout=timeout)


def harness_source() -> str:
    """The Java source of the differential's harness (``JsonDiff.java``)."""
    return _DATA.joinpath("JsonDiff.java").read_text(encoding="utf-8")
