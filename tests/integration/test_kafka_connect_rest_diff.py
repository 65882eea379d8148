"""connectrt's REST API against Kafka Connect 4.4's own, answer for answer.

One Kafka Connect JVM (distributed mode, :mod:`connectrt.testing.kafka_connect`) and one
connectrt worker run on the session's Apache Kafka broker; the scenarios of
:mod:`tests.kafka_connect_rest_support` (lifecycle, pause/stop/resume, restart, the offsets API,
validate, plugins, loggers, topics, not-found and bad-request paths) are replayed against both,
and the normalised status codes and bodies compared step by step.

Every step that differs must be listed in ``DELIBERATE`` with its reason; a listed step that no
longer differs fails too. The results are the committed
``tests/integration/kafka_connect_rest_results.json``, from which the generated section of
``docs/reference/kafka-connect-compatibility.md`` is rendered (``tests/unit/test_kafka_connect_
compat_page.py`` checks the page against the file): a run whose results differ from the file
fails. ``CONNECTRT_UPDATE_REST_DIFF=1`` rewrites both instead.

Needs the Apache Kafka broker (``CONNECTRT_TEST_BROKER=kafka``) and a JDK 17+ (javac).
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.errors import ConnectError
from connectrt.testing.broker_choice import SessionBroker
from connectrt.testing.java_runtime import JavaUnavailable
from connectrt.testing.kafka_connect import KAFKA_CONNECT_VERSION, KafkaConnect
from connectrt.testing.rest import RestWorker, start_rest_worker
from tests.kafka_connect_rest_support import (
    PAGE,
    RESULTS,
    SCENARIOS,
    Side,
    compare,
    render_section,
    run_scenario,
    write_page_section,
)

pytestmark = [pytest.mark.integration, pytest.mark.java]

UPDATE = os.environ.get("CONNECTRT_UPDATE_REST_DIFF") == "1"

#: Every step whose answers differ, with the reason the difference is kept.
DELIBERATE: dict[str, str] = {
    "lifecycle: POST /connectors": (
        "By design: Kafka's distributed herder answers a create before the connector has "
        'generated tasks (`"tasks": []`); connectrt starts the connector within the request '
        "and lists its tasks."
    ),
    "lifecycle: PUT /connectors/X-new/config": (
        "As for a create: connectrt lists the tasks it has already generated."
    ),
    "pause-stop-resume: POST /connectors": (
        "As for a create: connectrt lists the tasks it has already generated."
    ),
    "restart: POST /connectors": (
        "As for a create: connectrt lists the tasks it has already generated."
    ),
    "restart: POST /connectors #2": (
        "As for a create: connectrt lists the tasks it has already generated."
    ),
    "offsets: POST /connectors": (
        "As for a create: connectrt lists the tasks it has already generated."
    ),
    "offsets: POST /connectors #2": (
        "As for a create: connectrt lists the tasks it has already generated."
    ),
    "pause-stop-resume: GET /connectors/X-paused/status": (
        "Kafka reports the plugin version of a connector it has not started; connectrt "
        "reports a version only for a Connector object it has instantiated (KIP-891 leaves it"
        " out when undefined)."
    ),
    "pause-stop-resume: GET /connectors/X-stopped/status": (
        "As above: no Connector object runs while STOPPED, so connectrt has no version to report."
    ),
    "pause-stop-resume: POST /connectors #4": (
        "Kafka answers 500 with its JSON mapper's error for an unknown `initial_state`; "
        "connectrt answers 400 naming the value (a client error is a 4xx)."
    ),
    "restart: GET /connectors/X-snk/status": (
        "The failed task's trace: the first line is the exception and its message on both "
        "sides, but the exception is each runtime's own "
        "(`org.apache.kafka.connect.errors.ConnectException` vs "
        "`connectrt.errors.ConnectError`) and connectrt's message adds the OS error."
    ),
    "restart: GET /connectors/X-snk/tasks/0/status": (
        "The same trace as in the connector's status (each runtime's own exception class and "
        "message)."
    ),
    "restart: POST /connectors/X-snk/restart?onlyFailed=true": (
        "The same trace, kept in the plan (each runtime's own exception class and message)."
    ),
    "restart: POST /connectors/X-snk/restart?includeTasks=true&onlyFailed=true": (
        "The same trace, kept in the plan (each runtime's own exception class and message)."
    ),
    "offsets: PATCH /connectors/X-src/offsets #5": (
        "Kafka answers 500 when the FileStream source refuses an offset (its `alterOffsets` "
        "throws); connectrt answers 400 with the connector's reason: the request is at fault,"
        " not the server."
    ),
    "offsets: PATCH /connectors/X-src/offsets #6": (
        "As above, for a partition without `filename`: 400 in connectrt, 500 in Kafka."
    ),
    "offsets: PATCH /connectors/X-snk/offsets #2": (
        "Both 400; connectrt's message names the missing integer `kafka_partition` where "
        "Kafka names both required keys."
    ),
    "offsets: PATCH /connectors/X-none/offsets": (
        "Kafka checks the body before the connector (400 for an empty list); connectrt checks"
        " that the connector exists first (404)."
    ),
    "validate: PUT /connector-plugins/FileStreamSource/config/validate": (
        "The validate answer's groups and keys are each runtime's own: connectrt's FileStream"
        " source defines keys of its own, lists the `topic.creation.default.*` keys and names"
        " the exactly-once group after `offsets.storage.topic`, and echoes undefined keys "
        "with a null definition."
    ),
    "validate: PUT /connector-plugins/FileStreamSource/config/validate #2": (
        "As above (groups and keys of connectrt's own FileStream source)."
    ),
    "validate: PUT /connector-plugins/FileStreamSink/config/validate": (
        'As above, for the sink; an unknown key is echoed with `"definition": null` where '
        "Kafka leaves it out."
    ),
    "validate: PUT /connector-plugins/FileStreamSink/config/validate #2": (
        "As above (groups and keys of connectrt's own FileStream sink)."
    ),
    "validate: PUT /connector-plugins/NoSuchPlugin/config/validate": (
        "Kafka answers 500 wrapping its own BadRequestException; connectrt answers 404 for an"
        " unknown plugin, as `GET /connector-plugins/{p}/config` does in both."
    ),
    "validate: PUT /connector-plugins/FileStreamSink/config/validate #4": (
        "Invalid JSON: Kafka answers 500 with Jackson's message, connectrt 400 (a client error)."
    ),
    "plugins: GET /connector-plugins?connectorsOnly=false": (
        "connectrt implements a subset of Kafka's converters, transforms and predicates under"
        " their Kafka class names; the others are Java classes it does not ship."
    ),
    "plugins: GET /connector-plugins/FileStreamSource/config": (
        "The connector's own config definition: connectrt's lists the common connector keys "
        "as well, with their groups; Kafka's lists only the plugin's `config()` keys."
    ),
    "plugins: GET /connector-plugins/FileStreamSinkConnector/config": ("As above, for the sink."),
    "plugins: GET /connector-plugins/org.apache.kafka.connect.file.FileStreamSinkConnector/config": (  # noqa: E501
        "As above, for the sink under its class name."
    ),
    "loggers: GET /admin/loggers": (
        "Each runtime's configured root level (the test's Log4j file says INFO; the test "
        "process's Python logging says WARNING)."
    ),
    "loggers: GET /admin/loggers/root": ("As above: each runtime's configured root level."),
    "loggers: PUT /admin/loggers/root": (
        "Kafka's root sets every logger under it and lists those it changed (here Kafka's "
        "client loggers, WARN in the test's Log4j file); connectrt's root sets the root "
        "logger only, which was at WARNING."
    ),
    "not-found: GET /connectors/X-none/tasks-config": (
        "Kafka 4 removed `/tasks-config` (its 404 is Jetty's); connectrt keeps the deprecated"
        " route for older clients."
    ),
    "bad-request: POST /connectors": (
        "No name: Kafka reports the validation error of an empty `name`; connectrt says the "
        "name is required (before validating)."
    ),
    "bad-request: POST /connectors #2": (
        "No `config`: Kafka fails with a NullPointerException (500); connectrt answers 400."
    ),
    "bad-request: POST /connectors #4": (
        "An unknown class: both 400 with Kafka's opening words; the list of available plugins"
        " that follows is each runtime's own."
    ),
    "bad-request: POST /connectors #5": (
        "`tasks.max=zero`: Kafka reports a second error (null after the failed parse); "
        "connectrt's type message is `Not an int`."
    ),
    "bad-request: POST /connectors #6": (
        "`tasks.max=0`: connectrt's line leaves out Kafka's `Invalid value 0 for "
        "configuration` prefix."
    ),
    "bad-request: POST /connectors #7": ("An empty name: as for no name."),
    "bad-request: POST /connectors #9": (
        "Invalid JSON: Kafka answers 500 with Jackson's message, connectrt 400 (a client error)."
    ),
    "bad-request: PUT /connectors/X-c/config": (
        "A JSON array for a config: Kafka answers 500 with Jackson's message, connectrt 400."
    ),
    "bad-request: GET /connectors?expand=nothing": (
        "An unknown `expand` value: Kafka answers an empty object, connectrt the plain list "
        "of names (as without `expand`)."
    ),
}

_results: dict[str, list[dict[str, Any]]] = {}
_lock = threading.Lock()


@pytest.fixture(scope="module")
def sides(
    broker: SessionBroker, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[tuple[Side, Side]]:
    """(Kafka Connect, connectrt), each with its own prefix and scratch folder."""
    if isinstance(broker, EmbeddedBroker):
        pytest.skip("Kafka Connect needs Apache Kafka: run with CONNECTRT_TEST_BROKER=kafka")
    connect = KafkaConnect(broker.bootstrap_servers)
    with ThreadPoolExecutor(1) as pool:
        started = pool.submit(connect.start)
        worker: RestWorker | None = None
        try:
            worker = start_rest_worker(broker.bootstrap_servers)
            started.result()
        except (JavaUnavailable, ConnectError) as exc:
            if worker is not None:
                worker.stop()
            connect.stop()
            pytest.skip(f"Kafka Connect cannot run here: {exc}")
    run = uuid.uuid4().hex[:6]
    kafka = Side("Kafka Connect", connect.url, f"kc{run}", tmp_path_factory.mktemp("kc"))
    ours = Side("connectrt", worker.url, f"cr{run}", tmp_path_factory.mktemp("cr"))
    try:
        yield kafka, ours
    finally:
        kafka.http.close()
        ours.http.close()
        worker.stop()
        if request.session.testsfailed:
            connect.keep_data = True
            print(f"Kafka Connect's log kept: {connect.log_path}")
        connect.stop()


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_scenario_answers_as_kafka_connect(sides: tuple[Side, Side], scenario: str) -> None:
    kafka, ours = sides
    steps = SCENARIOS[scenario]
    with ThreadPoolExecutor(2) as pool:
        on_kafka = pool.submit(run_scenario, kafka, steps)
        on_ours = pool.submit(run_scenario, ours, steps)
        kafka_answers, our_answers = on_kafka.result(), on_ours.result()
    results = compare(scenario, steps, (kafka, kafka_answers), (ours, our_answers))
    for result in results:
        if not result["same"]:
            result["reason"] = DELIBERATE.get(result["id"], "")
    with _lock:
        _results[scenario] = results
    unexplained = [r for r in results if not r["same"] and not r["reason"]]
    stale = [r["id"] for r in results if r["same"] and r["id"] in DELIBERATE]
    assert not unexplained, "differences without a reason in DELIBERATE:\n" + "\n".join(
        json.dumps(r, indent=1) for r in unexplained
    )
    assert not stale, f"steps listed in DELIBERATE that now answer as Kafka Connect: {stale}"


def test_results_are_the_committed_ones() -> None:
    """Runs last in the module: the scenarios' results equal the committed file (from which
    the compatibility page is generated), or are written there under UPDATE."""
    if set(_results) != set(SCENARIOS):
        pytest.skip("not every scenario ran in this session")
    live = {
        "kafka_connect_version": KAFKA_CONNECT_VERSION,
        "steps": [r for name in SCENARIOS for r in _results[name]],
    }
    if UPDATE:
        RESULTS.write_text(json.dumps(live, indent=1, ensure_ascii=False) + "\n", "utf-8")
        write_page_section(render_section(live), PAGE)
    committed = json.loads(RESULTS.read_text("utf-8"))
    # Compared: what the page shows (statuses, where bodies differ, reasons); the short bodies
    # in the file are for reading and may carry timing (a task's state mid-restart).
    changed = sorted(
        {_key(s) for s in live["steps"]} ^ {_key(s) for s in committed["steps"]}, key=str
    )
    assert not changed, (
        "the differential's results changed (review them, then rerun with "
        "CONNECTRT_UPDATE_REST_DIFF=1 to rewrite tests/integration/kafka_connect_rest_results.json "
        f"and the page's generated section): {changed}"
    )


def _key(step: dict[str, Any]) -> tuple[Any, ...]:
    return (
        step["id"],
        step["same"],
        step.get("kafka", "").split(" ", 1)[0],
        step.get("connectrt", "").split(" ", 1)[0],
        tuple(step.get("differs_at", ())),
        step.get("reason", ""),
    )
