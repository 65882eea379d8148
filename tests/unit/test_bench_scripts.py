"""The benchmark scripts' contract, checked without running them (no timings here): every
``bench/bench_*.py`` ends by printing one ``RESULT <bench> connectrt=<rec/s> baseline=<rec/s>
ratio=<x>`` line through ``_common``, run_all.py runs every one of them, and the shared helpers
format that line and rotate round orders as the scripts rely on."""

from __future__ import annotations

import ast
import math
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

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
