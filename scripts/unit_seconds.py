"""Write ``tests/unit_seconds.json``: how long each xdist unit of the suite took, read from the
``--durations=0`` report of a run (``make test PYTEST_ARGS=--durations=0 > run.log``).

The suite's scheduler (``tests/conftest.py``) hands the longest units out first, so that a long
module does not start last and keep one process busy after the others are done. Only the order
matters: figures from a loaded machine serve as well as quiet ones. Units under
``--min-seconds`` are left out (they keep their tier's order, after the listed ones).

Usage: ``python scripts/unit_seconds.py run.log [--min-seconds 20]``
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import unit_of  # noqa: E402

_PHASE = re.compile(r"\s*([\d.]+)s (?:call|setup|teardown)\s+(\S+)")


def unit_seconds(report: str) -> dict[str, float]:
    """The seconds of each unit: its tests' setup, call and teardown phases added up."""
    seconds: dict[str, float] = {}
    for line in report.splitlines():
        match = _PHASE.match(line)
        if match:
            unit = unit_of(match.group(2))
            seconds[unit] = seconds.get(unit, 0.0) + float(match.group(1))
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--min-seconds", type=float, default=20.0)
    args = parser.parse_args()
    seconds = unit_seconds(args.log.read_text("utf-8", errors="replace"))
    if not seconds:
        sys.exit(f"{args.log}: no --durations=0 report in it")
    ranked = sorted(seconds.items(), key=lambda kv: -kv[1])
    kept = {u: round(s) for u, s in ranked if s >= args.min_seconds}
    out = ROOT / "tests" / "unit_seconds.json"
    out.write_text(json.dumps(kept, indent=1) + "\n", "utf-8")
    print(f"{out.relative_to(ROOT)}: {len(kept)} units of {len(seconds)}")


if __name__ == "__main__":
    main()
