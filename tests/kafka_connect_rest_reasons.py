"""The reasons kept for each difference the Kafka Connect REST differential finds, shared by
the plaintext run (``tests/integration/test_kafka_connect_rest_diff.py``) and the SASL_SSL
rerun (``tests/integration/test_secured_reruns.py``)."""

from __future__ import annotations

from typing import Any

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


def result_key(step: dict[str, Any]) -> tuple[Any, ...]:
    """What the compatibility page shows of a step: the committed results and a run's are
    compared on these."""
    return (
        step["id"],
        step["same"],
        step.get("kafka", "").split(" ", 1)[0],
        step.get("connectrt", "").split(" ", 1)[0],
        tuple(step.get("differs_at", ())),
        step.get("reason", ""),
    )
