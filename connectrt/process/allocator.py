"""The memory allocator a worker process runs with: mimalloc where it is installed.

Why: a sink task's consumer allocates every message on librdkafka's fetch thread and frees it
on the task thread. glibc's malloc returns a block to the arena it came from under that arena's
lock, which the fetch thread holds while it allocates the next messages: the task thread waits
on it several times per thousand records (``perf record -e sched:sched_switch`` on the task
thread, 2026-11-30: 95-99% of its waits were in ``free()`` inside ``Consumer.consume``, at most
2% for data). mimalloc frees another thread's block without a lock. Measured on a sink reading
100 B records from Apache Kafka (``bench_sink --records-path``, 2 cores): the task thread's CPU per
record fell from 525-540 ns to about 470, the hand-written consumer loop's from 390-410 to
about 345, and waits in ``free()`` from 4 per thousand records to none.

An allocator is chosen when a process starts: the dynamic loader reads ``LD_PRELOAD`` only at
exec. :func:`use_preferred_allocator` therefore executes the process again, once, with the
library preloaded, before the worker starts any thread; in the new process it puts
``LD_PRELOAD`` back as it was, so that the processes a worker starts (a JVM for Spark, the
tracing exporter) get the environment they were given. mimalloc runs with
:data:`MIMALLOC_DEFAULT` unless the environment sets it. The ``connectrt`` command calls it for
the commands that run a worker (:data:`WORKER_COMMANDS`); the benchmarks call it too, so that
both sides of a comparison run as a worker would.

``CONNECTRT_MALLOC`` chooses: ``auto`` (the default: mimalloc from the ``mimalloc`` extra, the
``cmeel-mimalloc`` wheel, or the system's ``libmimalloc``; else the C library's malloc),
``mimalloc`` (the same, and an error without it), ``system`` (the C library's malloc), or the
path of a shared library to preload (jemalloc, tcmalloc). Linux only: elsewhere the process
keeps its allocator. Not thread-safe: call it first thing in ``main``.
"""

from __future__ import annotations

import ctypes.util
import importlib.metadata
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = [
    "MIMALLOC_DEFAULT",
    "SETTING",
    "WORKER_COMMANDS",
    "AllocatorError",
    "allocator_in_use",
    "choose_library",
    "use_preferred_allocator",
]

log = logging.getLogger(__name__)

SETTING = "CONNECTRT_MALLOC"
"""The environment variable that chooses the allocator (see the module docstring)."""

WORKER_COMMANDS = frozenset({"standalone", "worker", "spark", "demo"})
"""The ``connectrt`` commands that run a worker, and so run it with the preferred allocator."""

MIMALLOC_DEFAULT = ("MIMALLOC_ARENA_EAGER_COMMIT", "0")
"""mimalloc's setting a worker runs with unless its environment gives one: memory is committed
as it is used rather than a whole arena at once. Measured 2026-11-30 (``bench_memory``: a REST
worker, 2 sources and 2 sinks at full rate, Apache Kafka): peak RSS 290 MB with mimalloc's
defaults, 169 MB with this, 151 MB with glibc's malloc; throughput 652k, 635k and 575k records/s."""

_LOADED = "CONNECTRT_MALLOC_LOADED"  # set for the executed process: the library it preloads
_PREVIOUS = "CONNECTRT_MALLOC_PREVIOUS_LD_PRELOAD"  # LD_PRELOAD as it was, if it was set


class AllocatorError(ValueError):
    """``CONNECTRT_MALLOC`` names an allocator that is not there."""


def _mimalloc() -> str | None:
    """The path of an installed mimalloc: the ``cmeel-mimalloc`` wheel's, else the system's."""
    try:
        wheel = importlib.metadata.distribution("cmeel-mimalloc")
    except importlib.metadata.PackageNotFoundError:
        wheel = None
    if wheel is not None:
        for file in wheel.files or ():
            if file.name.startswith("libmimalloc.so"):
                path = Path(str(wheel.locate_file(file)))
                if path.is_file():
                    return str(path)
    name = ctypes.util.find_library("mimalloc")
    return name  # a soname the loader finds (ldconfig knows it), or None


def choose_library(environ: Mapping[str, str]) -> str | None:
    """The shared library ``environ`` asks to preload, or None for the C library's malloc.
    Raises :class:`AllocatorError` for a setting that names no usable library."""
    setting = environ.get(SETTING, "auto").strip() or "auto"
    if setting == "system":
        return None
    if setting in ("auto", "mimalloc"):
        found = _mimalloc()
        if found is None and setting == "mimalloc":
            raise AllocatorError(
                f"{SETTING}=mimalloc: mimalloc is not installed "
                "(pip install 'connectrt[mimalloc]', or the system's libmimalloc)"
            )
        return found
    if os.sep in setting and Path(setting).is_file():
        return setting
    raise AllocatorError(
        f"{SETTING}={setting!r}: expected auto, mimalloc, system or the path of a shared "
        "library to preload"
    )


def allocator_in_use() -> str:
    """What this process allocates with: the preloaded library's file name, else ``"system"``
    (read from the process's memory map; ``"unknown"`` where there is none)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return "unknown"
    for line in maps.splitlines():
        name = line.rsplit("/", 1)[-1]
        if name.startswith(("libmimalloc", "libjemalloc", "libtcmalloc")):
            return name
    return "system"


def _restore_environment() -> str | None:
    """In the executed process: ``LD_PRELOAD`` as the process was given it; the library."""
    library = os.environ.pop(_LOADED, None)
    previous = os.environ.pop(_PREVIOUS, None)
    if library is None:
        return None
    if previous is None:
        os.environ.pop("LD_PRELOAD", None)
    else:
        os.environ["LD_PRELOAD"] = previous
    return library


def use_preferred_allocator(argv: Sequence[str] | None = None) -> str | None:
    """Make this process run with the allocator ``CONNECTRT_MALLOC`` chooses: when it is not
    loaded yet, execute ``argv`` (default: the interpreter's own command line) again with it
    preloaded (this call then does not return). Returns the library in use, or None for the
    C library's malloc. An unusable setting raises :class:`AllocatorError`; a library that is
    already preloaded, a platform without ``LD_PRELOAD`` or a failed exec leave the process as
    it is (the last with a warning)."""
    restored = _restore_environment()
    if restored is not None:
        return restored  # this is the executed process
    library = choose_library(os.environ)
    if library is None or not sys.platform.startswith("linux"):
        return None
    current = allocator_in_use()
    if current != "system":
        return current  # preloaded by whoever started us
    command = list(argv) if argv is not None else [sys.executable, *sys.orig_argv[1:]]
    env = dict(os.environ)
    previous = env.get("LD_PRELOAD")
    if previous is not None:
        env[_PREVIOUS] = previous
    env[_LOADED] = library
    env["LD_PRELOAD"] = f"{library} {previous}" if previous else library
    if "mimalloc" in Path(library).name:
        env.setdefault(*MIMALLOC_DEFAULT)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, command, env)
    except OSError as e:
        log.warning("Could not run again with %s preloaded, using malloc: %s", library, e)
    return None
