"""The contract of a config provider (KIP-297): :class:`ConfigProvider` and its :class:`ConfigData`.

A provider is a plugin: the built-ins are in :mod:`connectrt.runtime.secrets.builtin_providers`,
others are found by class name or plugin discovery.
:class:`~connectrt.runtime.secrets.providers.ConfigProviders` configures the worker's providers
and resolves ``${provider:path:key}`` references with them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["ConfigData", "ConfigProvider"]


@dataclass(frozen=True)
class ConfigData:
    """What a provider returns for one path: the values found and an optional TTL (ms)."""

    data: dict[str, str] = field(default_factory=dict)
    ttl_ms: int | None = None


class ConfigProvider(ABC):
    """A source of config values (Kafka's ``org.apache.kafka.common.config.provider``).

    The runtime calls :meth:`configure` once with the ``config.providers.<name>.param.*``
    settings, then :meth:`get` any number of times, possibly from several threads, then
    :meth:`close` once. ``get`` returns only the keys it has: a missing key is not an error
    (the reference stays unchanged); an unreadable source is (raise ConfigError).
    """

    def configure(self, params: Mapping[str, str]) -> None:
        """Receive the provider's ``param.*`` settings (prefix removed)."""

    @abstractmethod
    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        """The values of ``keys`` (all values when None) found at ``path`` ("" if none)."""

    def close(self) -> None:
        """Release resources; called once at worker shutdown."""
