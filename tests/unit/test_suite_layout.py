"""The suite's own layout: every test module has a basename of its own.

The test directories are not packages of their own to pytest's default import mode, so two
modules with one basename (say ``unit/test_x.py`` and ``integration/test_x.py``) make the whole
run stop at collection, while running either directory alone passes. This catches that before a
full run does.
"""

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


def test_no_two_test_modules_share_a_basename() -> None:
    names = Counter(path.name for path in TESTS.rglob("test_*.py"))
    assert names["test_suite_layout.py"] == 1  # the walk sees this very file
    shared = sorted(name for name, count in names.items() if count > 1)
    assert shared == [], f"test modules sharing a basename (rename one of each): {shared}"
