"""The benchmark scripts' contract, checked without running them (no timings here): every
``bench/bench_*.py`` ends by printing one ``RESULT <bench> connectrt=<rec/s> baseline=<rec/s>
ratio=<x>`` line through ``_common`` and takes ``--broker``, run_all.py runs every one of them,
and the shared helpers format that line and rotate round orders as the scripts rely on. One
integration test runs a quick bench through run_all.py on the session's test broker."""

from __future__ import annotations

import ast
import math
import os
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCRIPTS = sorted(BENCH.glob("bench_*.py"))
RESULT_CALLS = {"result"}  # _common.result(bench, connectrt, baseline)


@pytest.fixture(scope="module")
def common() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        import _common

        return _common
    finally:
        sys.path.remove(str(BENCH))


def _is_variant_pair(variant: ast.expr, plain: ast.expr, stem: str) -> bool:
    """``variant`` is the literal ``"<stem>_<something>"`` and ``plain`` the literal stem."""
    return (
        isinstance(variant, ast.Constant)
        and isinstance(plain, ast.Constant)
        and plain.value == stem
        and str(variant.value).startswith(f"{stem}_")
    )


def _is_result_call(node: ast.AST, stem: str) -> bool:
    """``c.result("<stem>", ...)`` (or ``c.result("<stem>_<variant>" if ... else "<stem>", ...)``,
    variants chained, for a variant measured as a row of its own), or ``print(f"RESULT <stem>
    connectrt=...")``."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    first = node.args[0] if node.args else None
    if (
        isinstance(func, ast.Attribute)
        and func.attr in RESULT_CALLS
        and isinstance(func.value, ast.Name)
        and func.value.id == "c"
    ):
        while isinstance(first, ast.IfExp):  # "<stem>_<variant>" if ... else "<stem>"
            if isinstance(first.orelse, ast.IfExp):  # ... else "<stem>_<other>" if ... else
                if not _is_variant_pair(first.body, ast.Constant(stem), stem):
                    return False
                first = first.orelse
                continue
            return _is_variant_pair(first.body, first.orelse, stem)
        return isinstance(first, ast.Constant) and first.value == stem
    if isinstance(func, ast.Name) and func.id == "print" and isinstance(first, ast.JoinedStr):
        head = first.values[0] if first.values else None
        return isinstance(head, ast.Constant) and str(head.value).startswith(
            f"RESULT {stem} connectrt="
        )
    return False


def _prints_result(node: ast.AST) -> bool:
    """Any call that prints a RESULT line: ``c.result(...)``, or ``print`` of a string that
    starts with ``RESULT ``."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in RESULT_CALLS:
        return True
    if not (isinstance(func, ast.Name) and func.id == "print" and node.args):
        return False
    first = node.args[0]
    if isinstance(first, ast.JoinedStr):
        first = first.values[0] if first.values else first
    return isinstance(first, ast.Constant) and str(first.value).startswith("RESULT ")


def _last_statement(block: list[ast.stmt]) -> ast.stmt:
    """The last statement of ``block``, looking into a final ``if`` without ``else``."""
    last = block[-1]
    if isinstance(last, ast.If) and not last.orelse:
        return _last_statement(last.body)
    return last


def _ending_statements(tree: ast.Module, main: ast.If) -> list[ast.stmt]:
    """Where a script's output ends: the last statement of its ``__main__`` block, and (for a
    block that only runs ``main()``) the last statement of ``main`` before a final return."""
    ends = [_last_statement(main.body)]
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "main":
            body = node.body[:-1] if isinstance(node.body[-1], ast.Return) else node.body
            ends.append(_last_statement(body))
    return ends


def _main_block(tree: ast.Module) -> ast.If:
    for node in tree.body:
        if (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name)
            and node.test.left.id == "__name__"
        ):
            return node
    raise AssertionError("no `if __name__ == '__main__':` block")


def test_there_are_bench_scripts():
    assert len(SCRIPTS) >= 10


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_each_script_ends_with_its_result_line(script: Path):
    tree = ast.parse(script.read_text(encoding="utf-8"))
    main = _main_block(tree)
    assert tree.body[-1] is main, "the __main__ block is the script's last statement"
    printers = [n for n in ast.walk(tree) if _prints_result(n)]
    assert len(printers) == 1, "exactly one place prints a RESULT line"
    (printer,) = printers
    assert _is_result_call(printer, script.stem), f"it prints RESULT {script.stem} ..."
    ends = _ending_statements(tree, main)
    assert any(isinstance(e, ast.Expr) and e.value is printer for e in ends), (
        "the RESULT line is the script's last output"
    )


def test_run_all_runs_every_script():
    tree = ast.parse((BENCH / "run_all.py").read_text(encoding="utf-8"))
    listed = {
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("bench_")
    }
    variants = {
        key.value
        for n in ast.walk(tree)
        if isinstance(n, ast.AnnAssign)
        and isinstance(n.target, ast.Name)
        and n.target.id == "VARIANTS"
        and isinstance(n.value, ast.Dict)
        for key in n.value.keys
        if isinstance(key, ast.Constant)
    }
    assert variants  # the record-at-a-time rows (a script run again with a setting)
    scripts = {s.stem for s in SCRIPTS}
    assert listed - variants == scripts  # every script, and every variant names a real one


def test_result_line_format(common: ModuleType, capsys: pytest.CaptureFixture[str]):
    common.result("bench_x", 123456.7, 234567.1)
    out = capsys.readouterr().out
    assert out == "RESULT bench_x connectrt=123457 baseline=234567 ratio=0.526\n"
    m = common.RESULT_LINE.match(out.rstrip("\n"))
    assert m is not None
    assert float(m["ratio"]) == pytest.approx(123456.7 / 234567.1, abs=5e-4)


@pytest.mark.parametrize(
    ("connectrt", "baseline", "shown"),
    [
        (1.0, 2.0, "connectrt=1 baseline=2 ratio=0.500"),
        (5.0, 0.0, "connectrt=5 baseline=0 ratio=nan"),
        (math.nan, 10.0, "connectrt=nan baseline=10 ratio=nan"),
    ],
)
def test_result_line_with_missing_figures(
    common: ModuleType, connectrt: float, baseline: float, shown: str
):
    line = common.format_result("bench_y", connectrt, baseline)
    assert line == f"RESULT bench_y {shown}"
    assert common.RESULT_LINE.match(line)


@pytest.mark.parametrize("sides", [("a", "b"), ("a", "b", "c")])
def test_rotation_puts_each_side_first_equally_often(common: ModuleType, sides: tuple[str, ...]):
    rounds = [common.rotated(sides, r) for r in range(len(sides) * 2)]
    assert all(sorted(order) == sorted(sides) for order in rounds)
    assert Counter(order[0] for order in rounds) == {s: 2 for s in sides}
    assert Counter(order[-1] for order in rounds) == {s: 2 for s in sides}


def _calls_add_broker_option(tree: ast.Module) -> bool:
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "add_broker_option"
        for n in ast.walk(tree)
    )


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_each_script_takes_the_broker_choice(script: Path):
    text = script.read_text(encoding="utf-8")
    assert _calls_add_broker_option(ast.parse(text)), "--broker comes from _common"
    assert "EmbeddedBroker(" not in text, "the broker is opened through _common.open_broker"


def test_broker_option_defaults_to_the_environment(
    common: ModuleType, monkeypatch: pytest.MonkeyPatch
):
    import argparse

    def parsed(*argv: str) -> str:
        ap = argparse.ArgumentParser()
        common.add_broker_option(ap)
        return str(ap.parse_args(list(argv)).broker)

    monkeypatch.delenv(common.BROKER_ENV, raising=False)
    assert parsed() == common.default_broker()  # kafka where Java is present, else embedded
    monkeypatch.setenv(common.BROKER_ENV, "kafka")
    assert parsed() == "kafka"
    assert parsed("--broker", "127.0.0.1:9092") == "127.0.0.1:9092"
    assert "127.0.0.1:9092" in common.broker_label("127.0.0.1:9092")
    assert "Apache Kafka" in common.broker_label("kafka")
    assert common.topic("x") == f"x-{common.RUN}"


@pytest.mark.integration
def test_a_quick_bench_runs_on_the_test_broker(broker: Any, common: ModuleType, tmp_path: Path):
    """run_all.py --quick --only bench_source --broker HOST:PORT against the session broker
    (whichever CONNECTRT_TEST_BROKER chose): the bench's topics appear there, created by the
    bench with one partition, holding every record it produced, and the summary names that
    broker above the RESULT line."""
    from confluent_kafka.admin import AdminClient

    run = f"t{uuid.uuid4().hex[:8]}"
    env = {**os.environ, common.RUN_ENV: run}
    env.pop(common.BROKER_ENV, None)
    bootstrap = broker.bootstrap_servers
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH / "run_all.py"),
            "--quick",
            "--only",
            "bench_source",
            "--broker",
            bootstrap,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=BENCH.parent,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = proc.stdout.split("===== summary", 1)[1].splitlines()
    assert (
        summary[1].strip()
        == f"broker: external broker at {bootstrap} (not started or stopped here)"
    )
    (line,) = [s.strip() for s in summary if s.strip().startswith("RESULT ")]
    m = common.RESULT_LINE.match(line)
    assert m is not None and m["bench"] == "bench_source"
    assert float(m["connectrt"]) > 0 and float(m["baseline"]) > 0

    meta = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30)
    # The raw loop's warm-up record goes to its own topic, the task's to a topic of its own.
    expected = {
        f"raw-out-0-{run}": 100_001,
        f"crt-out-0-{run}": 100_000,
        f"crt-out-0-{run}-warmup": 1,
    }
    for name, records in expected.items():
        assert len(meta.topics[name].partitions) == 1, name
        assert _count_records(bootstrap, name) == records, name


def _count_records(bootstrap: str, topic: str) -> int:
    """Records in partition 0 of ``topic``, read to partition EOF (the embedded broker's
    ListOffsets answer for the end is wrong, so no watermark query)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-check-{uuid.uuid4().hex[:8]}",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    count = 0
    try:
        for _ in range(600):  # at most ~120 s of empty polls
            for msg in consumer.consume(5000, 0.2):
                error = msg.error()
                if error is None:
                    count += 1
                elif error.code() == KafkaError._PARTITION_EOF:
                    return count
                else:
                    raise AssertionError(f"{topic}: {error}")
        raise AssertionError(f"{topic}: no end of partition after {count} records")
    finally:
        consumer.close()


def test_the_quix_side_imports_only_what_its_environment_has():
    """bench_file_pipeline.py runs quix_pipeline_side.py in ``.venv-quix`` (``make
    bench-quix-env``), which holds quixstreams and orjson only: no connectrt, no bench module."""
    tree = ast.parse((BENCH / "quix_pipeline_side.py").read_text(encoding="utf-8"))
    imported = {
        (alias.name if isinstance(node, ast.Import) else str(node.module)).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    assert "quixstreams" in imported
    assert imported - {"quixstreams", "orjson"} <= set(sys.stdlib_module_names)


# -- the method (issue 34 item 5), as far as a static check can see it --------------------------

ONE_SIDE = {
    # Measured against a figure, not against another side run in the same rounds.
    "bench_e2e_latency": "paced at a rate; the RESULT compares the rate kept with the rate asked",
}
NO_THROUGHPUT_WINDOW = {
    "bench_rest": "latency percentiles of request loops, not a throughput window",
}
READ_ONLY_INPUTS = {
    # A module-level topic a script pre-fills once and every round only reads (reading does
    # not fill the broker); a topic a round writes is made per round.
    "bench_objectstore": {"TOPIC"},
    "bench_spark_bridge": {"TOPIC", "SINK_TOPIC"},
    "bench_sink": {"TOPIC"},
    "bench_tracing": {"TOPIC"},
}


def _calls_c(tree: ast.Module, name: str) -> bool:
    """Whether the script calls ``c.<name>(...)`` (``_common`` imported as ``c``)."""
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == name
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == "c"
        for n in ast.walk(tree)
    )


ROTATING = [s for s in SCRIPTS if s.stem not in ONE_SIDE]
WINDOWED = [s for s in SCRIPTS if s.stem not in NO_THROUGHPUT_WINDOW]


def test_the_exemptions_name_existing_scripts():
    """The scripts the two rules below leave out exist (a renamed script does not slip out
    of them unseen)."""
    stems = {s.stem for s in SCRIPTS}
    assert set(ONE_SIDE) | set(NO_THROUGHPUT_WINDOW) <= stems


@pytest.mark.parametrize("script", ROTATING, ids=[s.stem for s in ROTATING])
def test_each_script_rotates_its_rounds_through_the_shared_helper(script: Path):
    """The round order comes from ``_common.rotated``, so every side goes first equally often
    (no hand-made alternation that a third side would break). Scripts in :data:`ONE_SIDE`
    measure one side against a figure and have no order to rotate."""
    assert _calls_c(ast.parse(script.read_text(encoding="utf-8")), "rotated")


@pytest.mark.parametrize("script", WINDOWED, ids=[s.stem for s in WINDOWED])
def test_each_script_notes_its_measurement_windows(script: Path):
    """Every timed window goes through ``_common.window``, so a window under 5 s is flagged
    above the RESULT line and in the recorded result. Scripts in
    :data:`NO_THROUGHPUT_WINDOW` time requests, not a throughput window."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    assert _calls_c(tree, "window"), "c.window(seconds) around each side's clock"


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_topics_written_by_rounds_are_made_per_round(script: Path):
    """A topic named once at module level (``X = c.topic(...)``) is shared by every round: only
    pre-filled inputs that rounds only read may be."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    shared = {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Attribute)
        and node.value.func.attr == "topic"
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    assert shared <= READ_ONLY_INPUTS.get(script.stem, set())


def test_the_default_broker_is_apache_kafka_where_java_is(
    common: ModuleType, monkeypatch: pytest.MonkeyPatch
):
    from connectrt.testing.broker_choice import default_test_broker

    monkeypatch.delenv(common.BROKER_ENV, raising=False)
    assert common.default_broker() == default_test_broker()
    monkeypatch.setenv(common.BROKER_ENV, "embedded")
    assert common.default_broker() == "embedded"


def test_sized_volumes_shrink_only_on_the_embedded_broker(common: ModuleType):
    assert common.sized(None, "kafka", 1000, 10, "x") == 1000
    assert common.sized(None, "127.0.0.1:9092", 1000, 10, "x") == 1000
    assert common.sized(None, "embedded", 1000, 10, "x") == 10
    assert common.sized(7, "embedded", 1000, 10, "x") == 7


def test_a_result_is_recorded_with_its_circumstances(
    common: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
):
    """With CONNECTRT_BENCH_RESULTS set, the RESULT line is kept as JSON under the broker's
    folder with the date, the commit, the load average and the shortest window; a window
    under 5 s is flagged in the output above the RESULT line, which stays last."""
    import json

    monkeypatch.setenv(common.RESULTS_ENV, str(tmp_path))
    monkeypatch.setattr(common, "_windows", [])
    monkeypatch.setattr(common, "_broker_choice", "kafka")
    common.window(7.5)
    common.window(0.8)
    common.also("bench_z", "Quix Streams", 50.0)
    common.emit("bench_z", {"cpu_us": 1.5})
    common.result("bench_z", 200.0, 100.0)
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "RESULT bench_z connectrt=200 baseline=100 ratio=2.000"
    assert "SHORT: 1 below 5 s" in out[-2]
    data = json.loads((tmp_path / "kafka" / "bench_z.json").read_text())
    assert data["ratio"] == 2.0 and data["connectrt"] == 200.0 and data["baseline"] == 100.0
    assert data["shortest_window_s"] == 0.8
    assert data["also"] == {"Quix Streams": 50.0}
    assert data["figures"] == {"cpu_us": 1.5}
    assert len(data["load"]) == 3 and data["commit"] and data["date"].startswith("20")


# -- the summary table and chart ----------------------------------------------------------------


@pytest.fixture(scope="module")
def summary(common: ModuleType) -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        import summary

        return summary
    finally:
        sys.path.remove(str(BENCH))


def test_summary_renders_added_rows_as_table_and_chart(summary: ModuleType, tmp_path: Path):
    """``summary.py add`` records a reported RESULT line; the table gets its row (with the
    embedded broker's ratio as the second column) and the chart a bar per runtime."""
    import xml.etree.ElementTree as ET

    line = "RESULT bench_vs_kafka_connect_sink_json connectrt=500000 baseline=400000 ratio=1.250"
    args = ["--results", str(tmp_path), "add", line, "--load", "12.5", "--commit", "abc1234"]
    assert summary.main(args) == 0
    args = ["--results", str(tmp_path), "add", line.replace("1.250", "0.900"), "--load", "3"]
    assert summary.main([*args, "--broker", "embedded", "--commit", "abc1234"]) == 0
    records = summary.load_records(tmp_path)
    table = summary.table(records)
    (row,) = [r for r in table.splitlines() if "sink_json" in r]
    assert "| **1.25** | 0.90 (20" in row and "| kafka |" in row and "| 12.5 |" in row
    assert "| kafka | glibc |" in row  # the allocator: no machine line names another
    picture = summary.render_svg(records)
    root = ET.fromstring(picture)
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert titles == ["connectrt: 500,000/s", "Kafka Connect: 400,000/s"]
    with pytest.raises(SystemExit):
        summary.main(["--results", str(tmp_path), "add", "RESULT nope", "--load", "1"])


def test_docs_summary_matches_the_recorded_results(summary: ModuleType):
    """docs/benchmarks.md's table and docs/images/benchmarks.svg are what ``python
    bench/summary.py --write`` makes of bench/results (run it after recording a result)."""
    assert summary.main(["--check"]) == 0
