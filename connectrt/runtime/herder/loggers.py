"""Log levels of this process, as Kafka Connect's ``/admin/loggers`` API shows and sets them.

Levels live in Python's :mod:`logging` (this object only reads and sets them); it remembers when
each logger's level was last set through it, which Kafka reports as ``last_modified``.

Setting the level of a logger nobody created creates it, as Kafka Connect does; but a logger
lives as long as the process, so the names created that way are bounded: at most
:data:`MAX_NAME_LENGTH` characters each, and at most :data:`MAX_CREATED` new entries in
:mod:`logging`'s registry (the logger and the placeholders of its missing parents) per
``LoggerLevels`` (one per worker), a :class:`~connectrt.runtime.errors.BadRequestError` (HTTP
400) beyond. Existing loggers can always be set.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from connectrt.errors import NotFoundError
from connectrt.runtime.errors import BadRequestError

__all__ = ["KAFKA_LEVELS", "MAX_CREATED", "MAX_NAME_LENGTH", "LoggerLevels"]

MAX_NAME_LENGTH = 256
MAX_CREATED = 1000
# Kafka's (log4j) level names and Python's, upper case, with the Python level each sets.
KAFKA_LEVELS: dict[str, int] = {
    "OFF": logging.CRITICAL + 10,
    "FATAL": logging.CRITICAL,
    "CRITICAL": logging.CRITICAL,
    "ERROR": logging.ERROR,
    "WARN": logging.WARNING,
    "WARNING": logging.WARNING,
    "INFO": logging.INFO,
    "DEBUG": logging.DEBUG,
    "TRACE": logging.DEBUG,
    "ALL": logging.DEBUG,
}


class LoggerLevels:
    """Reads and sets logger levels with Kafka's semantics (a name sets its descendants too).

    Lifecycle: built once per herder, lives as long as the process; nothing to start or stop.
    Threading: every method may be called from any thread (REST handlers run in a thread pool).
    :mod:`logging` serializes its own changes and the last-modified times are single dict
    writes; one lock makes "check the cap, create the logger" atomic. Two concurrent
    :meth:`set_level` calls on overlapping names leave either level in place, with either's
    time.
    """

    def __init__(self, max_created: int = MAX_CREATED) -> None:
        self._last_modified: dict[str, int] = {}
        self._max_created = max_created
        self._created = 0  # loggers (and parent placeholders) created through this object
        self._create_lock = threading.Lock()

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
        """Set ``name`` and its descendants; returns the names whose level this changed
        (Kafka's semantics: a logger already at ``level`` is neither listed nor stamped, a
        logger the call creates always is). An unknown level is a NotFoundError (Kafka
        answers 404); a new name over the bounds a BadRequestError."""
        value = KAFKA_LEVELS.get(level.upper())
        if value is None:
            raise NotFoundError(f"invalid log level '{level}'.")
        now = int(time.time() * 1000)
        if name == "root":
            targets = {"root": logging.getLogger()}
            created = False
        else:
            created = not isinstance(logging.root.manager.loggerDict.get(name), logging.Logger)
            targets = {name: self._logger(name)}
            prefix = name + "."
            for other, logger in list(logging.root.manager.loggerDict.items()):
                if other.startswith(prefix) and isinstance(logger, logging.Logger):
                    targets[other] = logger
        before = {n: logger.getEffectiveLevel() for n, logger in targets.items()}
        for logger in targets.values():
            logger.setLevel(value)
        changed = [n for n in targets if before[n] != value or (created and n == name)]
        for n in changed:
            self._last_modified[n] = now
        return sorted(changed)

    def _logger(self, name: str) -> logging.Logger:
        """The logger ``name``, created if it does not exist and the bounds allow it."""
        existing = logging.root.manager.loggerDict.get(name)
        if isinstance(existing, logging.Logger):
            return existing
        if len(name) > MAX_NAME_LENGTH:
            raise BadRequestError(
                f"Logger name is {len(name)} characters long; a new logger's name may have at "
                f"most {MAX_NAME_LENGTH}"
            )
        # logging also creates a placeholder for every missing parent ("a", "a.b" for
        # "a.b.c"): those count too.
        parts = name.split(".")
        known = logging.root.manager.loggerDict
        new = [n for n in (".".join(parts[: i + 1]) for i in range(len(parts))) if n not in known]
        with self._create_lock:
            if self._created + len(new) > self._max_created:
                raise BadRequestError(
                    f"Setting the level of {name} would create {len(new)} new loggers, and "
                    f"{self._created} of the {self._max_created} this API may create exist "
                    "already; set the level of an existing logger or of a parent (a level set "
                    "on a name applies to its descendants)"
                )
            self._created += len(new)
            return logging.getLogger(name)
