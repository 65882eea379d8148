"""Where a plugin may read and write files: the worker's ``file.connectors.allowed.dirs``.

A connector that opens a file named by its config (the bundled FileStreamSource and
FileStreamSink) lets whoever can write a connector config, a REST caller, read or write that
file with the worker's rights. So the worker confines them, as Kafka did when it took its file
connectors off the default plugin path (3.2)::

    from connectrt.api import file_access

    path = file_access().writable(config["file"])   # ConnectError when not allowed
    out = open(path, "a")

:class:`FileAccess` is the rule:

* ``allowed_dirs``: the directories (and everything below them) the connector may read and
  write; an empty tuple allows no file at all; None (no worker configured the process: a
  Spark DataFrame job, a script driving a task itself, where the caller is the operator)
  allows every file;
* ``protected_dirs``: directories never written, even when allowed: the worker's
  ``plugin.path`` (no file at all below it); and below every ``sys.path`` entry at the time
  of the check, no file Python could import or that declares what it imports (a module or
  extension suffix, ``.pth``, anything inside ``__pycache__`` or a ``*.dist-info``/
  ``*.egg-info`` folder, whose entry points a worker scans). So a file connector can never
  plant code the worker would import, while ``file=out.txt`` in a working directory that
  ``python -m`` put on ``sys.path`` stays writable.

Paths are compared after ``os.path.realpath`` (symbolic links and ``..`` resolved; relative
paths against the working directory).

The worker installs the rule of its config with :func:`configure_file_access` whenever it
builds a task (in its own process, in a task process, on a Spark executor); plugins read it
with :func:`file_access`. The rule is process-wide (a process runs one worker); reading and
replacing it are single reference operations, safe from any thread.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from connectrt.api.errors import ConnectError

__all__ = ["ALLOWED_DIRS_CONFIG", "FileAccess", "configure_file_access", "file_access"]

ALLOWED_DIRS_CONFIG = "file.connectors.allowed.dirs"
"""The worker setting :class:`FileAccess` enforces."""


def _real(path: str) -> str:
    return os.path.realpath(path or os.curdir)


_CODE_SUFFIXES = (*importlib.machinery.all_suffixes(), ".pth")
_CODE_FOLDERS = ("__pycache__",)
_METADATA_SUFFIXES = (".dist-info", ".egg-info")


def _could_be_imported(path: str, entry: str) -> bool:
    """Whether a file at ``path``, below the ``sys.path`` entry ``entry``, could be imported or
    change what is imported (both real paths)."""
    if path.endswith(_CODE_SUFFIXES):
        return True
    parts = os.path.relpath(path, entry).split(os.sep)[:-1]
    return any(p in _CODE_FOLDERS or p.endswith(_METADATA_SUFFIXES) for p in parts)


def _under(path: str, directory: str) -> bool:
    try:
        return os.path.commonpath([path, directory]) == directory
    except ValueError:  # different drives, or a mix of absolute and relative
        return False


@dataclass(frozen=True)
class FileAccess:
    """Which files a plugin may read and write (see the module docstring)."""

    allowed_dirs: tuple[str, ...] | None = None
    protected_dirs: tuple[str, ...] = ()

    @classmethod
    def of(cls, allowed_dirs: Iterable[str], protected_dirs: Iterable[str] = ()) -> FileAccess:
        """The rule of a worker: ``allowed_dirs`` (blank entries dropped) and ``protected_dirs``
        (its ``plugin.path``)."""
        return cls(
            tuple(d.strip() for d in allowed_dirs if d and d.strip()),
            tuple(d.strip() for d in protected_dirs if d and d.strip()),
        )

    def readable(self, path: str) -> str:
        """``path`` resolved, when a plugin may read it; ConnectError naming the setting
        otherwise."""
        real = _real(path)
        self._check_allowed(path, real, "read")
        return real

    def writable(self, path: str) -> str:
        """``path`` resolved, when a plugin may write it (allowed, under no protected
        directory, and no file Python could import from a ``sys.path`` entry); ConnectError
        otherwise."""
        real = _real(path)
        self._check_allowed(path, real, "write")
        if self.allowed_dirs is None:
            return real
        for directory in self.protected_dirs:
            if _under(real, _real(directory)):
                raise ConnectError(
                    f"Refusing to write {path}: it is under {directory}, a plugin.path "
                    "directory of the worker, where a file could become code the worker imports"
                )
        for entry in sys.path:
            entry_real = _real(entry)
            if _under(real, entry_real) and _could_be_imported(real, entry_real):
                raise ConnectError(
                    f"Refusing to write {path}: it is under {entry or os.curdir}, a sys.path "
                    "entry of the worker, and Python could import it (a module, extension, .pth "
                    "or package metadata file)"
                )
        return real

    def _check_allowed(self, path: str, real: str, action: str) -> None:
        if self.allowed_dirs is None:
            return
        if any(_under(real, _real(d)) for d in self.allowed_dirs):
            return
        where = ", ".join(self.allowed_dirs) if self.allowed_dirs else "no directory"
        raise ConnectError(
            f"Refusing to {action} {path}: the worker's {ALLOWED_DIRS_CONFIG} allows {where}. "
            f"Add the file's directory to {ALLOWED_DIRS_CONFIG} in the worker config to allow it"
        )


_current = FileAccess()


def file_access() -> FileAccess:
    """The rule in force in this process (unrestricted until a worker configures one)."""
    return _current


def configure_file_access(access: FileAccess) -> None:
    """Install the rule of the worker running in this process; called by the worker, not by
    plugins."""
    global _current
    _current = access
