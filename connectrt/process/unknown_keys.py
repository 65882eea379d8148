"""Worker keys no definition knows, named at start-up as Kafka Connect names them.

Kafka Connect's worker logs ``The configuration 'X' was supplied but isn't a known config.``
at WARN for every key of its properties file that no definition knows; a misspelt key (say
``offset.flush.intervall.ms``) is otherwise silently without effect. :func:`warn_unknown_keys`
does the same for a connectrt worker, adding ``did you mean ...?`` when one known key is
close. Keys that are free-form by design are never named: the client prefixes (``producer.``,
``consumer.``, ``admin.``), the converters' own settings (``key.converter.``...), config
provider settings (``config.providers.*``), the worker's own client security keys (``ssl.*``,
``sasl.*``, ``security.protocol``), the REST listener's ``listeners.https.*`` and the Spark
backend's ``spark.*``. Kafka Connect's own worker keys that connectrt has no use for (group
protocol timings, metrics reporters, REST extensions...) are named once, at INFO, as
accepted and without effect, so that a Kafka Connect ``worker.properties`` starts quietly.

Pure functions over a properties map; called once per process by
:meth:`connectrt.process.assembly.WorkerProcess.build`.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable, Mapping

from connectrt.runtime.config.worker import WORKER_CONFIG_DEF

__all__ = [
    "FREE_FORM_PREFIXES",
    "KAFKA_CONNECT_ONLY_KEYS",
    "UnknownKey",
    "unknown_worker_keys",
    "warn_unknown_keys",
]

log = logging.getLogger(__name__)

FREE_FORM_PREFIXES = (
    "producer.",
    "consumer.",
    "admin.",
    "key.converter.",
    "value.converter.",
    "header.converter.",
    "config.providers.",
    "ssl.",
    "sasl.",
    "listeners.https.",
    "rest.extension.",
    "metrics.context.",
    "spark.",
    "task.executor.spark.",
)
"""Prefixes whose keys pass to a client, a plugin or a backend as written: never named."""

_FREE_FORM_KEYS = frozenset({"security.protocol"})

KAFKA_CONNECT_ONLY_KEYS = frozenset(
    {
        # Kafka Connect's worker keys (distributed and standalone) connectrt accepts and ignores.
        "client.id",
        "config.storage.partitions",
        "connect.protocol",
        "connections.max.idle.ms",
        "client.dns.lookup",
        "heartbeat.interval.ms",
        "inter.worker.key.generation.algorithm",
        "inter.worker.key.size",
        "inter.worker.key.ttl.ms",
        "inter.worker.signature.algorithm",
        "inter.worker.verification.algorithms",
        "metadata.max.age.ms",
        "metadata.recovery.strategy",
        "metric.reporters",
        "metrics.num.samples",
        "metrics.recording.level",
        "metrics.sample.window.ms",
        "auto.include.jmx.reporter",
        "plugin.discovery",
        "rebalance.timeout.ms",
        "receive.buffer.bytes",
        "reconnect.backoff.max.ms",
        "reconnect.backoff.ms",
        "request.timeout.ms",
        "response.http.headers.config",
        "rest.advertised.listener",
        "retry.backoff.max.ms",
        "retry.backoff.ms",
        "scheduled.rebalance.max.delay.ms",
        "send.buffer.bytes",
        "session.timeout.ms",
        "socket.connection.setup.timeout.max.ms",
        "socket.connection.setup.timeout.ms",
        "worker.sync.timeout.ms",
        "worker.unsync.backoff.ms",
    }
)
"""Keys Kafka Connect's worker defines that connectrt defines no meaning for (those it does
define are in :data:`WORKER_CONFIG_DEF`)."""


class UnknownKey:
    """One unknown key and, when one known key is close to it, that key."""

    __slots__ = ("key", "suggestion")

    def __init__(self, key: str, suggestion: str | None) -> None:
        self.key = key
        self.suggestion = suggestion

    def message(self) -> str:
        """Kafka Connect's wording, plus the suggestion."""
        text = f"The configuration '{self.key}' was supplied but isn't a known config."
        if self.suggestion is not None:
            text += f" Did you mean {self.suggestion}?"
        return text

    def __repr__(self) -> str:
        return f"UnknownKey({self.key!r}, {self.suggestion!r})"


def _known_names(extra: Iterable[str]) -> list[str]:
    return sorted({*WORKER_CONFIG_DEF.names(), *KAFKA_CONNECT_ONLY_KEYS, *extra})


def unknown_worker_keys(props: Mapping[str, str], extra: Iterable[str] = ()) -> list[UnknownKey]:
    """The keys of ``props`` no definition knows (in key order), each with its closest known
    key when one is close. ``extra`` names more known keys (a backend's own)."""
    known = _known_names(extra)
    known_set = set(known)
    out = []
    for key in sorted(props):
        if key in known_set or key in _FREE_FORM_KEYS or key.startswith(FREE_FORM_PREFIXES):
            continue
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.85)
        out.append(UnknownKey(key, close[0] if close else None))
    return out


def warn_unknown_keys(props: Mapping[str, str], extra: Iterable[str] = ()) -> list[UnknownKey]:
    """Log one WARN per unknown key of ``props`` and one INFO naming the Kafka Connect keys
    without effect; return the unknown keys."""
    unknown = unknown_worker_keys(props, extra)
    for item in unknown:
        log.warning(item.message())
    ignored = sorted(k for k in props if k in KAFKA_CONNECT_ONLY_KEYS)
    if ignored:
        log.info(
            "Kafka Connect worker settings with no effect in connectrt: %s", ", ".join(ignored)
        )
    return unknown
