"""Log levels of this process, as Kafka Connect's ``/admin/loggers`` API shows and sets them.

Levels live in Python's :mod:`logging` (this object only reads and sets them); it remembers when
each logger's level was last set through it, which Kafka reports as ``last_modified``.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from connectrt.errors import NotFoundError

__all__ = ["LoggerLevels"]


class LoggerLevels:
    """Reads and sets logger levels with Kafka's semantics (a name sets its descendants too).

    Lifecycle: built once per herder, lives as long as the process; nothing to start or stop.
    Threading: every method may be called from any thread (REST handlers run in a thread pool).
    It takes no lock of its own: :mod:`logging` serializes its own changes, and the
    last-modified times are single dict writes. Two concurrent :meth:`set_level` calls on
    overlapping names leave either level in place, with either's time.
    """

    def __init__(self) -> None:
        self._last_modified: dict[str, int] = {}

    def all_levels(self) -> dict[str, dict[str, Any]]:
        """``root`` and every logger with a level of its own: ``{name: {level, last_modified}}``."""
        root = logging.getLogger()
        out = {
            "root": {
                "level": logging.getLevelName(root.level),
                "last_modified": self._last_modified.get("root"),
            }
        }
        for name in sorted(logging.root.manager.loggerDict):
            logger = logging.root.manager.loggerDict[name]
            if isinstance(logger, logging.Logger) and logger.level != logging.NOTSET:
                out[name] = {
                    "level": logging.getLevelName(logger.level),
                    "last_modified": self._last_modified.get(name),
                }
        return out

    def level(self, name: str) -> dict[str, Any]:
        """One logger's effective level; :class:`NotFoundError` for a logger nobody created."""
        if name == "root":
            return self.all_levels()["root"]
        existing = logging.root.manager.loggerDict.get(name)
        if not isinstance(existing, logging.Logger):
            raise NotFoundError(f"Logger {name} not found.")
        return {
            "level": logging.getLevelName(existing.getEffectiveLevel()),
            "last_modified": self._last_modified.get(name),
        }

    def set_level(self, name: str, level: str) -> list[str]:
        """Set ``name`` and its descendants; returns the names changed (Kafka's semantics)."""
        value = logging.getLevelName(level.upper())
        if level.upper() in ("TRACE",):
            value = logging.DEBUG
        elif level.upper() == "FATAL":
            value = logging.CRITICAL
        elif level.upper() == "WARN":
            value = logging.WARNING
        elif level.upper() == "OFF":
            value = logging.CRITICAL + 10
        if not isinstance(value, int):
            raise NotFoundError(f"invalid log level '{level}'.")
        now = int(time.time() * 1000)
        changed = []
        if name == "root":
            logging.getLogger().setLevel(value)
            changed.append("root")
        else:
            logging.getLogger(name).setLevel(value)
            changed.append(name)
            prefix = name + "."
            for other, logger in list(logging.root.manager.loggerDict.items()):
                if other.startswith(prefix) and isinstance(logger, logging.Logger):
                    logger.setLevel(value)
                    changed.append(other)
        for n in changed:
            self._last_modified[n] = now
        return sorted(changed)
