"""Connectors that declare their version, ConfigDef and task class as class attributes.

:class:`DeclaredConnector` answers ``version()``, ``config_def()`` and ``task_class()`` from
``plugin_version``, ``definition`` and ``task_type``, so a connector states them once instead
of writing the three methods. Put it before the connector base class::

    class JdbcSourceConnector(DeclaredConnector, SourceConnector):
        plugin_version = VERSION
        definition = SOURCE_CONFIG_DEF
        task_type = JdbcSourceTask

Stateless: safe from any thread.
"""

from __future__ import annotations

from typing import ClassVar

from connectrt.api import ConfigDef, Task

__all__ = ["DeclaredConnector"]


class DeclaredConnector:
    """A connector mixin answering the three declarations from class attributes."""

    #: What ``version()`` answers.
    plugin_version: ClassVar[str]
    #: What ``config_def()`` answers.
    definition: ClassVar[ConfigDef]
    #: What ``task_class()`` answers (or override ``task_class``, for a task defined later).
    task_type: ClassVar[type[Task]]

    def version(self) -> str:
        return self.plugin_version

    def config_def(self) -> ConfigDef:
        return self.definition

    def task_class(self) -> type[Task]:
        return self.task_type
