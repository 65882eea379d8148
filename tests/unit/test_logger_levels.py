"""LoggerLevels on its own: Kafka's /admin/loggers semantics without a worker."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from connectrt.errors import NotFoundError
from connectrt.runtime.errors import BadRequestError
from connectrt.runtime.herder.loggers import LoggerLevels

PARENT = "connectrt_test_logger_levels"


@pytest.fixture
def loggers() -> Iterator[LoggerLevels]:
    child = logging.getLogger(f"{PARENT}.child")
    yield LoggerLevels()
    for logger in (logging.getLogger(PARENT), child):
        logger.setLevel(logging.NOTSET)


def test_a_name_sets_its_descendants_and_remembers_when(loggers: LoggerLevels):
    logging.getLogger(f"{PARENT}.child").setLevel(logging.INFO)
    assert loggers.set_level(PARENT, "error") == [PARENT, f"{PARENT}.child"]
    child = loggers.level(f"{PARENT}.child")
    assert child["level"] == "ERROR"
    assert isinstance(child["last_modified"], int)
    levels = loggers.all_levels()
    assert levels[PARENT]["level"] == "ERROR"
    assert "root" in levels


def test_a_level_already_in_force_changes_nothing(loggers: LoggerLevels):
    """Kafka's answer lists only the loggers whose level changed, and stamps only those."""
    assert loggers.set_level(PARENT, "error") == [PARENT, f"{PARENT}.child"]
    assert loggers.set_level(PARENT, "ERROR") == []
    logging.getLogger(f"{PARENT}.child").setLevel(logging.INFO)
    assert loggers.set_level(PARENT, "error") == [f"{PARENT}.child"]
    untouched = logging.getLogger().getEffectiveLevel()
    level_name = logging.getLevelName(untouched)
    assert loggers.set_level("root", level_name) == []
    assert loggers.level("root")["last_modified"] is None


def test_kafka_level_names(loggers: LoggerLevels):
    loggers.set_level(PARENT, "TRACE")
    assert loggers.level(PARENT)["level"] == "DEBUG"
    loggers.set_level(PARENT, "FATAL")
    assert loggers.level(PARENT)["level"] == "CRITICAL"


def test_unknown_loggers_and_levels(loggers: LoggerLevels):
    with pytest.raises(NotFoundError, match="Logger no_such_logger_anywhere not found"):
        loggers.level("no_such_logger_anywhere")
    with pytest.raises(NotFoundError, match="invalid log level 'LOUD'"):
        loggers.set_level(PARENT, "LOUD")
    assert loggers.level("root")["last_modified"] is None


def test_new_logger_names_are_bounded_in_length_and_number():
    levels = LoggerLevels(max_created=5)
    base = "connectrt_test_logger_cap"
    try:
        with pytest.raises(BadRequestError, match="at most 256"):
            levels.set_level(base + "x" * 300, "INFO")
        assert levels.set_level(f"{base}.a", "INFO") == [f"{base}.a"]  # 2 new: base, base.a
        levels.set_level(f"{base}.b", "INFO")
        levels.set_level(f"{base}.c", "INFO")
        levels.set_level(f"{base}.d", "INFO")  # the fifth new entry
        with pytest.raises(BadRequestError, match="5 this API may create"):
            levels.set_level(f"{base}.e", "INFO")
        assert f"{base}.e" not in logging.root.manager.loggerDict
        # Existing loggers stay settable, and a level on the parent reaches the children.
        assert levels.set_level(base, "WARN") == [base, *(f"{base}.{c}" for c in "abcd")]
    finally:
        for name in [base, *(f"{base}.{c}" for c in "abcd")]:
            logging.getLogger(name).setLevel(logging.NOTSET)


def test_unknown_levels_are_not_found():
    with pytest.raises(NotFoundError, match="invalid log level"):
        LoggerLevels().set_level("root", "LOUD")
