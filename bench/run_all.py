"""Run the benchmarks in sequence, each in its own subprocess (and so with its own fresh
embedded broker), then print a summary. ``make bench`` runs this.

Usage: ``python bench/run_all.py [--quick]`` (``--quick`` uses smaller volumes).
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

BENCHES: list[tuple[str, list[str], list[str]]] = [
    ("bench_source", [], ["--records", "100000", "--rounds", "1"]),
    ("bench_sink", [], ["--records", "300000", "--rounds", "1"]),
    ("bench_file_pipeline", [], ["--records", "100000", "--rounds", "1"]),
    ("bench_memory", [], ["--duration", "10"]),
    (
        "bench_transforms",
        [],
        ["--records", "50000", "--repeats", "3", "--e2e-records", "50000", "--e2e-rounds", "1"],
    ),
    ("bench_rest", [], ["--connectors", "20", "--status-requests", "300", "--list-requests", "30"]),
    ("bench_avro", [], ["--records", "20000", "--rounds", "1", "--lookups", "500"]),
    ("bench_jdbc_sink", [], ["--records", "20000", "--rounds", "1"]),
    ("bench_jdbc_source", [], ["--rows", "50000"]),
    ("bench_processes", [], ["--records", "10000", "--rounds", "1"]),
    ("bench_spark", ["--records", "300000"], ["--records", "50000"]),
    (
        "bench_spark_bridge",
        [],
        ["--records", "50000", "--rows", "10000", "--rounds", "1"],
    ),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller volumes")
    args = ap.parse_args()
    results: list[dict[str, object]] = []
    failures = []
    for bench, full, quick in BENCHES:
        cmd = [sys.executable, str(HERE / f"{bench}.py"), *(quick if args.quick else full)]
        print(f"\n##### {bench}", flush=True)
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=HERE.parent)
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("BENCH_RESULT "):
                results.append(json.loads(line.split(" ", 1)[1]))
            else:
                print(line, end="", flush=True)
        if proc.wait() != 0:
            failures.append(bench)
            print(f"##### {bench} FAILED (exit {proc.returncode})", flush=True)
        else:
            print(f"##### {bench} done in {time.monotonic() - t0:.0f} s", flush=True)
    print("\n===== summary")
    for r in results:
        name = str(r.pop("bench"))
        figures = ", ".join(
            f"{k}={v:,.2f}" if isinstance(v, float) and v < 100 else f"{k}={v:,.0f}"
            for k, v in r.items()
            if isinstance(v, int | float)
        )
        print(f"  {name}: {figures}")
    if failures:
        print(f"  FAILED: {', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
