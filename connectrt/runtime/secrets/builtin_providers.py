"""The bundled config providers: files (:class:`FileConfigProvider`), directories of files
(:class:`DirectoryConfigProvider`) and environment variables (:class:`EnvVarConfigProvider`),
Kafka's ``org.apache.kafka.common.config.provider`` classes of the same names.

The file and directory providers honour ``allowed.paths``, the environment provider
``allowlist.pattern``. All three only read files or the environment, so their ``get`` is
thread-safe; ``configure`` is called once, before any ``get``.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path

from connectrt.errors import ConfigError
from connectrt.runtime.properties import parse_properties
from connectrt.runtime.secrets.provider_base import ConfigData, ConfigProvider

__all__ = ["DirectoryConfigProvider", "EnvVarConfigProvider", "FileConfigProvider"]

log = logging.getLogger(__name__)

ALLOWED_PATHS_CONFIG = "allowed.paths"
ALLOWLIST_PATTERN_CONFIG = "allowlist.pattern"


class _AllowedPaths:
    """Kafka's ``AllowedPaths``: optional list of directories a provider may read under.

    Both the allowed directories and the requested path are resolved with ``realpath`` before
    comparison (stricter than Kafka, which only normalises), so neither ``..`` nor a symlink
    can lead outside. Comparison is per path component: ``/etc/kc`` does not allow
    ``/etc/kc2``.
    """

    def __init__(self, value: str | None) -> None:
        self.paths: list[Path] | None = None
        if value is None or not value.strip():
            return
        paths: list[Path] = []
        for raw in value.split(","):
            raw = raw.strip()
            if not raw:
                continue
            p = Path(raw)
            if not p.is_absolute():
                raise ConfigError(f"Path {raw} is not absolute", ALLOWED_PATHS_CONFIG, value)
            if not p.exists():
                raise ConfigError(f"Path {raw} does not exist", ALLOWED_PATHS_CONFIG, value)
            paths.append(Path(os.path.realpath(p)))
        self.paths = paths

    def parse_untrusted(self, path: str) -> Path | None:
        """The path to read, or None when ``allowed.paths`` is set and excludes it."""
        if self.paths is None:
            return Path(path)
        real = Path(os.path.realpath(path))
        return real if self.allows(real) else None

    def allows(self, real: Path) -> bool:
        return self.paths is None or any(real.is_relative_to(a) for a in self.paths)


class _PathConfigProvider(ConfigProvider):
    """What the file and directory providers share: param ``allowed.paths``, and the checks
    on a requested path before :meth:`_read` reads it."""

    def __init__(self) -> None:
        self._allowed = _AllowedPaths(None)

    def configure(self, params: Mapping[str, str]) -> None:
        self._allowed = _AllowedPaths(params.get(ALLOWED_PATHS_CONFIG))

    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        if not path:
            return ConfigData({})
        real = self._allowed.parse_untrusted(path)
        if real is None:
            log.warning("The path %s is not allowed to be accessed (allowed.paths)", path)
            return ConfigData({})
        return self._read(real, path, keys)

    def _read(self, real: Path, path: str, keys: set[str] | None) -> ConfigData:
        """The data at ``real``, the allowed real path of the requested ``path`` (named in
        messages); only ``keys`` if given."""
        raise NotImplementedError


class FileConfigProvider(_PathConfigProvider):
    """``${file:/path/to/file.properties:key}``: a property of a Java
    ``connectrt.runtime.properties`` file.

    Param ``allowed.paths``: comma-separated absolute directories; a path outside them is
    refused as Kafka does: a warning is logged and no data returned, so the reference stays
    unchanged. A file that cannot be read raises ConfigError. No TTL.
    """

    def _read(self, real: Path, path: str, keys: set[str] | None) -> ConfigData:
        try:
            props = parse_properties(real.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"Could not read properties from file {path}") from e
        if keys is None:
            return ConfigData(props)
        return ConfigData({k: props[k] for k in keys if k in props})


class DirectoryConfigProvider(_PathConfigProvider):
    """``${dir:/path/to/dir:filename}``: the whole contents (UTF-8) of a file in a directory.

    Only regular files directly inside the directory are keys (as Kafka, the directory is
    listed rather than joined with the key, so a key like ``../x`` can never match). This is
    the shape of Kubernetes secret volumes. Param ``allowed.paths`` as for
    :class:`FileConfigProvider`; when set, a file whose real path (after symlinks) leaves the
    allowed directories is skipped too. A path that is not a directory gives no data.
    """

    def _read(self, directory: Path, path: str, keys: set[str] | None) -> ConfigData:
        if not directory.is_dir():
            log.warning("The path %s is not a directory", path)
            return ConfigData({})
        data: dict[str, str] = {}
        try:
            entries = sorted(directory.iterdir())
        except OSError as e:
            raise ConfigError(f"Could not list directory {path}") from e
        for entry in entries:
            if keys is not None and entry.name not in keys:
                continue
            if not entry.is_file():
                continue
            if self._allowed.paths is not None and not self._allowed.allows(
                Path(os.path.realpath(entry))
            ):
                log.warning("The file %s leaves allowed.paths; skipped", entry)
                continue
            try:
                data[entry.name] = entry.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise ConfigError(f"Could not read file {entry}") from e
        return ConfigData(data)


class EnvVarConfigProvider(ConfigProvider):
    """``${env:VAR}``: an environment variable. No path is allowed.

    Param ``allowlist.pattern``: a regex the whole variable name must match (default ``.*``);
    variables outside it are invisible. The environment is read at each ``get`` (Kafka
    snapshots it at ``configure``; reading live changes nothing for a running process and
    makes tests simpler).
    """

    def __init__(self) -> None:
        self._allowlist = re.compile(".*")

    def configure(self, params: Mapping[str, str]) -> None:
        pattern = params.get(ALLOWLIST_PATTERN_CONFIG)
        if pattern is None:
            return
        try:
            self._allowlist = re.compile(pattern)
        except re.error as e:
            raise ConfigError(
                f"Invalid regular expression: {e}", ALLOWLIST_PATTERN_CONFIG, pattern
            ) from e

    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        if path:
            raise ConfigError(
                f"Path is not supported for EnvVarConfigProvider, invalid value '{path}'"
            )
        visible = {k: v for k, v in os.environ.items() if self._allowlist.fullmatch(k)}
        if keys is None:
            return ConfigData(visible)
        return ConfigData({k: visible[k] for k in keys if k in visible})
