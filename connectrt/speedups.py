"""The optional C extension ``connectrt._speedups``, or None where it is not in use.

The extension (connectrt/_speedups.c, built by ``pip install -e .`` / ``make setup`` where
a C compiler and the Python headers are present) makes a sink batch's records from its columns
in one C call (and frees them), its columns from the consumed messages (librdkafka's
accessors called through their C functions), and, in the trace exporter process, a sink's
picked records made into trace records (:func:`connectrt.runtime.tracing.tracer.sink_batch`) and
their OTLP spans (:mod:`connectrt.runtime.tracing.otlp_encoding`). Everything it does has
a pure-Python equivalent, used when it was not built or when ``CONNECTRT_PURE_PYTHON=1`` is in
the environment at import time (the tests run both). Read once, at import.
"""

from __future__ import annotations

import os
from types import ModuleType

__all__ = ["SPEEDUPS"]


def _load() -> ModuleType | None:
    if os.environ.get("CONNECTRT_PURE_PYTHON") == "1":
        return None
    try:
        from connectrt import _speedups
    except ImportError:
        return None
    return _speedups


SPEEDUPS: ModuleType | None = _load()
"""The extension module, or None: use the pure-Python paths."""
