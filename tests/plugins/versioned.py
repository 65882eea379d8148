"""Write side-by-side versions of one plugin package into a ``plugin.path`` (KIP-891 tests).

:func:`install_versions` writes ``<plugin_path>/<package>-<version>/<package>/__init__.py`` for
each version: the same package, module and class names, differing only in what they report
and mark. The package holds one plugin of each kind, each marking records with its version:

* ``VersionedSource`` (connector, ``version()`` = V) and its task, which emits ``records``
  (default 3) values ``"source=V"`` to ``topic`` once;
* ``MarkConverter``: a string converter writing ``"<value>|converter=V"``;
* ``MarkTransform``: appends ``"|transform=V"`` to string values;
* ``AlwaysPredicate``: true for every record, ``version()`` = V.

The ``only.in.<major>`` key is defined by the connector of that major version only, so the
config definitions of two versions differ.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["install_versions"]

_TEMPLATE = """
import threading

from connectrt.api import (
    ConfigDef, ConfigType, Converter, Importance, Predicate, SchemaAndValue, SourceConnector,
    SourceRecord, SourceTask, Transformation,
)

VERSION = "{version}"


class VersionedSource(SourceConnector):
    def version(self):
        return VERSION

    def start(self, config):
        self.config = dict(config)

    def stop(self):
        pass

    def task_class(self):
        return VersionedTask

    def task_configs(self, max_tasks):
        return [dict(self.config)]

    def config_def(self):
        return ConfigDef().define(
            "only.in.{major}", ConfigType.STRING, "", None, Importance.LOW, "Version {major} only."
        )


class VersionedTask(SourceTask):
    def version(self):
        return VERSION

    def start(self, config):
        self.topic = config["topic"]
        self.left = int(config.get("records", "3"))
        self.stopping = threading.Event()

    def poll(self):
        if self.left <= 0:
            self.stopping.wait(0.2)
            return None
        n, self.left = self.left, 0
        return [SourceRecord(None, None, self.topic, value="source=" + VERSION) for _ in range(n)]

    def stop(self):
        self.stopping.set()


class MarkConverter(Converter):
    def version(self):
        return VERSION

    def configure(self, config, is_key):
        pass

    def from_connect_data(self, topic, schema, value, headers=None):
        return None if value is None else (str(value) + "|converter=" + VERSION).encode()

    def to_connect_data(self, topic, data, headers=None):
        return SchemaAndValue(None, None if data is None else data.decode())


class MarkTransform(Transformation):
    def version(self):
        return VERSION

    def configure(self, config):
        pass

    def apply(self, record):
        return record.new_record(value=str(record.value) + "|transform=" + VERSION)


class AlwaysPredicate(Predicate):
    def version(self):
        return VERSION

    def configure(self, config):
        pass

    def test(self, record):
        return True
"""


def install_versions(plugin_path: Path, package: str, versions: list[str]) -> None:
    for version in versions:
        directory = plugin_path / f"{package}-{version}" / package
        directory.mkdir(parents=True)
        major = version.split(".", 1)[0]
        (directory / "__init__.py").write_text(_TEMPLATE.format(version=version, major=major))
