"""Prepare, before the suite starts, what its tests would otherwise fetch or build on their own.

``python -m connectrt.testing.prefetch`` (``make test`` runs it first) resolves the Maven jars
(Apache Kafka, Kafka Connect, connect-json, Debezium, Zipkin), builds the Go binaries (Jaeger,
the OTLP-to-Zipkin OpenTelemetry Collector) and installs the Debian packages (Chromium,
PostgreSQL) into their caches. Each is a no-op when already there. On a fresh machine the Go
builds take minutes of both cores: run inside the suite, they competed with the timed tests of
the other xdist processes (a CI run spent 426 s building Jaeger in one test's setup while the
rest of the suite ran beside it).

Steps run in three lanes at once (Maven downloads, Go builds, apt-get), each lane in order. A
step that cannot be done (no Java, no Go, not root) is reported in one line and skipped: the
tests that need it then fail or skip with their own message, as they would without this
module. Never raises; exit status 0.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["LANES", "main", "prepare"]


def _kafka() -> Any:
    from connectrt.testing.kafka_jars import kafka_classpath

    return kafka_classpath()


def _kafka_connect() -> Any:
    from connectrt.testing.kafka_connect import kafka_connect_classpath

    return kafka_connect_classpath()


def _connect_json() -> Any:
    from connectrt.testing.connect_json_jars import connect_json_classpath

    return connect_json_classpath()


def _debezium() -> Any:
    from connectrt.testing.debezium import connect_classpath, debezium_plugin_path

    connect_classpath()
    return debezium_plugin_path()


def _zipkin() -> Any:
    from connectrt.testing.zipkin import zipkin_jar

    return zipkin_jar()


def _jaeger() -> Any:
    from connectrt.testing.jaeger import jaeger_binary

    return jaeger_binary()


def _collector() -> Any:
    from connectrt.testing.otel_collector import collector_binary

    return collector_binary()


def _chromium() -> Any:
    from connectrt.testing.browser import ensure_chromium

    return ensure_chromium()


def _postgres() -> Any:
    from connectrt.testing.postgres import ensure_postgres_bin

    return ensure_postgres_bin()


LANES: dict[str, list[tuple[str, Callable[[], Any]]]] = {
    "maven": [
        ("Apache Kafka jars", _kafka),
        ("Kafka Connect jars", _kafka_connect),
        ("connect-json jars", _connect_json),
        ("Debezium jars", _debezium),
        ("Zipkin server jar", _zipkin),
    ],
    "go": [
        ("Jaeger binary", _jaeger),
        ("OpenTelemetry Collector (OTLP to Zipkin)", _collector),
    ],
    "apt": [
        ("Chromium", _chromium),
        ("PostgreSQL", _postgres),
    ],
}
"""The steps, by lane; the lanes run at once, the steps of a lane in order."""


def _run_lane(steps: list[tuple[str, Callable[[], Any]]], out: Callable[[str], None]) -> int:
    """Run ``steps`` in order; one line each through ``out``; how many could not be done."""
    failed = 0
    for name, step in steps:
        started = time.monotonic()
        try:
            step()
        except Exception as exc:  # reported, not raised: the tests that need it will say
            failed += 1
            reason = " ".join(str(exc).split())[:300] or type(exc).__name__
            out(f"prefetch: {name}: not prepared ({reason})")
        else:
            out(f"prefetch: {name}: ready ({time.monotonic() - started:.1f} s)")
    return failed


def prepare(
    lanes: dict[str, list[tuple[str, Callable[[], Any]]]] | None = None,
    out: Callable[[str], None] = print,
) -> int:
    """Run every lane (default :data:`LANES`) at once; how many steps could not be done."""
    chosen = LANES if lanes is None else lanes
    with ThreadPoolExecutor(max_workers=max(1, len(chosen)), thread_name_prefix="prefetch") as pool:
        futures = [pool.submit(_run_lane, steps, out) for steps in chosen.values()]
        return sum(f.result() for f in futures)


def main() -> int:
    started = time.monotonic()
    failed = prepare(out=lambda line: print(line, flush=True))
    print(
        f"prefetch: done in {time.monotonic() - started:.1f} s"
        + (f", {failed} step(s) not prepared" if failed else ""),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
