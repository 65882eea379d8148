"""The exporter process: trace records shipped out of the task process, made into spans and
exported there.

Building tens of thousands of SDK spans a second and encoding them for OTLP is Python work;
done on a thread of the task process, it holds the interpreter lock the task threads need
(measured: tracing 1% of a 320,000 records/s sink cost three quarters of its throughput). So a
process that traces starts one child process per tracing setting, on first use
(:func:`outlet_for`): ``python -m connectrt.runtime.tracing.exporter SETTINGS``.

Parent side (:class:`ChildOutlet`): tracers :meth:`~ChildOutlet.put` trace records (tuples, see
:mod:`connectrt.runtime.tracing.tracer`) into a list, under a lock; a shipper thread wakes every
:data:`SHIP_INTERVAL_S` (or on :meth:`~ChildOutlet.flush`), serialises what was put and writes
it to the child's standard input (a pipe widened to :data:`PIPE_BYTES`) as one length-prefixed
frame (:func:`encode_frame`: :mod:`marshal`, a third of pickle's CPU for these tuples of ints,
strings and bytes, both ways; pickle for a frame marshal refuses, such as an attribute value of
another type). At most :data:`MAX_PENDING` traced records wait: when the child falls behind
(its pipe is full), later trace records are dropped and counted (logged once a minute), so a
slow backend never slows the tasks or grows memory. A ``committed`` trace record weighs nothing
(it names the records, which went before): it is never dropped. At exit (and
:func:`close_outlets`) the shipper sends the rest and closes the pipe; the child exports
everything it read and ends, and the parent waits for it (bounded).

Child side (:func:`main`): reads frames until end of input, resolves their commits
(:class:`~connectrt.runtime.tracing.commit_ledger.CommitLedger`: the exporter side remembers the
records awaiting their ``offset commit`` span) and exports their spans synchronously, at most
:data:`EXPORT_BATCH` per request. Over OTLP it encodes the protobuf itself
(:mod:`connectrt.runtime.tracing.otlp_encoding`: the SDK's encoder costs 95 µs of CPU per span,
this one about 0.3) and sends it raw (:mod:`connectrt.runtime.tracing.otlp_sender`, honouring the
``OTEL_EXPORTER_OTLP_*`` headers, compression and timeout variables). While it waits for the
backend's answer it reads nothing: the widened pipe and the parent's bound hold what comes
meanwhile (about 3 s and 4 s of 1% of a sink moving 600,000 records/s). Sending on a thread of
its own while encoding the next request was measured too (2026-11-29, a busy 2-core machine
with Jaeger and Kafka on it): it made the exporter and the backend work at once, on the cores
the tasks need, and cost the sink more throughput at 1% (0.65 to 0.70 of off, against 0.76 to
1.09 one request at a time) and at 100%. To the console it makes the SDK's spans
(:func:`connectrt.runtime.tracing.sdk_spans.spans`) and uses the SDK's exporter.
``OTEL_RESOURCE_ATTRIBUTES`` applies either way. A parent that dies closes the pipe, so the
child never outlives it by more than its last export.

If the child cannot be started, the process exports in-process instead (a
:class:`~connectrt.runtime.tracing.sdk_spans.LocalOutlet` over the SDK's batch span
processor), with a warning.
"""

from __future__ import annotations

import atexit
import gc
import json
import logging
import marshal
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict
from typing import IO, TYPE_CHECKING, Any

from connectrt.runtime.tracing.commit_ledger import CommitLedger
from connectrt.runtime.tracing.tracer import TraceOutlet

if TYPE_CHECKING:  # the exporter process starts without the config modules: quicker
    from connectrt.runtime.config.tracing import TracingSettings

__all__ = [
    "EXPORT_BATCH",
    "MAX_PENDING",
    "SHIP_INTERVAL_S",
    "ChildOutlet",
    "close_outlets",
    "encode_frame",
    "main",
    "outlet_for",
]

log = logging.getLogger(__name__)

SHIP_INTERVAL_S = 0.25
"""How often the shipper thread sends the trace records put meanwhile."""
MAX_PENDING = 20_000
"""Traced records waiting to be shipped, at most; beyond, trace records are dropped (4 s of
1% of a sink moving 500,000 records/s: a few megabytes)."""
EXPORT_BATCH = 2048
"""Spans per export call in the exporter process, at most."""
PIPE_BYTES = 1 << 20
"""The pipe's buffer asked for (Linux; the default 64 KiB holds less than a second of 1% of a
busy sink): the shipper's writes return while the exporter process waits for its backend."""
CLOSE_TIMEOUT_S = 30.0
"""How long closing waits for the exporter process to export the rest and end."""

_outlets: dict[TracingSettings, TraceOutlet] = {}
_lock = threading.Lock()
# A forked process has no shipper thread: it starts outlets of its own.
os.register_at_fork(after_in_child=_outlets.clear)


class ChildOutlet:
    """Ships trace records to an exporter process (see the module docstring). Thread-safe."""

    def __init__(self, settings: TracingSettings) -> None:
        """Start the exporter process and the shipper thread (OSError if the process cannot
        be started)."""
        from connectrt.runtime.tracing.sdk_spans import resource_of

        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # this process's imports
        config = {
            "settings": asdict(settings),
            "resource": dict(resource_of(settings).attributes),  # so the child needs no SDK
        }
        self._process = subprocess.Popen(
            [sys.executable, "-m", __name__, json.dumps(config)],
            stdin=subprocess.PIPE,
            env=env,
        )
        self._pipe: IO[bytes] | None = self._process.stdin
        _widen(self._pipe)
        self._lock = threading.Lock()
        self._pending: list[tuple[Any, ...]] = []
        self._weight = 0
        self.dropped = 0
        """Traced records whose spans were dropped since the start (the exporter process fell
        behind)."""
        self._reported = 0
        self._report_at = 0.0
        self._wake = threading.Event()
        self._closing = False
        self._thread = threading.Thread(
            target=self._ship_loop, name="connectrt-trace-shipper", daemon=True
        )
        self._thread.start()

    def put(self, record: tuple[Any, ...], weight: int) -> None:
        with self._lock:
            if self._weight + weight > MAX_PENDING:
                self.dropped += weight
                return
            self._pending.append(record)
            self._weight += weight

    def flush(self) -> None:
        self._wake.set()

    def _take(self) -> list[tuple[Any, ...]]:
        with self._lock:
            taken, self._pending, self._weight = self._pending, [], 0
        return taken

    def _ship_loop(self) -> None:
        while True:
            self._wake.wait(SHIP_INTERVAL_S)
            self._wake.clear()
            closing = self._closing
            taken = self._take()
            if taken and self._pipe is not None:
                frame = encode_frame(taken)
                try:
                    self._pipe.write(frame)
                    self._pipe.flush()
                except (BrokenPipeError, OSError, ValueError):
                    log.warning(
                        "The trace exporter process ended (exit code %s): spans are dropped",
                        self._process.poll(),
                    )
                    self._pipe = None
            elif taken:
                self.dropped += sum(_weight(record) for record in taken)
            self._report()
            if closing:
                return

    def _report(self) -> None:
        if self.dropped > self._reported and time.monotonic() >= self._report_at:
            log.warning(
                "Tracing dropped the spans of %d traced records so far: the trace exporter "
                "process falls behind (lower tracing.sampler.ratio)",
                self.dropped,
            )
            self._reported = self.dropped
            self._report_at = time.monotonic() + 60

    def close(self, timeout: float = CLOSE_TIMEOUT_S) -> None:
        """Ship the rest, end the exporter process once it exported it (waits up to
        ``timeout``, then kills it). Idempotent."""
        if self._closing:
            return
        self._closing = True
        self._wake.set()
        self._thread.join(timeout)
        if self._pipe is not None:
            try:
                self._pipe.close()
            except OSError:
                pass
            self._pipe = None
        try:
            self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            log.warning("The trace exporter process did not end in %.0f s: killed", timeout)
            self._process.kill()
            self._process.wait()


def outlet_for(settings: TracingSettings) -> TraceOutlet:
    """The process's outlet for ``settings``, made on first use (thread-safe) and closed at
    exit: a :class:`ChildOutlet`, else an in-process one (see the module docstring)."""
    with _lock:
        outlet = _outlets.get(settings)
        if outlet is None:
            try:
                child = ChildOutlet(settings)
                atexit.register(child.close)
                outlet = child
            except OSError as e:
                log.warning("Cannot start the trace exporter process (%s): exporting in-process", e)
                outlet = _local(settings)
            _outlets[settings] = outlet
        return outlet


def close_outlets() -> int:
    """Close every outlet of this process (their exporter processes export what they have and
    end); the next :func:`outlet_for` starts afresh. Returns the traced records they dropped.
    For benchmarks and tests."""
    with _lock:
        outlets = list(_outlets.values())
        _outlets.clear()
    dropped = 0
    for outlet in outlets:
        if isinstance(outlet, ChildOutlet):
            outlet.close()
            dropped += outlet.dropped
        else:
            outlet.flush()
    return dropped


def _local(settings: TracingSettings) -> TraceOutlet:
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from connectrt.runtime.tracing.sdk_spans import LocalOutlet, make_exporter, resource_of

    processor = BatchSpanProcessor(make_exporter(settings))
    atexit.register(processor.shutdown)
    return LocalOutlet(processor, resource_of(settings))


def _widen(pipe: IO[bytes] | None) -> None:
    """Ask for a :data:`PIPE_BYTES` buffer on ``pipe`` (Linux only; best effort)."""
    try:
        import fcntl

        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)  # type: ignore[union-attr]
    except (ImportError, AttributeError, OSError, ValueError):
        pass  # another system, or over /proc/sys/fs/pipe-max-size: the default buffer


def _weight(record: tuple[Any, ...]) -> int:
    """The traced records of a trace record (for the count of dropped ones)."""
    if record[0] == "consumed":
        return len(record[6]) // 5
    if record[0] in ("sink", "source"):
        return len(record[6] if record[0] == "sink" else record[3])
    return 1 if record[0] == "span" else 0


# -- the exporter process -------------------------------------------------------------------------


def _read(stream: IO[bytes], n: int) -> bytes | None:
    data = stream.read(n)
    return data if data is not None and len(data) == n else None


_MARSHAL, _PICKLE = b"m", b"p"
_MARSHAL_VERSION = 4  # both ends run the same interpreter (the child is sys.executable)


def encode_frame(records: list[tuple[Any, ...]]) -> bytes:
    """A frame of trace records: their serialised size (4 bytes, big-endian, the format byte
    included), the format (``m``: marshal, ``p``: pickle) and the records."""
    try:
        body = _MARSHAL + marshal.dumps(records, _MARSHAL_VERSION)
    except ValueError:  # a value marshal does not take
        body = _PICKLE + pickle.dumps(records, pickle.HIGHEST_PROTOCOL)
    return len(body).to_bytes(4, "big") + body


COLLECT_INTERVAL_S = 30.0
"""How often the exporter process collects cyclic garbage (its automatic collection is off)."""


def _frames(stream: IO[bytes]) -> Iterator[list[tuple[Any, ...]]]:
    """The trace records of each frame on ``stream`` (:func:`encode_frame`), until its end.

    With the cyclic garbage collector off (the exporter process's :func:`main` turns it off: a
    frame is thousands of tuples and lists that reference counting frees once their spans are
    made, and collections triggered by their allocation visited them all for nothing; measured
    on the replay of a 1% sink's frames, loading them 0.29 against 0.36 µs per traced record,
    and no pauses of twice that), it collects every :data:`COLLECT_INTERVAL_S`."""
    collected = time.monotonic()
    while True:
        if not gc.isenabled() and time.monotonic() - collected >= COLLECT_INTERVAL_S:
            gc.collect()
            collected = time.monotonic()
        head = _read(stream, 4)
        body = None if head is None else _read(stream, int.from_bytes(head, "big"))
        if not body:
            return
        view = memoryview(body)[1:]
        yield marshal.loads(view) if body[:1] == _MARSHAL else pickle.loads(view)


def _export_otlp(config: dict[str, Any], frames: Iterator[list[tuple[Any, ...]]]) -> None:
    """OTLP: the spans encoded by :mod:`connectrt.runtime.tracing.otlp_encoding`, sent raw, one
    request at a time (see the module docstring for why not on a thread of their own)."""
    from connectrt.runtime.tracing.otlp_encoding import RequestEncoder
    from connectrt.runtime.tracing.otlp_sender import otlp_sender

    encoder = RequestEncoder(config["resource"])
    send = otlp_sender(config["settings"]["endpoint"], config["settings"]["protocol"])
    for records in frames:  # the encoder resolves the commits with its own ledger
        for request in encoder.requests(records, EXPORT_BATCH):
            send(request)
        encoder.ledger.report()


def _export_sdk(config: dict[str, Any], frames: Iterator[list[tuple[Any, ...]]]) -> None:
    """The console: the SDK's spans and exporter."""
    from connectrt.runtime.config.tracing import TracingSettings
    from connectrt.runtime.tracing.sdk_spans import make_exporter, resource_of, spans

    settings = TracingSettings(**config["settings"])
    exporter = make_exporter(settings)
    resource = resource_of(settings)
    ledger = CommitLedger()
    try:
        for records in frames:
            batch: list[Any] = []
            for record in ledger.resolve(records):
                batch.extend(spans(record, resource))
            ledger.report()
            for i in range(0, len(batch), EXPORT_BATCH):
                exporter.export(batch[i : i + EXPORT_BATCH])
    finally:
        exporter.shutdown()


def main(argv: list[str] | None = None) -> int:
    """The exporter process: frames of trace records from standard input, exported as spans
    (see the module docstring); returns at end of input."""
    args = sys.argv[1:] if argv is None else argv
    # Ctrl-C in a terminal reaches the whole process group: the worker stops and closes the
    # pipe; until then this process goes on, so the last spans are exported.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if argv is None:  # this process's own: see _frames
        gc.disable()
    config = json.loads(args[0])
    export = _export_otlp if config["settings"]["exporter"] == "otlp" else _export_sdk
    export(config, _frames(sys.stdin.buffer))
    return 0


MALLOC_KEEP_BYTES = 32 << 20
"""Freed memory the exporter process's C library keeps for its next allocations rather than
handing it back to the system (:func:`keep_freed_memory`)."""


def keep_freed_memory() -> bool:
    """Make glibc's malloc keep up to :data:`MALLOC_KEEP_BYTES` of freed memory and allocate
    blocks under that size from its heap. The exporter makes and frees a request of hundreds of
    kilobytes many times a second; by default each is a fresh mapping whose pages fault in on
    first write, and the heap's top is trimmed back after each: measured 2026-11-30 on the
    replay of a 1% sink's trace records, 1.40 against 1.07 µs of CPU per traced record to
    encode. No effect under another allocator (mallopt is glibc's) or where it is missing.
    Returns whether glibc took the three settings."""
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
    took = mallopt(m_mmap_threshold, MALLOC_KEEP_BYTES)
    took &= mallopt(m_trim_threshold, 2 * MALLOC_KEEP_BYTES)
    took &= mallopt(m_top_pad, MALLOC_KEEP_BYTES // 2)
    return took == 1


if __name__ == "__main__":
    keep_freed_memory()
    logging.basicConfig(level=logging.WARNING)
    sys.exit(main())
