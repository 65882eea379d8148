"""The REST scenarios the Kafka Connect differential replays, their runner and normaliser, and
the compatibility page's generated section.

(Why one module: the scenarios, the normaliser that makes their answers comparable and the
renderer of their results share one vocabulary of step ids and placeholders.)

A scenario is a list of steps. A request step is ``(METHOD, path, body)`` with optional
``view``; ``("WAIT", path, predicate)`` polls ``GET path`` until ``predicate(status, body)``
holds (not compared: it only orders the steps). In paths and bodies ``X`` stands for the side's
own prefix (``X-src`` is a connector name, ``X-t`` a topic) and ``$TMP`` for its own scratch
folder, so Kafka Connect and connectrt never share a connector name, topic or consumer group on
the one broker. Each side runs a scenario on its own thread; the answers are then normalised
(:func:`normalise`) and compared step by step.

Step ids are ``scenario: METHOD path`` (``#2`` and on for a repeat): the results file and the
page are keyed by them.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

__all__ = [
    "PAGE",
    "RESULTS",
    "SCENARIOS",
    "Side",
    "Step",
    "compare",
    "render_section",
    "run_scenario",
]

ROOT = Path(__file__).resolve().parent.parent
#: The committed results of the last differential run (the page is rendered from it).
RESULTS = ROOT / "tests" / "integration" / "kafka_connect_rest_results.json"
PAGE = ROOT / "docs" / "reference" / "kafka-connect-compatibility.md"
SECTION = "rest-differential"

Predicate = Callable[[int, Any], bool]


@dataclass(frozen=True)
class Step:
    method: str
    path: str
    body: Any = None
    #: A named narrowing of both bodies before comparison (see ``VIEWS``).
    view: str | None = None
    predicate: Predicate | None = None
    #: Raw text sent as the body (invalid JSON and the like) instead of ``body``.
    raw: str | None = None


def req(method: str, path: str, body: Any = None, *, view: str | None = None) -> Step:
    return Step(method, path, body, view)


def raw(method: str, path: str, text: str) -> Step:
    return Step(method, path, raw=text)


def wait(path: str, predicate: Predicate) -> Step:
    return Step("WAIT", path, predicate=predicate)


# -- predicates ------------------------------------------------------------------------------
def state_is(connector: str, tasks: str | None = None, count: int = 1) -> Predicate:
    """The status names the connector in ``connector`` and ``count`` tasks in ``tasks``
    (``count`` 0: no tasks)."""

    def check(status: int, body: Any) -> bool:
        if status != 200 or body["connector"]["state"] != connector:
            return False
        states = [t["state"] for t in body["tasks"]]
        if tasks is None:
            return len(states) == count if count == 0 else True
        return states == [tasks] * count

    return check


def answers(code: int) -> Predicate:
    return lambda status, body: status == code


def non_empty(key: str) -> Predicate:
    """The body's ``key`` (a list, or the single entry's ``topics``) is not empty."""

    def check(status: int, body: Any) -> bool:
        if status != 200:
            return False
        if key == "topics":
            return any(v.get("topics") for v in body.values())
        return bool(body.get(key))

    return check


# -- scenarios -------------------------------------------------------------------------------
def source(name: str = "X-src", **extra: Any) -> dict[str, Any]:
    config = {
        "connector.class": "FileStreamSource",
        "file": "$TMP/src.txt",
        "topic": "X-t",
        "tasks.max": "1",
        **extra,
    }
    return {"name": name, "config": config}


def sink(name: str = "X-snk", **extra: Any) -> dict[str, Any]:
    config = {
        "connector.class": "FileStreamSink",
        "file": "$TMP/sink.txt",
        "topics": "X-t",
        "tasks.max": "1",
        **extra,
    }
    return {"name": name, "config": config}


RUNNING = state_is("RUNNING", "RUNNING")
GONE = answers(404)

SCENARIOS: dict[str, list[Step]] = {
    "root": [
        req("GET", "/"),
        req("GET", "/health"),
        req("GET", "/no/such/path"),
        req("DELETE", "/connector-plugins"),
        req("GET", "/connectors"),
    ],
    "lifecycle": [
        req("POST", "/connectors", source()),
        wait("/connectors/X-src/status", RUNNING),
        req("GET", "/connectors"),
        req("GET", "/connectors?expand=status"),
        req("GET", "/connectors?expand=info"),
        req("GET", "/connectors/X-src"),
        req("GET", "/connectors/X-src/config"),
        req("GET", "/connectors/X-src/status"),
        req("GET", "/connectors/X-src/tasks"),
        req("GET", "/connectors/X-src/tasks/0/status"),
        req("POST", "/connectors", source()),
        wait("/connectors/X-src/topics", non_empty("topics")),
        req("GET", "/connectors/X-src/topics"),
        req("PUT", "/connectors/X-src/topics/reset"),
        req("PUT", "/connectors/X-src/config", source(**{"tasks.max": "2"})["config"]),
        req("PATCH", "/connectors/X-src/config", {"batch.size": "100"}),
        req("PATCH", "/connectors/X-src/config", {"batch.size": None}),
        req("GET", "/connectors/X-src/config"),
        req("PUT", "/connectors/X-new/config", source("X-new")["config"]),
        req("PUT", "/connectors/X-new/config", {**source("X-new")["config"], "name": "X-other"}),
        req("DELETE", "/connectors/X-new"),
        req("DELETE", "/connectors/X-src"),
        wait("/connectors/X-src", GONE),
        req("GET", "/connectors/X-src"),
        req("GET", "/connectors/X-src/topics"),
        req("DELETE", "/connectors/X-src"),
        wait("/connectors/X-new", GONE),
        req("GET", "/connectors"),
    ],
    "pause-stop-resume": [
        req("POST", "/connectors", source()),
        wait("/connectors/X-src/status", RUNNING),
        req("PUT", "/connectors/X-src/pause"),
        wait("/connectors/X-src/status", state_is("PAUSED", "PAUSED")),
        req("GET", "/connectors/X-src/status"),
        req("PUT", "/connectors/X-src/resume"),
        wait("/connectors/X-src/status", RUNNING),
        req("GET", "/connectors/X-src/status"),
        req("PUT", "/connectors/X-src/stop"),
        wait("/connectors/X-src/status", state_is("STOPPED", count=0)),
        req("GET", "/connectors/X-src/status"),
        req("GET", "/connectors/X-src/tasks"),
        req("PUT", "/connectors/X-src/pause"),
        wait("/connectors/X-src/status", state_is("PAUSED")),
        req("GET", "/connectors/X-src/status"),
        req("PUT", "/connectors/X-src/resume"),
        wait("/connectors/X-src/status", RUNNING),
        req("GET", "/connectors/X-src/status"),
        req("POST", "/connectors", {**source("X-paused"), "initial_state": "PAUSED"}),
        wait("/connectors/X-paused/status", state_is("PAUSED")),
        req("GET", "/connectors/X-paused/status"),
        req("POST", "/connectors", {**source("X-stopped"), "initial_state": "STOPPED"}),
        wait("/connectors/X-stopped/status", state_is("STOPPED", count=0)),
        req("GET", "/connectors/X-stopped/status"),
        req("POST", "/connectors", {**source("X-bad"), "initial_state": "SLEEPING"}),
        req("DELETE", "/connectors/X-src"),
        req("DELETE", "/connectors/X-paused"),
        req("DELETE", "/connectors/X-stopped"),
        wait("/connectors/X-stopped", GONE),
    ],
    "restart": [
        # A sink whose file is a folder: its task fails at start on both sides.
        req("POST", "/connectors", sink(file="$TMP")),
        wait("/connectors/X-snk/status", state_is("RUNNING", "FAILED")),
        req("GET", "/connectors/X-snk/status", view="trace_first_line"),
        req("GET", "/connectors/X-snk/tasks/0/status", view="trace_first_line"),
        req("POST", "/connectors/X-snk/restart"),
        wait("/connectors/X-snk/status", state_is("RUNNING", "FAILED")),
        req("POST", "/connectors/X-snk/restart?onlyFailed=true"),
        wait("/connectors/X-snk/status", state_is("RUNNING", "FAILED")),
        req("POST", "/connectors/X-snk/restart?includeTasks=true&onlyFailed=true"),
        wait("/connectors/X-snk/status", state_is("RUNNING", "FAILED")),
        req("POST", "/connectors/X-snk/restart?includeTasks=true", view="states_only"),
        wait("/connectors/X-snk/status", state_is("RUNNING", "FAILED")),
        req("POST", "/connectors/X-snk/tasks/0/restart"),
        wait("/connectors/X-snk/status", state_is("RUNNING", "FAILED")),
        req("POST", "/connectors/X-snk/tasks/7/restart"),
        req("GET", "/connectors/X-snk/tasks/7/status"),
        req("POST", "/connectors/X-none/restart"),
        req("POST", "/connectors/X-none/restart?includeTasks=true"),
        req("POST", "/connectors/X-none/tasks/0/restart"),
        req("POST", "/connectors", source()),
        wait("/connectors/X-src/status", RUNNING),
        req("POST", "/connectors/X-src/restart?includeTasks=true&onlyFailed=true"),
        req("DELETE", "/connectors/X-snk"),
        req("DELETE", "/connectors/X-src"),
        wait("/connectors/X-src", GONE),
    ],
    "offsets": [
        req("POST", "/connectors", source()),
        wait("/connectors/X-src/status", RUNNING),
        wait("/connectors/X-src/offsets", non_empty("offsets")),
        req("GET", "/connectors/X-src/offsets"),
        req(
            "PATCH",
            "/connectors/X-src/offsets",
            {"offsets": [{"partition": {"filename": "$TMP/src.txt"}, "offset": {"position": 2}}]},
        ),
        req("DELETE", "/connectors/X-src/offsets"),
        req("PUT", "/connectors/X-src/stop"),
        wait("/connectors/X-src/status", state_is("STOPPED", count=0)),
        req("GET", "/connectors/X-src/offsets"),
        req(
            "PATCH",
            "/connectors/X-src/offsets",
            {"offsets": [{"partition": {"filename": "$TMP/src.txt"}, "offset": {"position": 2}}]},
        ),
        req("GET", "/connectors/X-src/offsets"),
        req("PATCH", "/connectors/X-src/offsets", {}),
        req("PATCH", "/connectors/X-src/offsets", {"offsets": []}),
        req(
            "PATCH",
            "/connectors/X-src/offsets",
            {"offsets": [{"partition": {"filename": "$TMP/src.txt"}, "offset": {"pos": 2}}]},
        ),
        req(
            "PATCH",
            "/connectors/X-src/offsets",
            {"offsets": [{"partition": {"file": "a"}, "offset": {"position": 2}}]},
        ),
        req("DELETE", "/connectors/X-src/offsets"),
        req("GET", "/connectors/X-src/offsets", view="without_reset_partitions"),
        req("POST", "/connectors", sink()),
        wait("/connectors/X-snk/status", RUNNING),
        wait("/connectors/X-snk/offsets", non_empty("offsets")),
        req("PUT", "/connectors/X-snk/stop"),
        wait("/connectors/X-snk/status", state_is("STOPPED", count=0)),
        req("GET", "/connectors/X-snk/offsets", view="offset_shape"),
        req(
            "PATCH",
            "/connectors/X-snk/offsets",
            {
                "offsets": [
                    {
                        "partition": {"kafka_topic": "X-t", "kafka_partition": 0},
                        "offset": {"kafka_offset": 1},
                    }
                ]
            },
        ),
        req("GET", "/connectors/X-snk/offsets"),
        req(
            "PATCH",
            "/connectors/X-snk/offsets",
            {"offsets": [{"partition": {"kafka_topic": "X-t"}, "offset": {"kafka_offset": 1}}]},
        ),
        req("DELETE", "/connectors/X-snk/offsets"),
        req("GET", "/connectors/X-snk/offsets"),
        req("GET", "/connectors/X-none/offsets"),
        req("PATCH", "/connectors/X-none/offsets", {"offsets": []}),
        req("DELETE", "/connectors/X-none/offsets"),
        req("DELETE", "/connectors/X-src"),
        req("DELETE", "/connectors/X-snk"),
        wait("/connectors/X-snk", GONE),
    ],
    "validate": [
        req("PUT", "/connector-plugins/FileStreamSource/config/validate", source()["config"]),
        req(
            "PUT",
            "/connector-plugins/FileStreamSource/config/validate",
            {"connector.class": "FileStreamSource", "file": "$TMP/src.txt"},
        ),
        req(
            "PUT",
            "/connector-plugins/FileStreamSink/config/validate",
            {**sink()["config"], "unknown.key": "1"},
        ),
        req(
            "PUT",
            "/connector-plugins/FileStreamSink/config/validate",
            {"connector.class": "FileStreamSink", "topics": "a", "topics.regex": "b.*"},
        ),
        req(
            "PUT",
            "/connector-plugins/FileStreamSink/config/validate",
            {"connector.class": "FileStreamSource", "topic": "a"},
        ),
        req(
            "PUT",
            "/connector-plugins/NoSuchPlugin/config/validate",
            {"connector.class": "NoSuchPlugin"},
        ),
        raw("PUT", "/connector-plugins/FileStreamSink/config/validate", "{not json"),
    ],
    "plugins": [
        req("GET", "/connector-plugins", view="file_plugins"),
        req("GET", "/connector-plugins?connectorsOnly=false", view="kafka_builtin_plugins"),
        req("GET", "/connector-plugins/FileStreamSource/config"),
        req("GET", "/connector-plugins/FileStreamSinkConnector/config"),
        req(
            "GET", "/connector-plugins/org.apache.kafka.connect.file.FileStreamSinkConnector/config"
        ),
        req("GET", "/connector-plugins/NoSuchPlugin/config"),
    ],
    "loggers": [
        req("GET", "/admin/loggers", view="root_logger"),
        req("GET", "/admin/loggers/root"),
        req("GET", "/admin/loggers/X.unset"),
        req("PUT", "/admin/loggers/root", {"level": "INFO"}),
        req("PUT", "/admin/loggers/X.ns", {"level": "DEBUG"}),
        req("GET", "/admin/loggers/X.ns", view="no_last_modified"),
        req("PUT", "/admin/loggers/X.ns", {"level": "DEBUG"}),
        req("PUT", "/admin/loggers/X.ns", {"level": "LOUD"}),
        req("PUT", "/admin/loggers/X.ns", {}),
        req("PUT", "/admin/loggers/X.ns?scope=cluster", {"level": "INFO"}),
        wait("/admin/loggers/X.ns", lambda status, body: body["level"] == "INFO"),
        req("PUT", "/admin/loggers/X.ns?scope=galaxy", {"level": "INFO"}),
        req("PUT", "/admin/loggers/X.ns", {"level": "INFO"}),
    ],
    "not-found": [
        req("GET", "/connectors/X-none"),
        req("GET", "/connectors/X-none/config"),
        req("GET", "/connectors/X-none/status"),
        req("GET", "/connectors/X-none/tasks"),
        req("GET", "/connectors/X-none/tasks/0/status"),
        req("GET", "/connectors/X-none/topics"),
        req("PUT", "/connectors/X-none/topics/reset"),
        req("PUT", "/connectors/X-none/pause"),
        req("PUT", "/connectors/X-none/resume"),
        req("PUT", "/connectors/X-none/stop"),
        req("PATCH", "/connectors/X-none/config", {"a": "b"}),
        req("DELETE", "/connectors/X-none"),
        req("GET", "/connectors/X-none/tasks-config"),
    ],
    "bad-request": [
        req("POST", "/connectors", {"config": source()["config"]}),
        req("POST", "/connectors", {"name": "X-c"}),
        req("POST", "/connectors", {"name": "X-c", "config": {"file": "$TMP/x"}}),
        req("POST", "/connectors", source("X-c", **{"connector.class": "NoSuchClass"})),
        req("POST", "/connectors", source("X-c", **{"tasks.max": "zero"})),
        req("POST", "/connectors", source("X-c", **{"tasks.max": "0"})),
        req("POST", "/connectors", {"name": "", "config": source()["config"]}),
        req(
            "POST", "/connectors", {"name": "X-c", "config": {**source()["config"], "name": "X-d"}}
        ),
        raw("POST", "/connectors", "{not json"),
        raw("PUT", "/connectors/X-c/config", "[1, 2]"),
        req("GET", "/connectors?expand=nothing"),
        req("GET", "/connectors"),
    ],
}


# -- running ---------------------------------------------------------------------------------
@dataclass
class Side:
    """One implementation under test: its REST base URL, prefix and scratch folder."""

    name: str
    url: str
    prefix: str
    tmp: Path
    http: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self.http = httpx.Client(base_url=self.url, timeout=60)
        self.tmp.mkdir(parents=True, exist_ok=True)

    def fill(self, value: Any) -> Any:
        """``X`` and ``$TMP`` in a path or body replaced by this side's own values."""
        if isinstance(value, str):
            text = value.replace("$TMP", str(self.tmp))
            return re.sub(r"(?<![A-Za-z0-9])X(?=[-.])", self.prefix, text)
        if isinstance(value, list):
            return [self.fill(v) for v in value]
        if isinstance(value, dict):
            return {self.fill(k): self.fill(v) for k, v in value.items()}
        return value


def step_ids(steps: list[Step], scenario: str) -> Iterator[tuple[str, Step]]:
    seen: dict[str, int] = {}
    for step in steps:
        if step.method == "WAIT":
            continue
        base = f"{scenario}: {step.method} {step.path}"
        seen[base] = seen.get(base, 0) + 1
        yield (base if seen[base] == 1 else f"{base} #{seen[base]}"), step


def _decode(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text


def run_scenario(side: Side, steps: list[Step], timeout: float = 90.0) -> list[tuple[int, Any]]:
    """Run ``steps`` against ``side``; the (status, body) of every request step, in order.
    A WAIT that times out raises ``TimeoutError`` naming the side, path and last answer."""
    (side.tmp / "src.txt").write_text("".join(f"line {i}\n" for i in range(3)), "utf-8")
    answers_: list[tuple[int, Any]] = []
    for step in steps:
        path = side.fill(step.path)
        if step.method == "WAIT":
            assert step.predicate is not None
            deadline = time.monotonic() + timeout
            while True:
                response = side.http.get(path)
                body = _decode(response)
                try:
                    done = step.predicate(response.status_code, body)
                except (KeyError, TypeError, AttributeError):
                    done = False
                if done:
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"{side.name}: GET {path} did not reach the awaited answer within "
                        f"{timeout:g} s; last {response.status_code} {body!r:.500}"
                    )
                time.sleep(0.1)
            continue
        deadline = time.monotonic() + timeout
        while True:
            response = _send(side, step, path)
            if not _rebalancing(response) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        answers_.append((response.status_code, _decode(response)))
    return answers_


def _send(side: Side, step: Step, path: str) -> httpx.Response:
    if step.raw is not None:
        return side.http.request(
            step.method,
            path,
            content=side.fill(step.raw).encode(),
            headers={"Content-Type": "application/json"},
        )
    if step.body is not None:
        return side.http.request(step.method, path, json=side.fill(step.body))
    return side.http.request(step.method, path)


def _rebalancing(response: httpx.Response) -> bool:
    """Kafka Connect's "ask again" answers: a distributed worker refuses a request, before
    acting on it, while its group rebalances (409 "...rebalance in progress", or 500 "Request
    cannot be completed because a rebalance is expected" just after a config change, seen on a
    busy machine). A client retries them, and so does the differential."""
    if response.status_code not in (409, 500):
        return False
    return "rebalance" in response.text.lower()


# -- normalising -----------------------------------------------------------------------------
#: Keys whose values are each implementation's own.
_OWN = {"worker_id": "<worker>", "version": "<version>", "commit": "<commit>"}


def normalise(value: Any, side: Side, key: str | None = None) -> Any:
    """What is the side's own made neutral: its prefix back to ``X``, its scratch folder to
    ``$TMP``, worker ids, versions and commits to placeholders, ``task.class`` values to
    ``<task.class>``, and a trace to its first line (stack frames are each runtime's own)."""
    if isinstance(value, dict):
        return {normalise(k, side): normalise(v, side, k) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v, side) for v in value]
    if not isinstance(value, str):
        return value
    if key in _OWN:
        return _OWN[key]
    if key == "task.class":
        return "<task.class>"
    if key == "trace":
        value = value.splitlines()[0] if value else value
    value = value.replace(str(side.tmp), "$TMP")
    return value.replace(side.prefix, "X")


def _file_plugins(body: Any) -> Any:
    if not isinstance(body, list):
        return body
    return sorted(
        (p["class"].rsplit(".", 1)[-1], p["type"])
        for p in body
        if p["class"].rsplit(".", 1)[-1].startswith("FileStream")
    )


_KAFKA_BUILTINS = re.compile(r"^org\.apache\.kafka\.connect\.(json|storage|converters|transforms)")


def _kafka_builtin_plugins(body: Any) -> Any:
    """Kafka's own converters, transforms and predicates (classes under
    ``org.apache.kafka.connect``) each side lists."""
    if not isinstance(body, list):
        return body
    return sorted(
        {(p["class"], p["type"]) for p in body if _KAFKA_BUILTINS.match(p.get("class", ""))}
    )


def _root_logger(body: Any) -> Any:
    return body.get("root") if isinstance(body, dict) else body


def _no_last_modified(body: Any) -> Any:
    if isinstance(body, dict):
        return {k: v for k, v in body.items() if k != "last_modified"}
    return body


def _offset_shape(body: Any) -> Any:
    """The committed offsets with each sink position as ``<n>`` (how far a sink read before
    it was stopped is timing)."""
    if not isinstance(body, dict):
        return body
    return {
        "offsets": [
            {**o, "offset": {k: "<n>" for k in (o.get("offset") or {})}}
            for o in body.get("offsets", [])
        ]
    }


def _without_reset_partitions(body: Any) -> Any:
    """The offsets without partitions whose offset is null: after a reset, Kafka Connect lists
    the partition with ``"offset": null`` (its tombstone, read back from the offsets topic) in
    some runs and leaves it out in others, depending on timing; connectrt leaves it out."""
    if not isinstance(body, dict) or not isinstance(body.get("offsets"), list):
        return body
    return {**body, "offsets": [o for o in body["offsets"] if o.get("offset") is not None]}


def _states_only(body: Any) -> Any:
    """A restart plan's states (whether a task had failed again by then is timing)."""
    if not isinstance(body, dict) or "connector" not in body:
        return body
    return {
        "connector": body["connector"]["state"],
        "tasks": [t["state"] for t in body["tasks"]],
    }


VIEWS: Mapping[str, Callable[[Any], Any]] = {
    "offset_shape": _offset_shape,
    "without_reset_partitions": _without_reset_partitions,
    "states_only": _states_only,
    "file_plugins": _file_plugins,
    "kafka_builtin_plugins": _kafka_builtin_plugins,
    "root_logger": _root_logger,
    "no_last_modified": _no_last_modified,
    "trace_first_line": lambda body: body,  # normalise() already keeps a trace's first line
}

#: The longest a body is written into the results file.
_BODY_CHARS = 400


def _short(body: Any) -> str:
    text = json.dumps(body, sort_keys=True)
    return text if len(text) <= _BODY_CHARS else text[:_BODY_CHARS] + "…"


def _diff_paths(a: Any, b: Any, where: str = "") -> list[str]:
    """Where two JSON values differ, as ``a.b[2].c`` paths (at most a few)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for k in sorted(set(a) | set(b)):
            sub = f"{where}.{k}" if where else k
            if k not in a:
                out.append(f"{sub} (connectrt only)")
            elif k not in b:
                out.append(f"{sub} (Kafka only)")
            else:
                out.extend(_diff_paths(a[k], b[k], sub))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out.extend(_diff_paths(x, y, f"{where}[{i}]"))
        return out
    return [] if a == b else [where or "(body)"]


def compare(
    scenario: str,
    steps: list[Step],
    kafka: tuple[Side, list[tuple[int, Any]]],
    ours: tuple[Side, list[tuple[int, Any]]],
) -> list[dict[str, Any]]:
    """One result per request step: its id, whether the normalised answers are the same, and
    for a difference both statuses, short bodies and where the bodies differ."""
    results = []
    for (step_id, step), (k_status, k_body), (c_status, c_body) in zip(
        step_ids(steps, scenario), kafka[1], ours[1], strict=True
    ):
        view = VIEWS[step.view] if step.view else (lambda body: body)
        k = view(normalise(k_body, kafka[0]))
        c = view(normalise(c_body, ours[0]))
        same = k_status == c_status and k == c
        result: dict[str, Any] = {"id": step_id, "same": same}
        if not same:
            result.update(
                kafka=f"{k_status} {_short(k)}",
                connectrt=f"{c_status} {_short(c)}",
                differs_at=_diff_paths(k, c)[:6] if k_status == c_status else ["status"],
            )
        results.append(result)
    return results


# -- the page --------------------------------------------------------------------------------
def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_section(results: Mapping[str, Any]) -> str:
    """The page's generated section for ``results`` (the committed results file's content)."""
    steps = results["steps"]
    same = sum(1 for s in steps if s["same"])
    differ = [s for s in steps if not s["same"]]
    lines = [
        "Generated from `tests/integration/kafka_connect_rest_results.json`, which "
        "`tests/integration/test_kafka_connect_rest_diff.py` checks against a live run: "
        f"Kafka Connect {results['kafka_connect_version']} (distributed mode) and a connectrt "
        "worker on one Apache Kafka broker, the same REST scenarios replayed against both, "
        "status codes and bodies compared after normalising what is each one's own (worker "
        "ids, versions, scratch folders, connector-name prefixes, stack frames, task class "
        "names).",
        "",
        f"**{len(steps)} steps: {same} the same, {len(differ)} different.** "
        "Every difference is deliberate:",
        "",
        "| Step | Kafka Connect | connectrt | Why |",
        "|---|---|---|---|",
    ]
    for s in differ:
        lines.append(
            f"| `{_cell(s['id'])}` | {s['kafka'].split(' ', 1)[0]} | "
            f"{s['connectrt'].split(' ', 1)[0]} "
            f"(differs at: {_cell(', '.join(s['differs_at']))}) | {_cell(s['reason'])} |"
        )
    return "\n".join(lines) + "\n"


def page_section(page: Path = PAGE) -> str:
    text = page.read_text(encoding="utf-8")
    m = re.search(rf"<!-- {SECTION}:start -->\n(.*?)<!-- {SECTION}:end -->", text, re.S)
    if m is None:
        raise AssertionError(f"{page.name} has no {SECTION} section")
    return m.group(1)


def write_page_section(section: str, page: Path = PAGE) -> None:
    text = page.read_text(encoding="utf-8")
    start, end = f"<!-- {SECTION}:start -->\n", f"<!-- {SECTION}:end -->"
    head, _, rest = text.partition(start)
    _, _, tail = rest.partition(end)
    page.write_text(head + start + section + end + tail, encoding="utf-8")
