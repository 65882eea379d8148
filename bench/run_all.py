"""Run the benchmarks in sequence, each in its own subprocess (and so with its own fresh
broker), then print the RESULT line of each. ``make bench`` runs this.

Usage: ``python bench/run_all.py [--quick] [--only bench_a,bench_b] [--broker
embedded|kafka|HOST:PORT]`` (``--quick`` uses small volumes and one round: a smoke test, not a
measurement; ``--broker``, passed to every bench, defaults to ``$CONNECTRT_BENCH_BROKER`` or
``embedded``: each bench then starts its own embedded or Apache Kafka broker, or uses the
running one at ``HOST:PORT``). Every bench must end with exactly one
``RESULT <bench> connectrt=<rec/s> baseline=<rec/s> ratio=<x>`` line; one that does not counts
as failed. The summary names the broker the RESULT lines are for. Figures are printed, never
asserted.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import RESULT_LINE, add_broker_option, broker_label, open_broker  # noqa: E402

BENCHES: list[tuple[str, list[str], list[str]]] = [
    ("bench_source", [], ["--records", "100000", "--rounds", "1"]),
    ("bench_sink", [], ["--records", "300000", "--rounds", "1"]),
    ("bench_file_pipeline", [], ["--records", "50000", "--rounds", "1"]),
    ("bench_memory", [], ["--duration", "5", "--warmup", "3", "--rounds", "1"]),
    (
        "bench_transforms",
        [],
        ["--records", "50000", "--repeats", "3", "--e2e-records", "50000", "--e2e-rounds", "1"],
    ),
    (
        "bench_rest",
        [],
        [
            "--connectors",
            "20",
            "--status-requests",
            "300",
            "--list-requests",
            "30",
            "--rounds",
            "1",
        ],
    ),
    ("bench_avro", [], ["--records", "20000", "--rounds", "1", "--lookups", "500"]),
    ("bench_schema_formats", [], ["--records", "2000", "--rounds", "1", "--warmup", "200"]),
    ("bench_jdbc_sink", [], ["--records", "20000", "--rounds", "1"]),
    ("bench_objectstore", [], ["--records", "40000", "--flush-size", "2000", "--rounds", "1"]),
    ("bench_jdbc_source", [], ["--rows", "50000", "--rounds", "1"]),
    ("bench_processes", [], ["--records", "10000", "--rounds", "1"]),
    ("bench_spark", [], ["--records", "50000", "--rounds", "1"]),
    (
        "bench_spark_connect",
        ["--records", "200000", "--rounds", "2"],
        ["--records", "50000", "--rounds", "1"],
    ),
    ("bench_spark_bridge", [], ["--records", "50000", "--rows", "10000", "--rounds", "1"]),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small volumes, one round")
    ap.add_argument("--only", default="", help="comma-separated bench names")
    add_broker_option(ap)
    args = ap.parse_args()
    open_broker(args.broker)  # a value of none of the three forms fails here, before any bench
    broker = broker_label(args.broker)
    print(f"broker for every bench: {broker}", flush=True)
    only = {b for b in args.only.split(",") if b}
    results: list[str] = []
    failures = []
    for bench, full, quick in BENCHES:
        if only and bench not in only:
            continue
        cmd = [sys.executable, str(HERE / f"{bench}.py"), *(quick if args.quick else full)]
        cmd += ["--broker", args.broker]
        print(f"\n##### {bench}", flush=True)
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=HERE.parent)
        assert proc.stdout is not None
        lines: list[str] = []
        for line in proc.stdout:
            print(line, end="", flush=True)
            lines.append(line.rstrip("\n"))
        found = [line for line in lines if line.startswith("RESULT ")]
        if proc.wait() != 0:
            failures.append(bench)
            print(f"##### {bench} FAILED (exit {proc.returncode})", flush=True)
        elif len(found) != 1 or found[0] != lines[-1] or not RESULT_LINE.match(found[0]):
            failures.append(bench)
            print(f"##### {bench} FAILED: no single well-formed RESULT line at the end", flush=True)
        else:
            results.append(found[0])
            print(f"##### {bench} done in {time.monotonic() - t0:.0f} s", flush=True)
    print("\n===== summary")
    print(f"  broker: {broker}")
    for line in results:
        print(f"  {line}")
    if failures:
        print(f"  FAILED: {', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
