"""tune_gc: raises the young-generation threshold only, never lowers it or re-enables GC."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from connectrt.runtime.executors.gc_tuning import YOUNG_THRESHOLD, tune_gc


@pytest.fixture(autouse=True)
def restore_threshold() -> Iterator[None]:
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


def test_raises_default_young_threshold_and_keeps_older_ones() -> None:
    gc.set_threshold(700, 7, 9)
    tune_gc()
    assert gc.get_threshold() == (YOUNG_THRESHOLD, 7, 9)
    tune_gc()  # idempotent
    assert gc.get_threshold() == (YOUNG_THRESHOLD, 7, 9)


def test_keeps_a_larger_threshold() -> None:
    gc.set_threshold(YOUNG_THRESHOLD * 5, 10, 10)
    tune_gc()
    assert gc.get_threshold() == (YOUNG_THRESHOLD * 5, 10, 10)


def test_threshold_zero_stays_zero() -> None:
    gc.set_threshold(0, 10, 10)  # automatic collection off: not turned back on
    tune_gc()
    assert gc.get_threshold()[0] == 0
