"""Run the benchmarks in sequence, each in its own subprocess (and so with its own fresh
broker), then print the RESULT line of each. ``make bench`` runs this.

Usage: ``python bench/run_all.py [--quick] [--only bench_a,bench_b] [--broker
kafka,embedded|HOST:PORT] [--results DIR | --no-record]`` (``--quick`` uses small volumes and
one round: a smoke test, not a measurement; ``--broker``, passed to every bench, defaults to
``$CONNECTRT_BENCH_BROKER``, else ``kafka`` where Java is present, else ``embedded``: each bench
then starts its own embedded or Apache Kafka broker, or uses the running one at ``HOST:PORT``;
a comma-separated list runs every bench on each broker in turn, e.g. ``kafka,embedded`` for the
summary's second column). Every RESULT line is recorded under ``bench/results/<broker>/`` (not
with ``--quick``, whose figures are no measurement), for ``bench/summary.py``. Every bench must
end with exactly one
``RESULT <bench> connectrt=<rec/s> baseline=<rec/s> ratio=<x>`` line; one that does not counts
as failed (a bench measuring several cases prints a ``RESULT <bench>_<case> ...`` line per
case before it; all are collected). The summary names the broker the RESULT lines are for.
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import (  # noqa: E402
    RESULT_LINE,
    RESULTS_ENV,
    add_broker_option,
    broker_label,
    open_broker,
)

RESULTS = HERE / "results"

VARIANTS: dict[str, tuple[str, list[str]]] = {
    "bench_source_list": ("bench_source", ["--records-path"]),
    "bench_sink_records": ("bench_sink", ["--records-path"]),
    "bench_file_pipeline_deploy": ("bench_file_pipeline", ["--deploy-defaults", "--skip-quix"]),
    "bench_tracing_source_runtime": ("bench_tracing", ["--side", "source", "--backend", "null"]),
}
"""A bench run again with a setting that makes its figure a row of its own: the name of its
RESULT line -> (its script, the setting's arguments): the README's record-at-a-time styles (a
source task returning ``SourceRecord`` lists, a sink task iterating ``SinkRecord`` s) and the
file pipeline with the ``deploy/`` converters; the cost of tracing a source task's lists."""

BENCHES: list[tuple[str, list[str], list[str]]] = [
    ("bench_source", [], ["--records", "100000", "--rounds", "1"]),
    ("bench_source_list", [], ["--records", "100000", "--rounds", "1"]),
    ("bench_source_commit", [], ["--records", "100000", "--rounds", "1"]),
    ("bench_sink", [], ["--records", "300000", "--rounds", "1"]),
    ("bench_sink_records", [], ["--records", "300000", "--rounds", "1"]),
    ("bench_file_pipeline", [], ["--records", "50000", "--rounds", "1"]),
    ("bench_file_pipeline_deploy", [], ["--records", "50000", "--rounds", "1"]),
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
    ("bench_tap", [], ["--batches", "40", "--rounds", "1"]),
    ("bench_rest_blocked", [], ["--requests", "300", "--rounds", "1", "--idle", "3"]),
    ("bench_objectstore", [], ["--records", "40000", "--flush-size", "2000", "--rounds", "1"]),
    ("bench_jdbc_source", [], ["--rows", "50000", "--rounds", "1"]),
    ("bench_processes", [], ["--records", "10000", "--rounds", "1"]),
    ("bench_spark", [], ["--records", "50000", "--rounds", "1"]),
    (
        "bench_spark_connect",
        ["--rounds", "2"],
        ["--records", "50000", "--rounds", "1"],
    ),
    ("bench_spark_bridge", [], ["--records", "50000", "--rows", "10000", "--rounds", "1"]),
    ("bench_e2e_latency", [], ["--seconds", "5", "--rounds", "1"]),
    ("bench_tracing", [], ["--records", "20000", "--rounds", "1"]),
    (
        "bench_tracing_source_runtime",
        ["--records", "6000000", "--rounds", "5"],
        ["--records", "20000", "--rounds", "1"],
    ),
    ("bench_share_group", [], ["--records", "2000", "--warmup", "500", "--rounds", "1"]),
    (
        "bench_vs_kafka_connect",
        [],
        ["--records", "20000", "--warmup", "2000", "--rounds", "1"],
    ),
    (
        "bench_json_vs_kafka_connect",
        [],
        ["--records", "5000", "--passes", "2", "--rounds", "1", "--warmup-passes", "20"],
    ),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small volumes, one round")
    ap.add_argument("--only", default="", help="comma-separated bench names")
    add_broker_option(ap)
    ap.add_argument(
        "--results",
        default=str(RESULTS),
        help="folder for the recorded RESULT lines (default bench/results)",
    )
    ap.add_argument("--no-record", action="store_true", help="record no RESULT line")
    args = ap.parse_args()
    brokers = [b.strip() for b in args.broker.split(",") if b.strip()] or ["embedded"]
    for choice in brokers:
        open_broker(choice)  # a value of none of the three forms fails here, before any bench
    env = dict(os.environ)
    env.pop(RESULTS_ENV, None)
    if not (args.quick or args.no_record):
        env[RESULTS_ENV] = str(Path(args.results).resolve())
    only = {b for b in args.only.split(",") if b}
    failures: list[str] = []
    summaries = []
    for choice in brokers:
        broker = broker_label(choice)
        print(f"broker for every bench: {broker}", flush=True)
        results = run_benches(choice, only, args.quick, env, failures)
        summaries.append((broker, results))
    print("\n===== summary")
    for broker, results in summaries:
        print(f"  broker: {broker}")
        for line in results:
            print(f"  {line}")
    if failures:
        print(f"  FAILED: {', '.join(failures)}")
    return 1 if failures else 0


def run_benches(
    choice: str, only: set[str], quick: bool, env: dict[str, str], failures: list[str]
) -> list[str]:
    """Run the benches (those in ``only``, or all) on broker ``choice``; the RESULT lines of
    those that succeeded. Adds the name of each one that failed to ``failures``."""
    results: list[str] = []
    for bench, full, small in BENCHES:
        if only and bench not in only:
            continue
        script, setting = VARIANTS.get(bench, (bench, []))
        cmd = [sys.executable, str(HERE / f"{script}.py"), *setting, *(small if quick else full)]
        cmd += ["--broker", choice]
        print(f"\n##### {bench}", flush=True)
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=HERE.parent, env=env)
        assert proc.stdout is not None
        lines: list[str] = []
        for line in proc.stdout:
            print(line, end="", flush=True)
            lines.append(line.rstrip("\n"))
        found = [line for line in lines if line.startswith("RESULT ")]
        if proc.wait() != 0:
            failures.append(bench)
            print(f"##### {bench} FAILED (exit {proc.returncode})", flush=True)
        elif (
            not found
            or found[-1] != lines[-1]
            or not found[-1].startswith(f"RESULT {bench} ")
            or not all(RESULT_LINE.match(f) and f.startswith(f"RESULT {bench}") for f in found)
        ):
            failures.append(bench)
            print(
                f"##### {bench} FAILED: no well-formed RESULT line of its own at the end",
                flush=True,
            )
        else:
            results.extend(found)
            print(f"##### {bench} done in {time.monotonic() - t0:.0f} s", flush=True)
    return results


if __name__ == "__main__":
    sys.exit(main())
