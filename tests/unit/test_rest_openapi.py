"""The OpenAPI document the REST app serves: every route documented (bodies, models, errors),
and the document valid for the models the wire functions produce."""

from __future__ import annotations

from typing import Any, cast

from connectrt.api.config import ConfigDef, ConfigType
from connectrt.rest import models, wire
from connectrt.rest.app import create_app
from connectrt.rest.openapi import OPERATIONS
from connectrt.runtime.herder.info import ConnectorInfo, ConnectorStateInfo, StateInfo

DOC = create_app(cast(Any, None)).openapi()


def test_every_route_has_an_entry_and_every_entry_a_route() -> None:
    served = {(method, path) for path, ops in DOC["paths"].items() for method in ops}
    assert served == set(OPERATIONS)


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
    models.ConnectorInfo.model_validate(wire.connector_info(info))
    failed = StateInfo("FAILED", "w:8083", "Traceback ...", restarts=2)
    state = ConnectorStateInfo("c", StateInfo("RUNNING", "w:8083"), [(0, failed)], "sink")
    parsed = models.ConnectorStateInfo.model_validate(wire.connector_state_info(state))
    assert parsed.tasks[0].trace == "Traceback ..." and parsed.tasks[0].restarts == 2
    key = ConfigDef().define("secret", ConfigType.PASSWORD, "x").keys["secret"]
    models.ConfigKeyInfo.model_validate(wire.config_key_info(key))
