"""Named worker contexts (``connectrt context ...``), kept in the user's config file.

A context names one worker: its REST URL and how to reach it (a user name with a password
file, or a token file; a CA bundle, or no TLS verification). The file records *paths* to
secrets, never a secret: a password or token is read from its file each time a command runs,
so rotating it needs no ``context`` command, and nothing that prints a context can leak one.

The file is ``$XDG_CONFIG_HOME/connectrt/config.json`` (``~/.config/connectrt/config.json``
when ``XDG_CONFIG_HOME`` is unset), written with mode 0600 in a 0700 directory and replaced
atomically (a crash mid-write leaves the old file)::

    {"current": "prod",
     "contexts": {"prod": {"url": "https://connect.example.com:8443", "user": "admin",
                           "password_file": "/home/me/.secrets/connect-admin"}}}

Single-threaded: used by one CLI invocation; two concurrent ``context`` commands may lose one
of their changes (the last rename wins), never corrupt the file.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from click.shell_completion import CompletionItem

from connectrt.errors import ConfigError

__all__ = [
    "Context",
    "ContextFile",
    "complete_context_names",
    "config_path",
    "read_secret_file",
]

_KEYS = ("url", "user", "password_file", "token_file", "ca", "insecure")


def config_path() -> Path:
    """Where the contexts live: under ``XDG_CONFIG_HOME`` or ``~/.config``."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "connectrt" / "config.json"


@dataclass(frozen=True)
class Context:
    """One worker and how to authenticate to it (paths to secrets, never secrets)."""

    name: str
    url: str
    user: str | None = None
    password_file: str | None = None
    token_file: str | None = None
    ca: str | None = None
    insecure: bool = False

    def auth_summary(self) -> str:
        """How this context authenticates, for ``context list`` (no secret in it)."""
        if self.token_file:
            return "bearer token (file)"
        if self.user:
            source = "file" if self.password_file else "asked"
            return f"basic {self.user} (password {source})"
        return "none"

    def to_json(self) -> dict[str, Any]:
        """The context's stored fields (those set), without its name."""
        return {k: v for k, v in asdict(self).items() if k != "name" and v not in (None, False)}


@dataclass
class ContextFile:
    """The contexts and the current one, as read from (and written back to) ``path``."""

    path: Path
    current: str | None = None
    contexts: dict[str, Context] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path | None = None) -> ContextFile:
        """The file's contents; an empty set of contexts when it does not exist yet."""
        path = path or config_path()
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls(path)
        except OSError as e:
            raise ConfigError(f"cannot read {path}: {e.strerror or e}") from None
        try:
            doc = json.loads(raw)
            contexts = {
                name: Context(name, **{k: v for k, v in entry.items() if k in _KEYS})
                for name, entry in dict(doc.get("contexts") or {}).items()
            }
            current = doc.get("current")
        except (ValueError, TypeError, AttributeError) as e:
            raise ConfigError(
                f"{path} is not a connectrt context file ({e}); fix or remove it"
            ) from None
        return cls(path, current if current in contexts else None, contexts)

    def get(self, name: str) -> Context:
        """Context ``name``, or a ConfigError listing the contexts there are."""
        try:
            return self.contexts[name]
        except KeyError:
            known = ", ".join(sorted(self.contexts)) or "none; add one with 'connectrt context add'"
            raise ConfigError(f"no context named {name!r} (contexts: {known})") from None

    def current_context(self) -> Context | None:
        return self.contexts.get(self.current) if self.current else None

    def save(self) -> None:
        """Write the file: mode 0600, directory 0700, atomically replaced."""
        doc = {
            "current": self.current,
            "contexts": {n: c.to_json() for n, c in sorted(self.contexts.items())},
        }
        data = (json.dumps(doc, indent=2) + "\n").encode("utf-8")
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.fchmod(fd, 0o600)  # O_CREAT's mode is only used for a new file
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)


def read_secret_file(path: str, what: str) -> str:
    """The secret in ``path``: its first line without the line break; a ConfigError naming
    the file (never its contents) when it cannot be read or is empty."""
    try:
        with open(path, encoding="utf-8") as f:
            secret = f.readline().rstrip("\r\n")
    except OSError as e:
        raise ConfigError(f"cannot read the {what} file {path}: {e.strerror or e}") from None
    if not secret:
        raise ConfigError(f"the {what} file {path} is empty")
    return secret


def complete_context_names(ctx: Any, param: Any, incomplete: str) -> list[CompletionItem]:
    """The names of the stored contexts that start with ``incomplete``."""
    try:
        contexts = ContextFile.load().contexts
    except Exception:  # an unreadable file: no suggestions, the command itself will say why
        return []
    return [
        CompletionItem(name, help=c.url)
        for name, c in sorted(contexts.items())
        if name.startswith(incomplete)
    ]
