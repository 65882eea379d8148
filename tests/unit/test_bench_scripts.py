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


def _is_result_call(node: ast.AST, stem: str) -> bool:
    """``c.result("<stem>", ...)``, or ``print(f"RESULT <stem> connectrt=...")``."""
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
    if not printers and script.stem == "bench_sink":
        pytest.xfail("bench_sink.py belongs to issue 15's sink side, which adds its RESULT line")
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
    assert listed == {s.stem for s in SCRIPTS}


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
    assert parsed() == "embedded"
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
