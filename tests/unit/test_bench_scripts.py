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
RESULT_CALLS = {"result", "emit"}  # _common.result(bench, connectrt, baseline); emit: older form


@pytest.fixture(scope="module")
def common() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        import _common

        return _common
    finally:
        sys.path.remove(str(BENCH))


def _result_call(node: ast.stmt) -> ast.Call | None:
    """``c.result(...)``/``c.emit(...)`` as a statement, or as the body of an ``if``."""
    if isinstance(node, ast.If) and len(node.body) == 1 and not node.orelse:
        node = node.body[0]
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr in RESULT_CALLS
            and isinstance(func.value, ast.Name)
            and func.value.id == "c"
        ):
            return node.value
    return None


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
    call = _result_call(main.body[-1])
    assert call is not None, "the __main__ block ends with c.result(...)"
    name = call.args[0] if call.args else None
    assert isinstance(name, ast.Constant) and name.value == script.stem
    # Nothing else prints a RESULT line: one call in the whole script, no literal RESULT text.
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in RESULT_CALLS
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == "c"
    ]
    assert calls == [call]
    literals = [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and "RESULT " in n.value
    ]
    assert all(not s.lstrip("\"'f").startswith("RESULT ") for s in literals)


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


def test_emit_takes_raw_or_baseline(common: ModuleType, capsys: pytest.CaptureFixture[str]):
    common.emit("bench_z", {"connectrt": 3.0, "raw": 4.0, "ratio": 0.75, "other": 1.0})
    common.emit("bench_z", {"connectrt": 3.0, "baseline": 6.0})
    assert capsys.readouterr().out.splitlines() == [
        "RESULT bench_z connectrt=3 baseline=4 ratio=0.750",
        "RESULT bench_z connectrt=3 baseline=6 ratio=0.500",
    ]


@pytest.mark.parametrize("sides", [("a", "b"), ("a", "b", "c")])
def test_rotation_puts_each_side_first_equally_often(common: ModuleType, sides: tuple[str, ...]):
    rounds = [common.rotated(sides, r) for r in range(len(sides) * 2)]
    assert all(sorted(order) == sorted(sides) for order in rounds)
    assert Counter(order[0] for order in rounds) == {s: 2 for s in sides}
    assert Counter(order[-1] for order in rounds) == {s: 2 for s in sides}
