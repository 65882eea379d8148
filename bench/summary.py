"""The benchmarks at a glance: the recorded RESULT lines as one table and one chart.

Every RESULT line a bench prints under ``run_all.py`` is recorded as
``bench/results/<broker>/<bench>.json`` (``_common.record``: the figures, the UTC date, the
commit, the load average and the machine). This script reads the latest record of each bench
and renders

* the summary table of docs/benchmarks.md, between ``<!-- summary:start -->`` and
  ``<!-- summary:end -->``: bench, connectrt, baseline, ratio, the ratio on the embedded broker
  (the second column), the broker, the allocator both sides ran with (mimalloc, as a worker
  does, since 2026-11-30; glibc's malloc before), date, load average, commit;
* docs/images/benchmarks.svg: throughput per path and per runtime, connectrt beside its
  baselines (Kafka Connect, Quix Streams, the raw client, the hand-rolled loop), drawn as plain
  SVG by this script (no plotting library).

Usage::

    python bench/summary.py             # print the table
    python bench/summary.py --write     # rewrite the docs table and the SVG
    python bench/summary.py --check     # exit 1 when the docs are not what --write would write
    python bench/summary.py add "RESULT bench_x connectrt=1 baseline=2 ratio=0.500" \\
        --broker kafka --load 12.5 --date "2026-11-29 07:10" --commit abc1234

``add`` records a RESULT line measured elsewhere (a helper's report, a run on another
machine) as if run_all.py had: the way to add a row by hand. A bench not in :data:`BENCHES`
still gets a row, under its own name.
"""

from __future__ import annotations

import argparse
import datetime as dt
import html
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import RESULT_LINE as RESULT  # noqa: E402

ROOT = HERE.parent
RESULTS = HERE / "results"
DOC = ROOT / "docs" / "benchmarks.md"
SVG = ROOT / "docs" / "images" / "benchmarks.svg"
START, END = "<!-- summary:start -->", "<!-- summary:end -->"
BROKERS = ("kafka", "embedded", "external", "none")
"""The record folders, in the order of preference for the table's main columns."""


@dataclass(frozen=True)
class Info:
    """What a bench's RESULT line measures: the row's name, the baseline's name, the unit,
    and for the chart the runtime the baseline is (None: not charted)."""

    what: str
    baseline: str
    unit: str = "rec/s"
    chart: str | None = None


RAW = "raw client"
HAND = "hand-rolled loop"
KC = "Kafka Connect"
QUIX = "Quix Streams"

BENCHES: dict[str, Info] = {
    "bench_source": Info("Source task, 100 B records, batch", "raw producer loop", chart=RAW),
    "bench_source_list": Info("Source task, `SourceRecord` list", "raw producer loop", chart=RAW),
    "bench_sink": Info("Sink task, no-op `put()`, values column", "raw consume loop", chart=RAW),
    "bench_sink_records": Info("Sink task iterating `SinkRecord`s", "raw consume loop", chart=RAW),
    "bench_file_pipeline": Info(
        "file → Kafka → file, JsonConverter", "hand-rolled orjson loop", "lines/s", chart=HAND
    ),
    "bench_file_pipeline_deploy": Info(
        "file pipeline, `deploy/` defaults", "hand-rolled orjson loop", "lines/s", chart=HAND
    ),
    "bench_vs_kafka_connect_source_string": Info("FileStreamSource, StringConverter", KC, chart=KC),
    "bench_vs_kafka_connect_source_json": Info("FileStreamSource, JsonConverter", KC, chart=KC),
    "bench_vs_kafka_connect_sink_string": Info("FileStreamSink, StringConverter", KC, chart=KC),
    "bench_vs_kafka_connect_sink_json": Info("FileStreamSink, JsonConverter", KC, chart=KC),
    "bench_vs_kafka_connect": Info("FileStream, 4 cases (geometric mean)", KC),
    "bench_avro": Info("Avro pass-through, source + sink", "fastavro loops", chart=HAND),
    "bench_memory": Info("4 busy tasks under the memory budget", "budget off"),
    "bench_transforms": Info("3-SMT chain, end to end", "no chain"),
    "bench_rest": Info("REST API", "(see details)", "req/s"),
    "bench_rest_blocked": Info(
        "`GET /connectors` while a plugin's `start()` blocks", "nothing blocked", "req/s"
    ),
    "bench_schema_formats": Info("Protobuf converter", "Avro converter"),
    "bench_jdbc_sink": Info("JDBC sink `put()`, SQLite", "`executemany`", "rows/s"),
    "bench_jdbc_source": Info("JDBC source `poll()`", "raw SELECT", "rows/s"),
    "bench_tap": Info("Sink with a record inspector open", "nobody watching"),
    "bench_objectstore": Info("Object storage sink, Parquet", "hand-written pyarrow loop"),
    "bench_processes": Info("2 task processes, CPU-bound", "1 task"),
    "bench_spark": Info("Spark executor backend", "threaded worker"),
    "bench_spark_connect": Info("Spark Connect backend", "threaded worker"),
    "bench_spark_bridge": Info("Spark bridge read", "raw consume"),
    "bench_e2e_latency": Info("FileStream pipeline at a paced rate", "rate asked for"),
    "bench_tracing": Info("Tracing at 1%, Jaeger on the same cores", "tracing off"),
    "bench_tracing_all": Info("Tracing at 100%, Jaeger on the same cores", "tracing off"),
    "bench_tracing_runtime": Info(
        "Tracing at 1%, the runtime's own cost (no backend ingest)", "tracing off"
    ),
    "bench_tracing_runtime_all": Info(
        "Tracing at 100%, the runtime's own cost (no backend ingest)", "tracing off"
    ),
    "bench_tracing_transforms": Info(
        "Tracing at 1%, two transformations, Jaeger on the same cores", "tracing off"
    ),
    "bench_tracing_transforms_all": Info(
        "Tracing at 100%, two transformations, Jaeger on the same cores", "tracing off"
    ),
    "bench_tracing_transforms_runtime": Info(
        "Tracing at 1%, two transformations, the runtime's own cost", "tracing off"
    ),
    "bench_tracing_transforms_runtime_all": Info(
        "Tracing at 100%, two transformations, the runtime's own cost", "tracing off"
    ),
    "bench_tracing_source": Info(
        "Source list, tracing at 1%, Jaeger on the same cores", "tracing off"
    ),
    "bench_tracing_source_all": Info("Source list, tracing at 100%, Jaeger", "tracing off"),
    "bench_tracing_source_runtime": Info(
        "Source list, tracing at 1%, the runtime's own cost", "tracing off"
    ),
    "bench_tracing_source_runtime_all": Info(
        "Source list, tracing at 100%, the runtime's own cost", "tracing off"
    ),
    "bench_share_group": Info("Share group, 4 slow tasks", "consumer group"),
    "compare_postgres_cdc": Info("PostgreSQL CDC, snapshot + streaming", "Debezium 3.6.1"),
    "bench_json_vs_kafka_connect": Info(
        "JsonConverter writes, slowest case", "Kafka Connect's JsonConverter", "rec/s", chart=None
    ),
}


def info(bench: str) -> Info:
    """The bench's :class:`Info`; a bench not listed gets its own name."""
    return BENCHES.get(bench) or Info(bench, "baseline")


# -- records ------------------------------------------------------------------------------------


def load_records(folder: Path = RESULTS) -> dict[str, dict[str, dict[str, Any]]]:
    """bench -> broker -> record, every ``<broker>/<bench>.json`` under ``folder``."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for path in sorted(folder.glob("*/*.json")):
        data = json.loads(path.read_text("utf-8"))
        out.setdefault(str(data["bench"]), {})[path.parent.name] = data
    return out


def add(
    line: str,
    broker: str,
    load: str,
    date: str,
    commit: str,
    *,
    folder: Path,
    also: dict[str, float] | None = None,
    figures: dict[str, float] | None = None,
    source: str = "reported",
) -> Path:
    """Record a RESULT ``line`` measured elsewhere (see the module docstring)."""
    m = RESULT.match(line.strip())
    if m is None:
        raise SystemExit(f"not a RESULT line: {line!r}")
    if broker not in BROKERS:
        raise SystemExit(f"--broker must be one of {', '.join(BROKERS)}")

    def num(text: str) -> float | None:
        return None if text == "nan" else float(text)

    ratio = num(m["ratio"])
    low, _, high = load.partition("-")
    data = {
        "bench": m["bench"],
        "connectrt": num(m["connectrt"]),
        "baseline": num(m["baseline"]),
        "ratio": ratio,
        "broker": broker,
        "date": date,
        "commit": commit,
        "load": [float(low), float(high or low), float(high or low)],
        "machine": source,
        "shortest_window_s": None,
        "also": also or {},
        "figures": figures or {},
    }
    path = folder / broker / f"{m['bench']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", "utf-8")
    return path


# -- the table ----------------------------------------------------------------------------------


def _rate(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    if x >= 1_000_000:
        return f"{x / 1e6:.2f}M"
    if x >= 10_000:
        return f"{x / 1000:,.0f}k"
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _load(rec: dict[str, Any]) -> str:
    lo = rec.get("load") or []
    if not lo:
        return "?"
    start, end = lo[0], lo[1] if len(lo) > 1 else lo[0]
    return f"{start:.1f}" if start == end else f"{min(start, end):.1f}-{max(start, end):.1f}"


def _malloc(rec: dict[str, Any]) -> str:
    """The allocator a record's run used: the machine line names it since 2026-11-30
    (``malloc libmimalloc.so``, ``malloc system``); before, every bench ran with glibc's."""
    machine = str(rec.get("machine") or "")
    _, found, rest = machine.partition("malloc ")
    name = rest.split(",")[0].strip() if found else "system"
    if name == "system":
        return "glibc"
    return name.removeprefix("lib").split(".so")[0]


def main_record(by_broker: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The record of the table's main columns: Apache Kafka's, else the first there is."""
    return next(by_broker[b] for b in (*BROKERS, *by_broker) if b in by_broker)


def table(records: dict[str, dict[str, dict[str, Any]]]) -> str:
    """The markdown table, a row per bench in :data:`BENCHES`' order, then the others."""
    order = [b for b in BENCHES if b in records] + sorted(set(records) - set(BENCHES))
    lines = [
        "| Path | connectrt | Baseline (same run) | Ratio | Ratio, embedded broker "
        "| Broker | malloc | Date (UTC) | Load | Commit |",
        "|---|--:|---|--:|--:|---|---|---|--:|---|",
    ]
    for bench in order:
        by = records[bench]
        rec = main_record(by)
        i = info(bench)
        emb = by.get("embedded") if rec.get("broker") != "embedded" else None
        second = (
            f"{_ratio(emb.get('ratio'))} ({emb.get('date', '')[:10]}, load {_load(emb)})"
            if emb
            else "-"
        )
        unit = f" {i.unit}"
        also = "".join(
            f"; {name} {_rate(v)}" for name, v in sorted((rec.get("also") or {}).items())
        )
        fig = rec.get("figures") or {}
        if "cpu_us_connectrt" in fig and "cpu_us_kc" in fig:
            also += (
                f"; CPU per record {fig['cpu_us_connectrt']:.2f} us vs {fig['cpu_us_kc']:.2f} us "
                f"(**{fig['cpu_us_connectrt'] / fig['cpu_us_kc']:.2f}**)"
            )
        lines.append(
            f"| {i.what} (`{bench}`) | {_rate(rec.get('connectrt'))}{unit} "
            f"| {i.baseline}: {_rate(rec.get('baseline'))}{also} "
            f"| **{_ratio(rec.get('ratio'))}** | {second} "
            f"| {rec.get('broker')} | {_malloc(rec)} | {rec.get('date')} | {_load(rec)} "
            f"| {rec.get('commit')} |"
        )
    return "\n".join(lines)


# -- the chart ----------------------------------------------------------------------------------

COLOURS = {
    "connectrt": "#2b6cb0",
    KC: "#c05621",
    RAW: "#718096",
    HAND: "#a0aec0",
    QUIX: "#6b46c1",
}


def chart_rows(
    records: dict[str, dict[str, dict[str, Any]]],
) -> list[tuple[str, list[tuple[str, float]]]]:
    """(path, [(runtime, rec/s), ...]) for each charted bench with figures."""
    rows = []
    for bench, i in BENCHES.items():
        if i.chart is None or bench not in records:
            continue
        main = main_record(records[bench])
        shown = [main]
        if not main.get("also"):  # another broker's run that has more runtimes (Quix Streams)
            shown += [r for r in records[bench].values() if r is not main and r.get("also")]
        for rec in shown:
            bars: list[tuple[str, float]] = []
            for runtime, value in (
                ("connectrt", rec.get("connectrt")),
                (i.chart, rec.get("baseline")),
                *sorted((rec.get("also") or {}).items()),
            ):
                if value is not None and math.isfinite(value) and value > 0:
                    bars.append((runtime, float(value)))
            if bars:
                what = i.what.replace("`", "")
                day = str(rec.get("date", ""))[:10]
                rows.append((f"{what} [{rec.get('broker')}, {day}, load {_load(rec)}]", bars))
    return rows


def svg(rows: list[tuple[str, list[tuple[str, float]]]], title: str) -> str:
    """A horizontal bar chart: a group per path, a bar per runtime, all on one linear scale
    of records per second, each bar labelled with its figure."""
    label_w, bar_w, bar_h, gap, pad = 490, 380, 14, 12, 10
    width = label_w + bar_w + 90
    top = 46
    n_bars = sum(len(b) for _, b in rows)
    height = top + n_bars * bar_h + len(rows) * gap + 40
    peak = max((v for _, bars in rows for _, v in bars), default=1.0)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{pad}" y="18" font-size="14" font-weight="bold">{html.escape(title)}</text>',
    ]
    x = pad
    for runtime, colour in COLOURS.items():  # the legend
        out.append(f'<rect x="{x}" y="28" width="10" height="10" fill="{colour}"/>')
        out.append(f'<text x="{x + 14}" y="37">{html.escape(runtime)}</text>')
        x += 14 + 7 * len(runtime) + 18
    y = top
    for path, bars in rows:
        mid = y + len(bars) * bar_h / 2 + 4
        out.append(
            f'<text x="{label_w - 8}" y="{mid:.0f}" text-anchor="end">{html.escape(path)}</text>'
        )
        for runtime, value in bars:
            w = max(1.0, bar_w * value / peak)
            colour = COLOURS.get(runtime, "#999999")
            out.append(
                f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h - 2}" '
                f'fill="{colour}"><title>{html.escape(runtime)}: {value:,.0f}/s</title></rect>'
            )
            out.append(
                f'<text x="{label_w + w + 4:.1f}" y="{y + bar_h - 4}">{_rate(value)}/s</text>'
            )
            y += bar_h
        y += gap
    out.append(
        f'<text x="{pad}" y="{height - 12}" fill="#555">Records (lines) per second, median of '
        "rotating rounds; each path's bars come from one run. bench/summary.py draws this.</text>"
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


# -- the docs -----------------------------------------------------------------------------------


def render_doc(doc: str, records: dict[str, dict[str, dict[str, Any]]]) -> str:
    """``doc`` with the table between the markers replaced."""
    if START not in doc or END not in doc:
        raise SystemExit(f"{DOC.name}: no {START} ... {END} markers")
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{table(records)}\n{END}{tail}"


def render_svg(records: dict[str, dict[str, dict[str, Any]]]) -> str:
    return svg(chart_rows(records), "Throughput per path and runtime (higher is better)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--results", default=str(RESULTS), help="the records' folder")
    ap.add_argument("--write", action="store_true", help="rewrite the docs table and the SVG")
    ap.add_argument("--check", action="store_true", help="exit 1 when the docs are stale")
    sub = ap.add_subparsers(dest="command")
    a = sub.add_parser("add", help="record a RESULT line measured elsewhere")
    a.add_argument("line")
    a.add_argument("--broker", default="kafka", choices=BROKERS)
    a.add_argument(
        "--load",
        required=True,
        help="the 1-minute load average then: one figure, or START-END of the run",
    )
    a.add_argument(
        "--date",
        default=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M"),
        help="UTC, YYYY-MM-DD HH:MM (default: now)",
    )
    a.add_argument("--commit", required=True)
    a.add_argument(
        "--also",
        action="append",
        default=[],
        help="RUNTIME=rate of another runtime in the same run (e.g. 'Quix Streams=44200')",
    )
    a.add_argument(
        "--figure",
        action="append",
        default=[],
        help="NAME=value of a detail kept with the record (e.g. cpu_us_connectrt=3.6)",
    )
    a.add_argument("--source", default="reported", help="where the figure comes from")
    args = ap.parse_args(argv)
    folder = Path(args.results)
    if args.command == "add":
        also = {k: float(v) for k, v in (x.rsplit("=", 1) for x in args.also)}
        figures = {k: float(v) for k, v in (x.rsplit("=", 1) for x in args.figure)}
        path = add(
            args.line,
            args.broker,
            args.load,
            args.date,
            args.commit,
            folder=folder,
            also=also,
            figures=figures,
            source=args.source,
        )
        print(path)
        return 0
    records = load_records(folder)
    if not (args.check or args.write):
        print(table(records))
        return 0
    doc, picture = render_doc(DOC.read_text("utf-8"), records), render_svg(records)
    if args.check:
        stale = [
            p.name
            for p, text in ((DOC, doc), (SVG, picture))
            if not p.exists() or p.read_text("utf-8") != text
        ]
        if stale:
            print(f"stale: {', '.join(stale)}; run python bench/summary.py --write")
            return 1
        return 0
    DOC.write_text(doc, "utf-8")
    SVG.write_text(picture, "utf-8")
    print(f"wrote {DOC.relative_to(ROOT)} and {SVG.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
