"""How the task error handler reads a converter's SchemaDriftError (``schema.drift``), over
the in-memory Kafka: ``dlq`` is tolerated whatever ``errors.tolerance`` says and written with
the drift headers; ``fail`` fails the task even under ``errors.tolerance=all`` and writes
nothing to the DLQ; ``dlq`` without a DLQ topic fails the task rather than drop the record."""

from __future__ import annotations

import pytest

from connectrt.api.records import SourceRecord
from connectrt.converters.schema_drift import (
    DRIFT_FIELDS_HEADER,
    DRIFT_SUBJECT_HEADER,
    FieldChange,
    SchemaDriftError,
)
from connectrt.runtime.tasks.error_handling import ToleranceExceeded
from connectrt.runtime.tasks.runner import TaskStage
from tests.unit.test_dlq_writer import DLQ, Cluster, _fail

RECORD = SourceRecord(source_partition={"t": "a"}, source_offset={"i": 4}, topic="t", value=4)


def drift(policy: str) -> SchemaDriftError:
    return SchemaDriftError(
        policy, "t-value", "BACKWARD", 3, (FieldChange("qty", "int", "string"),), ("m",)
    )


def test_dlq_drift_is_dead_lettered_with_its_headers_under_tolerance_none() -> None:
    cluster = Cluster()
    handler = cluster.handler(tolerate_all=False, dlq_replication_factor=1)
    ok, _ = handler.call(TaskStage.VALUE_CONVERTER, "c.Conv", _fail(drift("dlq")), record=RECORD)
    assert not ok
    handler.flush()
    [written] = cluster.kafka.records(DLQ)
    headers = dict(written.headers() or [])
    assert headers[DRIFT_SUBJECT_HEADER] == b"t-value"
    assert headers[DRIFT_FIELDS_HEADER] == b"qty"


def test_fail_drift_fails_the_task_under_tolerance_all_and_writes_nothing() -> None:
    cluster = Cluster()
    handler = cluster.handler(tolerate_all=True, dlq_replication_factor=1)
    with pytest.raises(ToleranceExceeded, match="Schema drift: task") as info:
        handler.call(TaskStage.VALUE_CONVERTER, "c.Conv", _fail(drift("fail")), record=RECORD)
    assert "qty changed (int -> string)" in str(info.value)
    handler.flush()
    assert cluster.kafka.records(DLQ) == []


def test_dlq_drift_without_a_dlq_topic_fails_the_task() -> None:
    cluster = Cluster()
    handler = cluster.handler(tolerate_all=True, dlq_topic="")
    with pytest.raises(
        ToleranceExceeded, match=r"schema\.drift=dlq needs errors\.deadletterqueue\.topic\.name"
    ):
        handler.call(TaskStage.VALUE_CONVERTER, "c.Conv", _fail(drift("dlq")), record=RECORD)
