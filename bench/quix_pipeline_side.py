"""The Quix Streams side of bench_file_pipeline.py, run in its own environment.

Quix Streams pins confluent-kafka below the version connectrt requires, so it cannot share the
project's environment: ``make bench-quix-env`` creates ``.venv-quix`` with ``quixstreams`` and
``orjson`` only, and bench_file_pipeline.py runs this script there as a child process, once per
round. The script imports only Quix Streams and the standard library (no connectrt, no
``bench/_common``).

What one run does (the pipeline and the steady state of bench_file_pipeline.py's docstring):
the lines of ``--lines`` are produced, serialized through a Quix ``Topic``
(``value_serializer="json"``) as the JSON envelope ``{"schema": ..., "payload": <line>}``, by
Quix's producer in a second thread, while an ``Application`` whose ``StreamingDataFrame`` over
the topic (``value_deserializer="json"``) writes each payload line to ``--out`` runs its
consumer loop in the main thread. Quix's client defaults are kept, except the group-join
settings given as ``--consumer-config`` and ``auto.offset.reset=earliest``. The consumer half
joins first; one warm-up line goes through the whole pipeline (acknowledged and written out)
before any timed line is produced. The clock, this process's own, starts when the first timed
line is written out and stops when the ``--records``-th is.

Output: one JSON line on stdout, ``{"rate": <timed lines/s>, "cpu_us": <this process's CPU time
per timed line, microseconds>, "lines": <timed lines counted>}``; Quix's log goes to stderr.
Exit status 0 only when every line was written out.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

WARMUP = "warm-up line"
"""The first line written out; bench_file_pipeline.py checks the output starts with it."""
SCHEMA = {"type": "string", "optional": False}


class Clock:
    """When the first timed lines were written out (and how many), and when the N-th was,
    with this process's CPU time at both. Used by the consumer loop's thread only."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.first: float | None = None
        self.first_count = 0
        self.end: float | None = None
        self.cpu = (0.0, 0.0)

    def written(self, count: int) -> None:
        """``count`` timed lines are written out so far (called after each write)."""
        if self.first is None and count > 0:
            self.first, self.first_count = time.perf_counter(), count
            self.cpu = (time.process_time(), 0.0)
        if count >= self.n and self.end is None:
            self.end = time.perf_counter()
            self.cpu = (self.cpu[0], time.process_time())

    def figures(self) -> dict[str, float]:
        if self.first is None or self.end is None:
            raise RuntimeError("the clock did not run")
        timed = self.n - self.first_count
        return {
            "rate": timed / (self.end - self.first),
            "cpu_us": (self.cpu[1] - self.cpu[0]) / timed * 1e6,
            "lines": timed,
        }


def produce_lines(
    lines: Path,
    produce: Callable[[bytes], None],
    poll: Callable[[float], Any],
    flush: Callable[[float], int],
    encode: Callable[[str], bytes],
) -> None:
    """The producer loop of bench_file_pipeline.py's hand-rolled side, line for line."""
    with lines.open("r", encoding="utf-8") as f:
        for i, line in enumerate(f):
            value = encode(line[:-1])
            while True:
                try:
                    produce(value)
                    break
                except BufferError:
                    poll(0.05)
            if i % 2000 == 0:
                poll(0)
    if flush(60):
        raise RuntimeError("producer: records not acknowledged")


def run(args: argparse.Namespace) -> dict[str, float]:
    with warnings.catch_warnings():
        # authlib's deprecation warnings, via quixstreams: authlib adds an "always" filter of
        # its own on import, so they are silenced at the display instead (restored on exit)
        warnings.simplefilter("ignore")
        warnings.showwarning = lambda *args, **kwargs: None
        from quixstreams import Application

    n: int = args.records
    app = Application(
        broker_address=args.bootstrap,
        consumer_group=args.group,
        auto_offset_reset="earliest",
        consumer_extra_config=json.loads(args.consumer_config),
        state_dir=args.state_dir,
        loglevel="WARNING",
        use_changelog_topics=False,
    )
    logging.getLogger("quixstreams").setLevel(logging.WARNING)
    topic = app.topic(args.topic, value_deserializer="json", value_serializer="json")
    warm = threading.Event()
    clock = Clock(n)
    with Path(args.out).open("w", encoding="utf-8") as f:
        count = -1  # the warm-up line comes first

        def write(value: dict[str, Any]) -> None:
            nonlocal count
            f.write(value["payload"])
            f.write("\n")
            count += 1
            if count == 0:
                warm.set()
                return
            clock.written(count)
            if count == n:
                app.stop()

        sdf = app.dataframe(topic)
        sdf.update(write)
        errors: list[BaseException] = []

        def ingest() -> None:
            try:
                with app.get_producer() as producer:

                    def produce(value: bytes) -> None:
                        producer.produce(topic.name, value)

                    def encode(line: str) -> bytes:
                        value = topic.serialize(
                            key=None, value={"schema": SCHEMA, "payload": line}
                        ).value
                        assert isinstance(value, bytes)
                        return value

                    produce(encode(WARMUP))
                    if producer.flush(60):
                        raise RuntimeError("Quix: warm-up line not acknowledged")
                    if not warm.wait(120):
                        raise TimeoutError("Quix: the warm-up line was not written out")
                    produce_lines(Path(args.lines), produce, producer.poll, producer.flush, encode)
            except BaseException as e:
                errors.append(e)
                app.stop()

        t = threading.Thread(target=ingest, name="quix-ingest")
        t.start()
        app.run()
        t.join()
    if errors:
        raise errors[0]
    if count != n:
        raise RuntimeError(f"Quix: {count} of {n} lines written out")
    return clock.figures()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", required=True, help="bootstrap servers")
    ap.add_argument("--topic", required=True, help="the pipeline's topic (exists already)")
    ap.add_argument("--group", required=True, help="the Application's consumer group")
    ap.add_argument("--lines", required=True, help="input file: one line per record")
    ap.add_argument("--out", required=True, help="output file: the payload lines")
    ap.add_argument("--records", type=int, required=True, help="lines in --lines")
    ap.add_argument("--state-dir", required=True, help="the Application's state directory")
    ap.add_argument("--consumer-config", default="{}", help="JSON object: extra consumer settings")
    figures = run(ap.parse_args())
    sys.stdout.write(json.dumps(figures) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
