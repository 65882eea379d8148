"""Config definitions written group by group, numbered within their group as they are defined.

A connector's keys are shown in groups (``group``) and in order within each group
(``order_in_group``). Writing both on every key repeats the group name and makes inserting a
key mean renumbering its neighbours; :class:`GroupedDefinitions` takes them from where the key
is defined instead::

    CONFIG_DEF = (
        GroupedDefinitions()
        .group("Connection")
        .define("host", ConfigType.STRING, importance=Importance.HIGH, documentation="...")
        .define("port", ConfigType.INT, 5432, None, Importance.HIGH, "...")
        .build()
    )

Built at import time; the resulting :class:`~connectrt.api.ConfigDef` is immutable and safe
to share between threads (the builder itself is not).
"""

from __future__ import annotations

from typing import Any

from connectrt.api import ConfigDef, ConfigType

__all__ = ["GroupedDefinitions"]


class GroupedDefinitions:
    """Builds a ConfigDef whose keys get the current group and the next number in it.

    ``base``'s keys come first and count: a group they already use goes on from its last
    number. :meth:`group` chooses the group of the keys defined after it (returning to a group
    continues its numbering); a key defined before any :meth:`group` call has none.
    """

    def __init__(self, base: ConfigDef | None = None) -> None:
        self._config_def = ConfigDef(base.keys.values() if base is not None else ())
        self._group: str | None = None
        self._defined: dict[str | None, int] = {}
        for key in self._config_def.keys.values():
            self._defined[key.group] = max(self._defined.get(key.group, 0), key.order_in_group)

    def group(self, name: str) -> GroupedDefinitions:
        """Put the keys defined from now on in group ``name``; returns ``self``."""
        self._group = name
        return self

    def define(self, name: str, type: ConfigType, *args: Any, **options: Any) -> GroupedDefinitions:
        """:meth:`ConfigDef.define <connectrt.api.ConfigDef.define>` with the group and order
        filled in: ``args`` and ``options`` are its other arguments (default, validator,
        importance, documentation...) but ``group`` and ``order_in_group``; returns ``self``."""
        order = self._defined.get(self._group, 0) + 1
        self._defined[self._group] = order
        in_group = order if self._group is not None else -1
        self._config_def.define(
            name, type, *args, group=self._group, order_in_group=in_group, **options
        )
        return self

    def build(self) -> ConfigDef:
        """The ConfigDef defined so far (``base``'s keys, then these)."""
        return self._config_def
