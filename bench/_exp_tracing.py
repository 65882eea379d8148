"""TEMP experiment (not committed): bench_tracing with the exporter process replaced by `cat`
when EXP_CAT=1 (the worker's side alone)."""

import os
import subprocess
import sys

import _common  # noqa: F401  (allocator)

from connectrt.runtime.tracing import exporter as ex

if os.environ.get("EXP_CAT") == "1":
    real = subprocess.Popen

    class CatPopen(real):  # type: ignore
        def __init__(self, args, **kw):
            if isinstance(args, list) and "connectrt.runtime.tracing.exporter" in args:
                args = ["sh", "-c", "cat > /dev/null"]
            super().__init__(args, **kw)

    ex.subprocess.Popen = CatPopen
import bench_tracing

sys.argv[0] = "bench_tracing.py"
bench_tracing.main()
