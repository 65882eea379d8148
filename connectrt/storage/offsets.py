"""Source offset storage: the :class:`OffsetStore` protocol and its memory and file stores.

Stores work on bytes, like Kafka Connect's ``OffsetBackingStore``: keys and values are the
encoded forms from :mod:`connectrt.storage.offset_codec`, and keys are compared as bytes.

Lifecycle: the worker calls ``start()`` once before anything else and ``stop()`` once at the end.
Threading: ``get``, ``set`` and ``all`` may be called concurrently from several task threads;
every store here is safe for that. ``set`` returns only once its entries are durable (for the
memory store: visible to later reads), and applies a batch atomically with respect to ``get`` and
``all`` of the same store.
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from connectrt.errors import ConnectError
from connectrt.storage.in_memory import InMemoryStore
from connectrt.storage.tombstones import put_or_drop

__all__ = ["FileOffsetStore", "MemoryOffsetStore", "OffsetStore"]


@runtime_checkable
class OffsetStore(Protocol):
    """A durable bytes-to-bytes map of source offsets."""

    def start(self) -> None:
        """Load existing state. Called once, before any other method."""

    def stop(self) -> None:
        """Release resources. Idempotent; no other method is called afterwards."""

    def get(self, keys: Iterable[bytes]) -> dict[bytes, bytes | None]:
        """Values for ``keys``. Every requested key is in the result; missing ones map to None."""
        ...

    def set(self, entries: Mapping[bytes, bytes | None]) -> None:
        """Store ``entries`` (a None value deletes the key) and return once they are durable.

        Raises :class:`ConnectError` when they could not be stored; the store's view is then
        unchanged (the Kafka store may still have written them, see its docs).
        """

    def all(self) -> dict[bytes, bytes]:
        """A snapshot of every live entry (deleted keys are absent)."""
        ...


class MemoryOffsetStore(InMemoryStore):
    """An in-process store: the test double and the fastest development loop. Not durable."""

    def __init__(self) -> None:
        self._data: dict[bytes, bytes] = {}
        self._lock = threading.Lock()

    def get(self, keys: Iterable[bytes]) -> dict[bytes, bytes | None]:
        with self._lock:
            return {bytes(k): self._data.get(bytes(k)) for k in keys}

    def set(self, entries: Mapping[bytes, bytes | None]) -> None:
        _check_entries(entries)
        with self._lock:
            _apply(self._data, entries)

    def all(self) -> dict[bytes, bytes]:
        with self._lock:
            return dict(self._data)


class FileOffsetStore:
    """Offsets kept in a JSON file, rewritten atomically on every ``set``.

    The file is ``{"version": 1, "entries": [{"key": ..., "value": ...}, ...]}``. A key or value
    that is valid UTF-8 is stored as text (``key``/``value``), anything else as base64
    (``key_b64``/``value_b64``). Every ``set`` writes a temporary file in the same directory,
    fsyncs it, ``os.replace``-s it over the old one and fsyncs the directory, so a crash leaves
    either the old or the new file. This is not Kafka Connect's Java-serialized format.
    """

    FORMAT_VERSION = 1

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = Path(path)
        self._data: dict[bytes, bytes] = {}
        self._lock = threading.Lock()
        self._started = False

    @property
    def path(self) -> Path:
        return self._path

    def start(self) -> None:
        with self._lock:
            self._data = self._load()
            self._started = True

    def stop(self) -> None:
        with self._lock:
            self._started = False

    def get(self, keys: Iterable[bytes]) -> dict[bytes, bytes | None]:
        with self._lock:
            self._check_started()
            return {bytes(k): self._data.get(bytes(k)) for k in keys}

    def set(self, entries: Mapping[bytes, bytes | None]) -> None:
        _check_entries(entries)
        with self._lock:
            self._check_started()
            updated = dict(self._data)
            _apply(updated, entries)
            self._write(updated)
            self._data = updated

    def all(self) -> dict[bytes, bytes]:
        with self._lock:
            self._check_started()
            return dict(self._data)

    # -- internals --------------------------------------------------------------------------

    def _check_started(self) -> None:
        if not self._started:
            raise ConnectError(f"FileOffsetStore({self._path}) is not started")

    def _load(self) -> dict[bytes, bytes]:
        try:
            raw = self._path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise ConnectError(f"Could not read offsets file {self._path}: {exc}") from exc
        try:
            doc = json.loads(raw)
            if not isinstance(doc, dict) or doc.get("version") != self.FORMAT_VERSION:
                raise ValueError(f"expected an object with version {self.FORMAT_VERSION}")
            entries = doc["entries"]
            if not isinstance(entries, list):
                raise ValueError("'entries' is not a list")
            data: dict[bytes, bytes] = {}
            for entry in entries:
                data[_field(entry, "key")] = _field(entry, "value")
            return data
        except (ValueError, KeyError, TypeError) as exc:
            raise ConnectError(f"Offsets file {self._path} is corrupt: {exc}") from exc

    def _write(self, data: Mapping[bytes, bytes]) -> None:
        doc = {
            "version": self.FORMAT_VERSION,
            "entries": [_entry(k, v) for k, v in data.items()],
        }
        payload = json.dumps(doc, ensure_ascii=False, indent=1).encode("utf-8")
        directory = self._path.parent
        tmp_name: str | None = None
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(
                dir=directory, prefix=f".{self._path.name}.", suffix=".tmp"
            )
            with os.fdopen(fd, "wb") as fh:
                fh.write(payload)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp_name, self._path)
            tmp_name = None
            _fsync_dir(directory)
        except OSError as exc:
            raise ConnectError(f"Could not write offsets file {self._path}: {exc}") from exc
        finally:
            if tmp_name is not None:
                try:
                    os.unlink(tmp_name)
                except OSError:
                    pass


def _check_entries(entries: Mapping[bytes, bytes | None]) -> None:
    for key, value in entries.items():
        if not isinstance(key, bytes):
            raise ConnectError(f"Offset keys must be bytes, got {type(key).__name__}")
        if value is not None and not isinstance(value, bytes):
            raise ConnectError(f"Offset values must be bytes or None, got {type(value).__name__}")


def _apply(data: dict[bytes, bytes], entries: Mapping[bytes, bytes | None]) -> None:
    for key, value in entries.items():
        put_or_drop(data, key, value)


def _entry(key: bytes, value: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, data in (("key", key), ("value", value)):
        try:
            out[name] = data.decode("utf-8")
        except UnicodeDecodeError:
            out[f"{name}_b64"] = base64.b64encode(data).decode("ascii")
    return out


def _field(entry: Any, name: str) -> bytes:
    if not isinstance(entry, dict):
        raise ValueError("an entry is not an object")
    if name in entry and isinstance(entry[name], str):
        return str(entry[name]).encode("utf-8")
    b64 = entry.get(f"{name}_b64")
    if isinstance(b64, str):
        return base64.b64decode(b64, validate=True)
    raise ValueError(f"an entry has no {name!r}")


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable. Not possible on every platform (e.g. Windows).
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
