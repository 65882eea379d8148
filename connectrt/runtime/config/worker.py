"""The worker configuration in its parsed, typed form: :class:`WorkerConfig`.

The keys are defined in :mod:`connectrt.runtime.config.worker_def` (:data:`WORKER_CONFIG_DEF`,
re-exported here).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from connectrt.api.config import with_prefix
from connectrt.runtime.config.worker_def import WORKER_CONFIG_DEF

__all__ = ["WORKER_CONFIG_DEF", "WorkerConfig"]

JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
"""The key and value converter when the worker config names none."""


@dataclass(frozen=True)
class WorkerConfig:
    """Parsed worker settings plus the raw map (for prefixed client settings).

    Immutable; shared read-only by every task thread.
    """

    values: Mapping[str, Any]
    originals: Mapping[str, str]

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> WorkerConfig:
        return cls(WORKER_CONFIG_DEF.parse(props), dict(props))

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(self.values["bootstrap.servers"])

    def converter_class(self, kind: str) -> str:
        """``key``/``value``/``header`` converter class name (worker-level)."""
        return self.values[f"{kind}.converter"] or JSON_CONVERTER

    def converter_config(self, kind: str) -> dict[str, Any]:
        return with_prefix(self.originals, f"{kind}.converter.")

    def client_config(self, kind: str) -> dict[str, str]:
        """Worker-level ``producer.*``/``consumer.*``/``admin.*`` settings, prefix removed."""
        return with_prefix(self.originals, f"{kind}.")

    @property
    def worker_id(self) -> str:
        """``host:port`` as Kafka reports it: rest.advertised.* first, else the first listener."""
        listener = urlsplit((self.values.get("listeners") or ["http://:8083"])[0])
        host = self.values.get("rest.advertised.host.name") or listener.hostname or "127.0.0.1"
        port = self.values.get("rest.advertised.port") or listener.port or 8083
        return f"{host}:{port}"
