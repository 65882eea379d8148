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


def _is_result_call(node: ast.AST, stem: str) -> bool:
    """``c.result("<stem>", ...)`` (or ``c.emit``), or ``print(f"RESULT <stem> ...")``."""
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
    """Any call that prints a RESULT line (a result/emit call, or a print of "RESULT ...")."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in RESULT_CALLS:
        return True
    return any(
        isinstance(c, ast.Constant) and isinstance(c.value, str) and "RESULT " in c.value
        for arg in node.args
        for c in ast.walk(arg)
    )


def _last_statement(block: list[ast.stmt]) -> ast.stmt:
    """The last statement of ``block``, looking into a final ``if`` without ``else``."""
    last = block[-1]
    if isinstance(last, ast.If) and not last.orelse:
        return _last_statement(last.body)
    return last


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
    last = _last_statement(main.body)
    assert isinstance(last, ast.Expr) and _is_result_call(last.value, script.stem), (
        f"the __main__ block ends with c.result({script.stem!r}, ...)"
    )
    # Nothing else prints a RESULT line.
    printers = [n for n in ast.walk(tree) if _prints_result(n)]
    assert printers == [last.value]


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
