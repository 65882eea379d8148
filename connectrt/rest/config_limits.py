"""How large a connector config and name may be, checked before anything is written.

A connector's config is one record of the config topic (``connector-<name>``: the config as
JSON), and its task configs are records of about the same size. A record over the config
producer's ``message.max.bytes`` is refused by the producer, which used to surface as a 500
after the request had been accepted. :class:`ConfigLimits` answers up front instead: a config
larger than :attr:`ConfigLimits.max_config_bytes` gets 413, a name longer than
:data:`MAX_NAME_LENGTH` characters 400, each message stating the limit.

``max_config_bytes`` is derived from the config producer's ``message.max.bytes`` (the worker's
``producer.message.max.bytes``, librdkafka's 1,000,000 by default) with 10% headroom for the
record's key and framing and for what a connector adds to its task configs. Without a config
topic (standalone mode) there is no config bound; the request bound (``rest.request.max.bytes``)
still holds. Immutable; any thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from connectrt.errors import ConnectError
from connectrt.runtime.clients.settings import OverridePolicy, producer_config
from connectrt.runtime.errors import BadRequestError

__all__ = ["MAX_NAME_LENGTH", "ConfigLimits", "ConfigTooLarge"]

MAX_NAME_LENGTH = 1024
_LIBRDKAFKA_MESSAGE_MAX_BYTES = 1_000_000
_HEADROOM = 0.9


class ConfigTooLarge(ConnectError):
    """A connector config the config topic cannot take (HTTP 413)."""


@dataclass(frozen=True)
class ConfigLimits:
    """The bounds; ``max_config_bytes`` None: configs are not bounded here."""

    max_config_bytes: int | None = None
    message_max_bytes: int | None = None

    @classmethod
    def for_config_topic(cls, worker_props: Mapping[str, str]) -> ConfigLimits:
        """The bounds of a worker whose configs live in a Kafka topic."""
        producer = producer_config("", worker_props, None, OverridePolicy("None"), "limits")
        try:
            message_max = int(producer.get("message.max.bytes", _LIBRDKAFKA_MESSAGE_MAX_BYTES))
        except (TypeError, ValueError):
            message_max = _LIBRDKAFKA_MESSAGE_MAX_BYTES
        return cls(int(message_max * _HEADROOM), message_max)

    def check_name(self, name: str) -> None:
        """BadRequestError for a name over :data:`MAX_NAME_LENGTH` characters."""
        if len(name) > MAX_NAME_LENGTH:
            raise BadRequestError(
                f"Connector name is {len(name)} characters long; at most {MAX_NAME_LENGTH} "
                "are allowed"
            )

    def check_config(self, name: str, config: Mapping[str, Any]) -> None:
        """ConfigTooLarge for a config the config topic cannot take."""
        if self.max_config_bytes is None:
            return
        size = len(orjson.dumps({"properties": dict(config)})) + 2 * len(name.encode())
        if size > self.max_config_bytes:
            raise ConfigTooLarge(
                f"Connector configuration is {size} bytes; a connector config may have at most "
                f"{self.max_config_bytes} bytes (90% of the config topic producer's "
                f"message.max.bytes, {self.message_max_bytes})",
            )
