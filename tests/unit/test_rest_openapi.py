"""The OpenAPI document the REST app serves: every route documented (bodies, models, errors);
the JSON the models render (``of(...).wire()``) valid for them and in Kafka Connect's key
order; the request models' ``read`` as lenient as Kafka Connect, with its messages."""

from __future__ import annotations

from typing import Any, cast

import pytest

from connectrt.api.config import ConfigDef, ConfigType
from connectrt.rest import models
from connectrt.rest.app import create_app
from connectrt.rest.config_limits import ConfigLimits
from connectrt.runtime.errors import BadRequestError
from connectrt.runtime.herder.info import ConnectorInfo, ConnectorStateInfo, StateInfo

DOC = create_app(cast(Any, None)).openapi()


def test_every_route_is_documented() -> None:
    """A route without ``@documented`` keeps FastAPI's own document: no 401, a 422."""
    served = [(method, path) for path, ops in DOC["paths"].items() for method in ops]
    assert len(served) >= 34
    for path, ops in DOC["paths"].items():
        for method, op in ops.items():
            assert {"401", "500"} <= set(op["responses"]), (method, path)


def test_bodies_success_models_and_errors() -> None:
    create = DOC["paths"]["/connectors"]["post"]
    assert create["requestBody"]["required"] is True
    ref = create["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert ref.endswith("/CreateConnectorRequest")
    assert sorted(create["responses"]) == [
        "201",
        "400",
        "401",
        "403",
        "408",
        "409",
        "413",
        "415",
        "500",
        "503",
    ]
    assert create["responses"]["201"]["headers"]["Location"]["required"] is True
    gated = DOC["paths"]["/connectors/{connector}/status"]["get"]["responses"]
    assert gated["503"]["headers"]["Retry-After"]
    assert "404" in gated and "400" not in gated
    metrics = DOC["paths"]["/metrics"]["get"]["responses"]["200"]["content"]
    assert list(metrics) == ["text/plain"]
    schemas = DOC["components"]["schemas"]
    assert "HTTPValidationError" not in schemas
    assert schemas["CreateConnectorRequest"]["required"] == ["name", "config"]
    for path, ops in DOC["paths"].items():
        for method, op in ops.items():
            assert "422" not in op["responses"], (method, path)
            for status, response in op["responses"].items():
                if status.startswith("2"):
                    continue
                ref = response["content"]["application/json"]["schema"]["$ref"]
                # /health answers 500 and 503 with its own body (KIP-1017), not an error body.
                expected = "/Health" if path == "/health" and status in ("500", "503") else ""
                assert ref.endswith(expected or "/ErrorBody"), (method, path, status)


def test_wire_shapes_validate_against_the_models() -> None:
    info = ConnectorInfo("c", {"connector.class": "X", "password": "[hidden]"}, [0, 1], "sink")
    models.ConnectorInfo.model_validate(models.ConnectorInfo.of(info).wire())
    failed = StateInfo("FAILED", "w:8083", "Traceback ...", restarts=2)
    state = ConnectorStateInfo("c", StateInfo("RUNNING", "w:8083"), [(0, failed)], "sink")
    wired = models.ConnectorStateInfo.of(state).wire()
    parsed = models.ConnectorStateInfo.model_validate(wired)
    assert parsed.tasks[0].trace == "Traceback ..." and parsed.tasks[0].restarts == 2
    key = ConfigDef().define("secret", ConfigType.PASSWORD, "x").keys["secret"]
    models.ConfigKeyInfo.model_validate(models.ConfigKeyInfo.of(key).wire())


def test_wire_keys_only_when_set_and_in_kafka_order() -> None:
    everything = StateInfo(
        "RUNNING", "w:8083", "trace", restarts=3, version="1.0", stalled_call="put", pid=7
    )
    order = ["state", "worker_id", "trace", "version", "restarts", "stalled", "stalled_call"]
    task = models.TaskState.of(4, everything).wire()
    assert list(task) == ["id", *order, "pid"]
    assert task["id"] == 4 and task["stalled"] is True and task["pid"] == 7
    assert list(models.ConnectorState.of(everything).wire()) == [*order, "pid"]
    assert models.TaskState.of(0, StateInfo("RUNNING", "w:8083", restarts=0)).wire() == {
        "id": 0,
        "state": "RUNNING",
        "worker_id": "w:8083",
    }
    created = ConnectorInfo("c", {}, [0], "source", offsets_status="done")
    assert list(models.ConnectorInfo.of(created).wire()) == [
        "name",
        "config",
        "tasks",
        "type",
        "offsets_status",
    ]
    plain = models.ConnectorInfo.of(ConnectorInfo("c", {}, [0], "source")).wire()
    assert plain["tasks"] == [{"connector": "c", "task": 0}] and "offsets_status" not in plain


def test_create_request_reads_leniently_with_kafka_messages() -> None:
    body = models.CreateConnectorRequest.read(
        {"config": {"name": " n ", "tasks.max": 2, "flag": True}, "initial_state": "BOGUS"},
        ConfigLimits(),
    )
    assert body.name == "n" and body.config == {"name": " n ", "tasks.max": "2", "flag": "true"}
    assert body.initial_state == "BOGUS"  # the herder's to check, with its own message
    for raw, message in [
        ([], "Request body must be a JSON object"),
        ({"name": " "}, "Connector name is required"),
        ({"name": "n", "config": {"a": [1]}}, "Configuration value for 'a' must be a string"),
        ({"name": "n", "initial_state": 1}, "initial_state must be a string"),
    ]:
        with pytest.raises(BadRequestError) as raised:
            models.CreateConnectorRequest.read(raw, ConfigLimits())
        assert str(raised.value) == message
