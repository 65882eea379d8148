"""Schemathesis against the OpenAPI schema a running worker serves: no operation may answer 5xx,
and every answer must conform to the document (status code, content type, body schema, headers).

A real worker (``start_rest_worker``: Kafka-backed configs and status on the session broker)
serves the API; schemathesis (4.x) loads its ``/openapi.json`` and, for every operation (one
pytest test each, collected from the app's routes), runs the schema's explicit examples, then
:data:`MAX_EXAMPLES` generated cases mixing positive (schema-valid) and negative (schema-
violating) data, with the :data:`CHECKS`: ``not_a_server_error`` (Kafka Connect's API answers
client mistakes with 4xx, so any 5xx is a bug) and the response-conformance checks (every
status code documented for its operation, the documented content type, the body valid against
the documented model, documented headers present). A failure prints schemathesis' curl
reproducer. One operation is left out of the fuzzing (not of the schema checks): the record
inspector's stream (:data:`ENDLESS`), which by design ends only when its client goes (the
fuzzer reads whole answers); ``test_record_tap.py`` covers its answers. Nothing else is
excluded: the fuzzer may create, reconfigure, pause, stop, rewind and
delete connectors.

Why not ``@schemathesis.pytest.from_fixture(...).parametrize()``: with schemathesis 4.32.5 and
pytest 9.2 it fails before running anything (it sets ``request.node._nodeid``, which pytest 9.2
no longer has). The same generation is driven here through the public
``APIOperation.as_strategy`` / ``get_strategies_from_examples`` and ``Case.call_and_validate``.

The served schema is used as it is for the checks. For generation only, two things are
narrowed (the served document stays what clients see):

* request bodies: the app documents every body it reads (``connectrt.rest.openapi``), and
  :func:`test_served_schema_documents_every_body` checks that; for generation the fuzzer uses
  :data:`BODIES` instead, the same shapes narrowed to FileStream configs, so that positive cases
  really create and start connectors and negative mode produces wrong types, missing keys and
  non-objects; :data:`BODY_EXAMPLES` are fixed cases;
* path examples: ``{connector}`` and ``{plugin}`` get the names of two connectors (re)created
  before each operation's run and :data:`PLUGIN_NAMES`, so operations on existing connectors
  and plugins are reached (a random string only ever gives a 404).

Every phase and every check: :func:`test_all_phases_and_checks_on_valid_data` and
:func:`test_all_phases_and_checks_on_invalid_data` run schemathesis' own runner (``st run``:
examples, coverage, fuzzing and stateful phases, ``--checks all``, including
``positive_data_acceptance`` and ``negative_data_rejection``) and require 0 failures: positive
data from the narrowed bodies (the served document cannot say which configs a plugin accepts),
negative data from the document as served. The few operations where Kafka Connect answers a
valid request 400 because of the connector's state are listed in :data:`STATEFUL_400`.

The worker runs with the current directory set to a temporary one, so a fuzzed FileStream
connector with a relative ``file`` writes there and not into the checkout. Generation is
derandomized (the same cases every run; ``CONNECTRT_FUZZ_RANDOM=1`` explores new ones).
Bounded: ~2-3 minutes for the module on 2 cores.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from connectrt.rest.app import create_app
from connectrt.testing.rest import RestWorker, start_rest_worker, wait_for

pytestmark = pytest.mark.integration

MAX_EXAMPLES = 25
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]
# The same cases every run (CI must not flake on a newly drawn bug); CONNECTRT_FUZZ_RANDOM=1
# draws new ones, to explore locally.
RANDOM = os.environ.get("CONNECTRT_FUZZ_RANDOM", "") not in ("", "0")

SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
# Class names a request may carry: real plugins (so configs validate and connectors start) and
# names that are no plugin (a relative module, a missing one): those must give a 4xx.
PLUGINS = [SOURCE, SINK, "FileStreamSource", "FileStreamSink"]
PLUGIN_NAMES = [*PLUGINS, ".rel.Mod", "no.such.Mod"]
EXISTING = ["fuzz-source", "fuzz-sink"]

_TOPIC = {"type": "string", "pattern": "^[a-zA-Z0-9._-]{1,30}$"}
_NAME = {
    "anyOf": [
        {"type": "string", "pattern": "^[a-z][a-z0-9-]{0,20}$"},
        {"type": "string", "minLength": 1, "maxLength": 1024, "pattern": "\\S"},
    ]
}
# Positive cases are valid FileStream configs (with random extra keys), so connectors really
# get created and started; negative cases break one constraint at a time.
_CONNECTOR_CONFIG = {
    "type": "object",
    "properties": {
        "connector.class": {"type": "string", "enum": PLUGINS},
        "tasks.max": {"type": "string", "pattern": "^[1-3]$"},
        "topic": _TOPIC,
        "topics": _TOPIC,
        "file": {"type": "string", "pattern": "^[a-z]{1,10}[.]txt$"},
    },
    # Both topic keys: a source ignores "topics", a sink "topic". "file" keeps a source from
    # reading the worker's stdin.
    "required": ["connector.class", "topic", "topics", "file"],
    "additionalProperties": {"type": "string"},
}
_NULLABLE_STRING_MAP = {
    "type": "object",
    "additionalProperties": {"anyOf": [{"type": "string"}, {"type": "null"}]},
}
_OFFSETS = {
    "type": "object",
    "properties": {
        "offsets": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "partition": {"type": "object"},
                    "offset": {"anyOf": [{"type": "object"}, {"type": "null"}]},
                },
                "required": ["partition", "offset"],
            },
        }
    },
    "required": ["offsets"],
}

# (method, path) -> JSON schema of the body the handler reads (Kafka Connect's documented shape).
BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("post", "/connectors"): {
        "type": "object",
        "properties": {
            "name": _NAME,
            "config": _CONNECTOR_CONFIG,
            "initial_state": {"type": "string", "enum": ["RUNNING", "PAUSED", "STOPPED"]},
        },
        "required": ["name", "config"],
    },
    ("put", "/connectors/{connector}/config"): _CONNECTOR_CONFIG,
    ("patch", "/connectors/{connector}/config"): _NULLABLE_STRING_MAP,
    ("patch", "/connectors/{connector}/offsets"): _OFFSETS,
    ("post", "/connectors/{connector}/offsets/reset"): {
        "type": "object",
        "properties": {
            "to": {"type": "string", "enum": ["earliest", "latest", "timestamp", "offset"]},
            "timestamp": {"type": "string", "format": "date-time"},
            "offset": {"type": "integer"},
            "topic": {"type": "string"},
        },
        "required": ["to"],
    },
    # connector.class defaults to the path's plugin (one that differs is a 400, as in Kafka).
    ("put", "/connector-plugins/{plugin}/config/validate"): _NULLABLE_STRING_MAP,
}
# Explicit cases run every time (schemathesis' examples phase), beside the generated ones: a
# valid config under a name outside Latin-1 (HTTP headers such as Location are Latin-1).
_VALID_SOURCE = {"connector.class": "FileStreamSource", "file": "ex.txt", "topic": "ex-topic"}
BODY_EXAMPLES: dict[tuple[str, str], list[Any]] = {
    ("post", "/connectors"): [{"name": "ex-\u023e-source", "config": _VALID_SOURCE}],
    ("put", "/connectors/{connector}/config"): [_VALID_SOURCE],
}
PATH_EXAMPLES = {"connector": [*EXISTING, "ex-\u023e-put"], "plugin": PLUGIN_NAMES}


def enrich(served: dict[str, Any]) -> dict[str, Any]:
    """The served schema with its request bodies narrowed to :data:`BODIES` (with
    :data:`BODY_EXAMPLES`) and :data:`PATH_EXAMPLES` where it has none."""
    doc = copy.deepcopy(served)
    paths = doc["paths"]
    for (method, path), body in BODIES.items():
        # A missing operation is a KeyError here: the table must follow the app's routes.
        op = paths[path][method]
        media: dict[str, Any] = {"schema": body}
        examples = BODY_EXAMPLES.get((method, path))
        if examples:
            media["examples"] = {f"ex{i}": {"value": v} for i, v in enumerate(examples)}
        required = op.get("requestBody", {}).get("required", True)
        op["requestBody"] = {"required": required, "content": {"application/json": media}}
    for ops in paths.values():
        for op in ops.values():
            for param in op.get("parameters", []):
                names = PATH_EXAMPLES.get(param["name"])
                if param["in"] == "path" and names and "examples" not in param:
                    param["examples"] = {n: {"value": n} for n in names}
    return doc


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-cwd")


@pytest.fixture(scope="module")
def fuzz_worker(broker: Any, fuzz_dir: Path) -> Iterator[RestWorker]:
    workdir = fuzz_dir
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workdir)
        worker = start_rest_worker(broker.bootstrap_servers)
        try:
            _create_existing(worker, workdir)
            yield worker
        finally:
            worker.stop()


EXISTING_CONFIGS = {
    EXISTING[0]: {"connector.class": SOURCE, "file": "in.txt", "topic": "fuzz-topic"},
    EXISTING[1]: {"connector.class": SINK, "file": "out.txt", "topics": "fuzz-topic"},
}


def _create_existing(worker: RestWorker, workdir: Path) -> None:
    """Make sure the two known connectors exist, with their original configs, not paused or
    stopped (an earlier operation may have deleted, reconfigured or paused them). Only what
    changed is redone: replacing a sink's config restarts it, which takes seconds."""
    (workdir / "in.txt").write_text("a\nb\n")
    for name, config in EXISTING_CONFIGS.items():
        current = worker.http.get(f"/connectors/{name}/config")
        if current.status_code != 200 or current.json() != {**config, "name": name}:
            r = worker.http.put(f"/connectors/{name}/config", json=config)
            assert r.status_code in (200, 201), r.text
        state = worker.http.get(f"/connectors/{name}/status").json()["connector"]["state"]
        if state in ("PAUSED", "STOPPED"):
            r = worker.http.put(f"/connectors/{name}/resume")
            assert r.status_code == 202, r.text
        elif state == "FAILED":
            r = worker.http.post(f"/connectors/{name}/restart", params={"includeTasks": "true"})
            assert r.status_code in (202, 204), r.text
    for name in EXISTING:
        wait_for(
            lambda n=name: (
                worker.http.get(f"/connectors/{n}/status").json()["connector"]["state"] == "RUNNING"
            ),
            60,
            f"{name} RUNNING",
        )


@pytest.fixture(autouse=True)
def remove_fuzzed_connectors(fuzz_worker: RestWorker) -> Iterator[None]:
    """The connectors an operation's cases created are deleted after it (the two known ones
    are kept and repaired by the next operation): they would otherwise pile up, running
    tasks and consumer groups under every later operation."""
    yield
    fuzz_worker.delete_connectors(keep=EXISTING)


@pytest.fixture(scope="module")
def api_schema(fuzz_worker: RestWorker) -> Any:
    served = fuzz_worker.http.get("/openapi.json")
    assert served.status_code == 200, served.text
    return schemathesis.openapi.from_dict(enrich(served.json()))


@pytest.fixture(scope="module")
def http_session() -> Iterator[requests.Session]:
    with requests.Session() as s:
        yield s


def _app_operations() -> list[str]:
    """``METHOD /path`` of every route, from the app itself (no worker needed to collect)."""
    doc = create_app(cast(Any, None)).openapi()
    return [f"{m.upper()} {p}" for p, ops in doc["paths"].items() for m in ops]


OPERATIONS = _app_operations()
# Server-sent event streams: open until the client goes (the fuzzer waits for a whole answer).
ENDLESS = ("GET", "/connectors/{connector}/tap")
FUZZED = [label for label in OPERATIONS if label != " ".join(ENDLESS)]


def _without_endless(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without the :data:`ENDLESS` operation (for schemathesis' own runner)."""
    schema = copy.deepcopy(schema)
    method, path = ENDLESS
    del schema["paths"][path][method.lower()]
    if not schema["paths"][path]:
        del schema["paths"][path]
    return schema


def test_served_schema_has_every_operation(api_schema: Any) -> None:
    """Nothing is skipped silently: every route is a fuzz test below, and the served (enriched)
    schema loads each one without a schema error."""
    served = {}
    for result in api_schema.get_all_operations():
        op = result.ok()  # raises on an operation schemathesis cannot load
        served[op.label] = op
    assert sorted(served) == sorted(OPERATIONS)
    assert len(OPERATIONS) >= 30
    assert served["POST /connectors"].body, "request body not attached"


def test_served_schema_documents_every_body(fuzz_worker: RestWorker) -> None:
    """The app itself documents each body it reads, required where the server requires one,
    and every operation's error answers with Kafka Connect's error body."""
    served = fuzz_worker.http.get("/openapi.json").json()
    optional: set[tuple[str, str]] = set()
    for method, path in BODIES:
        body = served["paths"][path][method].get("requestBody")
        assert body is not None, f"{method.upper()} {path} documents no request body"
        assert body["required"] is ((method, path) not in optional), (method, path)
    for path, ops in served["paths"].items():
        for method, op in ops.items():
            responses = op["responses"]
            assert "422" not in responses, f"{method.upper()} {path}: 422 is never answered"
            assert "500" in responses and "401" in responses, (method, path)
            ok = [s for s in responses if s.startswith("2")]
            assert ok, (method, path)
            error = responses["401"]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/ErrorBody"}


@pytest.mark.parametrize("method", ["TRACE", "CONNECT", "BREW"])
def test_unsupported_methods_answer_405_with_allow(fuzz_worker: RestWorker, method: str) -> None:
    """Every path answers a method it does not serve with 405, Kafka Connect's error body and
    an ``Allow`` header listing exactly the methods the document gives that path."""
    served = fuzz_worker.http.get("/openapi.json").json()
    for path, ops in served["paths"].items():
        url = path.replace("{connector}", EXISTING[0]).replace("{task}", "0")
        url = url.replace("{plugin}", "FileStreamSource").replace("{name}", "root")
        response = fuzz_worker.http.request(method, url)
        assert response.status_code == 405, (method, path, response.status_code)
        assert response.json() == {"error_code": 405, "message": "HTTP 405 Method Not Allowed"}
        allowed = {m.strip() for m in response.headers["allow"].split(",")}
        assert allowed == {m.upper() for m in ops}, (path, allowed)


@pytest.mark.parametrize("label", FUZZED)
def test_no_server_errors(
    label: str,
    api_schema: Any,
    fuzz_worker: RestWorker,
    fuzz_dir: Path,
    http_session: requests.Session,
) -> None:
    _create_existing(fuzz_worker, fuzz_dir)  # an earlier operation may have deleted them
    op = next(r.ok() for r in api_schema.get_all_operations() if r.ok().label == label)

    def run(strategy: Any, max_examples: int) -> None:
        @given(case=strategy)
        @settings(
            max_examples=max_examples,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
            derandomize=not RANDOM,
        )
        def check(case: Any) -> None:
            case.call_and_validate(
                base_url=fuzz_worker.url,
                session=http_session,
                checks=CHECKS,
                timeout=30,
            )

        check()

    # 1. every explicit example (path and body examples), each on its own so none is left out.
    for strategy in op.get_strategies_from_examples():
        run(strategy, 3)
    # 2. generated cases, half schema-valid, half schema-violating.
    run(
        st.one_of(op.as_strategy(GenerationMode.POSITIVE), op.as_strategy(GenerationMode.NEGATIVE)),
        MAX_EXAMPLES,
    )


# -- every phase and every check, through schemathesis' own runner ----------------------------
PHASES = "examples,coverage,fuzzing,stateful"
CLI_MAX_EXAMPLES = 10


# Operations whose success depends on the connector's state or type, where Kafka Connect answers
# a valid request 400: offsets change only while the connector is STOPPED, a source rewinds
# only to earliest, a replay needs a dead letter queue. For these, positive_data_acceptance
# also accepts 400 (any other status it refuses, as everywhere).
STATEFUL_400 = [
    ("PATCH", "/connectors/{connector}/offsets"),
    ("DELETE", "/connectors/{connector}/offsets"),
    ("POST", "/connectors/{connector}/offsets/reset"),
    ("POST", "/connectors/{connector}/dlq/replay"),
]
# Two GETs that the stateful phase would hold to its resource rules, which Kafka Connect's API
# does not follow. GET .../dlq/replay reports a replay run, which creating a connector does not
# start (404 until one is started): the phase infers a link from POST /connectors's Location to
# it and expects the replay to exist (ST302). GET .../topics answers 200 with no topics for a
# connector that does not exist (or no longer does), as Kafka Connect answers, where the phase
# expects a 404 after the DELETE (ST301). Per-operation settings do not reach the stateful
# phase, so the positive run leaves these out; the negative run and test_no_server_errors still
# cover them.
OUTSIDE_THE_STATEFUL_RULES = (
    ("get", "/connectors/{connector}/dlq/replay"),
    ("get", "/connectors/{connector}/topics"),
)


def _cli_config() -> str:
    """The schemathesis.toml for :func:`_run_cli`."""
    lines = []
    for method, path in STATEFUL_400:
        lines += [
            "[[operations]]",
            f'include-method = "{method}"',
            f'include-path = "{path}"',
            'checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "404", "409"]',
            "",
        ]
    return "\n".join(lines)


def _run_cli(worker: RestWorker, schema: dict[str, Any], mode: str, where: Path) -> None:
    """``st run`` (schemathesis' CLI) on ``schema`` against ``worker``: all phases, all checks,
    ``mode`` data; fails with the CLI's report unless it found nothing."""
    path = where / f"schema-{mode}.json"
    path.write_text(json.dumps(schema))
    config = where / "schemathesis.toml"
    config.write_text(_cli_config())
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "--config-file",
        str(config),
        "run",
        str(path),
        "--url",
        worker.url,
        "--phases",
        PHASES,
        "--checks",
        "all",
        "--mode",
        mode,
        "--max-examples",
        str(CLI_MAX_EXAMPLES),
        "--request-timeout",
        "30",
        "--workers",
        "1",
        "--suppress-health-check",
        "all",
        "--no-color",
    ]
    if not RANDOM:
        command += ["--seed", "1", "--generation-deterministic"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=where)
    report = result.stdout[-20000:] + result.stderr[-5000:]
    print(report[-3000:])
    assert result.returncode == 0, report


def test_all_phases_and_checks_on_valid_data(fuzz_worker: RestWorker, fuzz_dir: Path) -> None:
    """Positive data from the narrowed bodies (configs a plugin accepts: the served document
    cannot say which those are) and the served parameters: every check, including
    ``positive_data_acceptance`` (valid data must not get 400)."""
    _create_existing(fuzz_worker, fuzz_dir)
    schema = enrich(fuzz_worker.http.get("/openapi.json").json())
    for method, path in OUTSIDE_THE_STATEFUL_RULES:
        del schema["paths"][path][method]
    _run_cli(fuzz_worker, _without_endless(schema), "positive", fuzz_dir)


def test_all_phases_and_checks_on_invalid_data(fuzz_worker: RestWorker, fuzz_dir: Path) -> None:
    """Negative data from the document as served: every check, including
    ``negative_data_rejection`` (what the document forbids must get a 4xx)."""
    _create_existing(fuzz_worker, fuzz_dir)
    served = fuzz_worker.http.get("/openapi.json").json()
    _run_cli(fuzz_worker, _without_endless(served), "negative", fuzz_dir)
