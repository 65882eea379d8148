"""Named contexts: which worker the management commands talk to, and how.

A context is a worker URL with optional credentials (``user`` as ``USER`` or ``USER:PASS``,
``token``) and TLS settings (``cacert``, ``insecure``). They live in ``contexts.json`` in the
user's config directory (``platformdirs``: ``~/.config/connectrt`` on Linux;
``CONNECTRT_CONFIG_DIR`` overrides it), written with mode 0600 because it may hold a password
or token. ``connectrt context add/use/list/show/remove`` manage them; a management command
uses ``--context NAME`` or the current one, and its own options and ``CONNECTRT_*`` variables
win over what the context says.

The file is read and written whole by one command at a time (no locking: two commands editing
contexts at the same instant may lose one edit).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from connectrt.errors import ConfigError

__all__ = ["Context", "ContextStore", "config_dir"]


def config_dir() -> Path:
    """Where connectrt keeps the user's CLI settings."""
    explicit = os.environ.get("CONNECTRT_CONFIG_DIR")
    if explicit:
        return Path(explicit)
    from platformdirs import user_config_dir

    return Path(user_config_dir("connectrt"))


@dataclass(frozen=True)
class Context:
    url: str
    user: str | None = None
    token: str | None = None
    cacert: str | None = None
    insecure: bool = False

    def shown(self) -> dict[str, Any]:
        """The context with its secrets hidden (for ``context list/show``)."""
        out = {k: v for k, v in asdict(self).items() if v not in (None, False)}
        if self.user and ":" in self.user:
            out["user"] = self.user.split(":", 1)[0] + ":[hidden]"
        if self.token:
            out["token"] = "[hidden]"
        return out


class ContextStore:
    """The contexts file (see the module docstring)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or config_dir() / "contexts.json"

    def _load(self) -> dict[str, Any]:
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"current": None, "contexts": {}}
        except (OSError, ValueError) as e:
            raise ConfigError(f"Cannot read the contexts file {self.path}: {e}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("contexts"), dict):
            raise ConfigError(f"The contexts file {self.path} is not a connectrt contexts file")
        return doc

    def _save(self, doc: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(tmp, self.path)

    def names(self) -> list[str]:
        return sorted(self._load()["contexts"])

    @property
    def current(self) -> str | None:
        current = self._load().get("current")
        return current if isinstance(current, str) else None

    def get(self, name: str) -> Context:
        entry = self._load()["contexts"].get(name)
        if entry is None:
            raise ConfigError(f"No context named {name!r} (see 'connectrt context list')")
        try:
            return Context(**entry)
        except TypeError:
            raise ConfigError(f"Context {name!r} in {self.path} is malformed") from None

    def add(self, name: str, context: Context, use: bool = False) -> None:
        if not name.strip():
            raise ConfigError("A context needs a non-empty name")
        doc = self._load()
        doc["contexts"][name] = {k: v for k, v in asdict(context).items() if v not in (None, False)}
        if use or doc.get("current") is None:
            doc["current"] = name
        self._save(doc)

    def use(self, name: str) -> None:
        doc = self._load()
        if name not in doc["contexts"]:
            raise ConfigError(f"No context named {name!r} (see 'connectrt context list')")
        doc["current"] = name
        self._save(doc)

    def remove(self, name: str) -> None:
        doc = self._load()
        if doc["contexts"].pop(name, None) is None:
            raise ConfigError(f"No context named {name!r} (see 'connectrt context list')")
        if doc.get("current") == name:
            doc["current"] = None
        self._save(doc)

    def resolve(self, name: str | None) -> Context | None:
        """The context ``name``, or the current one when ``name`` is None (None if there is
        none)."""
        if name is not None:
            return self.get(name)
        current = self.current
        return self.get(current) if current is not None else None
