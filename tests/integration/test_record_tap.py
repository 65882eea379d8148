"""The record inspector (``GET /connectors/{c}/tap``, ``connectrt tap``) on a running pipeline:
a real worker with basic authentication and a file config provider, over real HTTP, and the
embedded broker.

The pipeline: a FileStreamSource tails a file the test keeps appending to (five lines every
0.1 s) into a topic; a FileStreamSink reads that topic through three transformations (the
line hoisted into a struct field, a static field inserted, a header whose value comes from
the config provider). The tests read each stage's events and check what the stage did; a line
carries the provider's secret, which must not appear in any form in any answer.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.client import ConnectClient, server_sent_events
from connectrt.listener.auth import hash_password
from connectrt.testing.rest import RestWorker, start_rest_worker, wait_for

pytestmark = pytest.mark.integration

KAFKA_PROVIDERS = "org.apache.kafka.common.config.provider"
USER, PASSWORD = "ops", "tap-pass-7"
WAIT_S = 120.0  # a sink group join and task starts on a busy machine


class Pipeline:
    """The running source and sink, the secret, and the thread that feeds the source."""

    def __init__(self, worker: RestWorker, root: Path) -> None:
        run = uuid.uuid4().hex[:8]
        self.secret = f"tapsecret{run}"
        self.topic = f"tap-{run}"
        self.source = f"tap-source-{run}"
        self.sink = f"tap-sink-{run}"
        self.input = root / "in.txt"
        self.input.write_text("")
        props = root / "secrets.properties"
        props.write_text(f"token={self.secret}\n")
        self.props = props
        self.worker = worker
        self._stop = threading.Event()
        self._feeder = threading.Thread(target=self._feed, daemon=True)

    def _feed(self) -> None:
        n = 0
        while not self._stop.wait(0.1):
            with self.input.open("a") as f:
                for _ in range(5):
                    n += 1
                    line = f"leak {self.secret} {n}" if n % 3 == 0 else f"line-{n}"
                    f.write(line + "\n")

    def start(self, root: Path) -> None:
        http = self.worker.http
        source = {
            "connector.class": "FileStreamSource",
            "file": str(self.input),
            "topic": self.topic,
            "note.token": f"${{file:{self.props}:token}}",
        }
        sink = {
            "connector.class": "FileStreamSink",
            "topics": self.topic,
            "file": str(root / "out.txt"),
            "transforms": "hoist,insert,hdr",
            "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
            "transforms.hoist.field": "line",
            "transforms.insert.type": "org.apache.kafka.connect.transforms.InsertField$Value",
            "transforms.insert.static.field": "origin",
            "transforms.insert.static.value": "tapped",
            "transforms.hdr.type": "org.apache.kafka.connect.transforms.InsertHeader",
            "transforms.hdr.header": "token",
            "transforms.hdr.value.literal": f"${{file:{self.props}:token}}",
        }
        for name, config in ((self.source, source), (self.sink, sink)):
            r = http.put(f"/connectors/{name}/config", json=config)
            assert r.status_code == 201, r.text
        self._feeder.start()

        def running(name: str) -> bool:
            status = http.get(f"/connectors/{name}/status").json()
            tasks = status.get("tasks", [])
            return bool(tasks) and all(t["state"] == "RUNNING" for t in tasks)

        wait_for(lambda: running(self.source) and running(self.sink), WAIT_S, "both tasks RUNNING")

    def stop(self) -> None:
        self._stop.set()
        self._feeder.join(5)


@pytest.fixture(scope="module")
def worker(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RestWorker]:
    root = tmp_path_factory.mktemp("tap-auth")
    credentials = root / "credentials"
    credentials.write_text(f"{USER}:{hash_password(PASSWORD, iterations=1000)}\n")
    w = start_rest_worker(
        broker.bootstrap_servers,
        **{
            "rest.auth.type": "basic",
            "rest.auth.credentials.file": str(credentials),
            "config.providers": "file",
            "config.providers.file.class": f"{KAFKA_PROVIDERS}.FileConfigProvider",
        },
    )
    w.http.auth = (USER, PASSWORD)
    try:
        yield w
    finally:
        w.stop()


@pytest.fixture(scope="module")
def pipeline(worker: RestWorker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipeline]:
    root = tmp_path_factory.mktemp("tap-pipeline")
    p = Pipeline(worker, root)
    try:
        p.start(root)
        yield p
    finally:
        p.stop()
        worker.delete_connectors()


def _tap(worker: RestWorker, name: str, stage: str, count: int) -> tuple[list[Any], str]:
    """``count`` record events of ``stage`` (and the raw text of the whole stream)."""
    raw = httpx.get(
        f"{worker.url}/connectors/{name}/tap",
        params={"stage": stage, "rate": 20, "limit": count},
        auth=(USER, PASSWORD),
        timeout=WAIT_S,
    ).text
    events = list(server_sent_events(raw.splitlines()))
    assert events[0][0] == "tap"
    expected = {"transform:1": "transform:insert"}.get(stage, stage)
    assert events[0][1]["stage"] == expected
    assert all(d["stage"] == expected for e, d in events if e == "record")
    records = [d for e, d in events if e == "record"]
    assert len(records) == count
    return records, raw


def _text(value: Any) -> str:
    """A rendered bytes value's text (its base64, decoded), or the value itself."""
    if isinstance(value, dict) and "base64" in value:
        return base64.b64decode(value["base64"]).decode()
    return value


def _assert_no_secret(secret: str, raw: str) -> None:
    """``secret`` appears nowhere in ``raw``, nor in any base64 text in it."""
    assert secret not in raw
    assert base64.b64encode(secret.encode()).decode()[:12] not in raw
    for chunk in raw.replace('"', " ").split():
        try:
            decoded = base64.b64decode(chunk, validate=True).decode("utf-8", "replace")
        except ValueError:
            continue
        assert secret not in decoded


def test_sink_stages_show_each_step(worker: RestWorker, pipeline: Pipeline) -> None:
    read, raw_read = _tap(worker, pipeline.sink, "read", 6)
    for r in read:
        assert r["connector"] == pipeline.sink
        assert r["topic"] == pipeline.topic
        assert r["partition"] >= 0 and r["offset"] >= 0 and r["timestamp"] > 0
        # As consumed: the JsonConverter's bytes (the worker's value converter), as base64.
        assert '"payload"' in _text(r["value"])
    converted, _ = _tap(worker, pipeline.sink, "converted", 3)
    for r in converted:
        assert isinstance(r["value"], str) and r["value_schema"]["type"] == "string"
    hoisted, _ = _tap(worker, pipeline.sink, "transform:hoist", 3)
    for r in hoisted:
        assert set(r["value"]) == {"line"}
        assert r["value_schema"]["type"] == "struct"
        assert [f["field"] for f in r["value_schema"]["fields"]] == ["line"]
    inserted, _ = _tap(worker, pipeline.sink, "transform:1", 3)  # by index: "insert"
    for r in inserted:
        assert r["value"]["origin"] == "tapped"
        assert not r["headers"]
    written, raw_written = _tap(worker, pipeline.sink, "written", 6)
    for r in written:
        assert r["value"]["origin"] == "tapped"
        # The header's value came from the config provider: hidden.
        assert r["headers"] == [
            {"key": "token", "value": "[hidden]", "schema": {"type": "string", "optional": False}}
        ]
    for raw in (raw_read, raw_written):
        _assert_no_secret(pipeline.secret, raw)
    # Every stream ended: the runners' hot path check finds no tap again.
    runners = worker.process.herder.worker.runners
    wait_for(
        lambda: all(getattr(r, "tap", None) is None for r in runners(pipeline.sink).values()),
        WAIT_S,
        "the sink's runners to drop their tap once no one watches",
    )


def _first(worker: RestWorker, name: str, stage: str, wanted: Any) -> Any:
    """The first record event of ``stage`` for which ``wanted(data)`` holds (of 200 at most)."""
    client = ConnectClient(worker.url, auth=(USER, PASSWORD), timeout=WAIT_S)
    with client:
        for event, data in client.tap(name, stage, rate=20, limit=200):
            if event == "record" and wanted(data):
                return data
    raise AssertionError(f"no record of stage {stage} as wanted in 200")


def test_a_provider_secret_in_a_record_is_hidden(worker: RestWorker, pipeline: Pipeline) -> None:
    """Every third line holds the secret: hidden in the consumed bytes (redacted before they
    are base64-encoded) and in the struct field the transformations made of it."""
    read = _first(worker, pipeline.sink, "read", lambda r: "leak" in _text(r["value"]))
    assert "leak [hidden]" in _text(read["value"])
    assert pipeline.secret not in str(read)
    written = _first(
        worker, pipeline.sink, "written", lambda r: r["value"]["line"].startswith("leak")
    )
    assert written["value"]["line"].startswith("leak [hidden] ")
    polled = _first(worker, pipeline.source, "read", lambda r: r["value"].startswith("leak"))
    assert polled["value"].startswith("leak [hidden] ")


def test_source_stages(worker: RestWorker, pipeline: Pipeline) -> None:
    read, raw = _tap(worker, pipeline.source, "read", 3)
    for r in read:
        assert isinstance(r["value"], str) and r["value_schema"]["type"] == "string"
        assert r["source_partition"] == {"filename": str(pipeline.input)}
        assert "position" in r["source_offset"]
    produced, raw2 = _tap(worker, pipeline.source, "written", 3)
    for r in produced:
        assert r["topic"] == pipeline.topic
        assert '"payload"' in _text(r["value"])  # the JsonConverter's bytes
    _assert_no_secret(pipeline.secret, raw + raw2)


def test_unknown_stage_connector_and_no_credentials(worker: RestWorker, pipeline: Pipeline) -> None:
    http = worker.http
    bad = http.get(f"/connectors/{pipeline.sink}/tap", params={"stage": "nope"})
    assert bad.status_code == 400
    assert (
        "read, converted, transform:hoist, transform:insert, transform:hdr, written"
        in (bad.json()["message"])
    )
    assert http.get("/connectors/missing-connector/tap").status_code == 404
    anonymous = httpx.get(f"{worker.url}/connectors/{pipeline.sink}/tap", timeout=30)
    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"].startswith("Basic")


def test_cli_prints_records_as_they_arrive(worker: RestWorker, pipeline: Pipeline) -> None:
    env = {**os.environ, "CONNECTRT_CONTEXT": "", "CONNECTRT_URL": ""}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "connectrt.cli",
            "tap",
            pipeline.sink,
            "--stage",
            "transform:insert",
            "--rate",
            "10",
            "--limit",
            "3",
            "--url",
            worker.url,
            "--user",
            f"{USER}:{PASSWORD}",
        ],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == 3
    assert all(line["value"]["origin"] == "tapped" for line in lines)
    assert f"# {pipeline.sink}: stage transform:insert" in done.stderr
    # Without credentials: the worker's 401, as every command prints it.
    refused = subprocess.run(
        [sys.executable, "-m", "connectrt.cli", "tap", pipeline.sink, "--url", worker.url],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        env=env,
    )
    assert refused.returncode == 1
    assert "HTTP 401" in refused.stderr


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from connectrt.testing import browser as chromium

    with chromium.launched() as launched:
        yield launched


@pytest.mark.browser
def test_console_shows_the_tap_live(worker: RestWorker, pipeline: Pipeline, browser: Any) -> None:
    """The inspector page in Chromium: records of the chosen stage arrive over EventSource
    (with the browser's basic-auth credentials), the stage selector switches the stream, and
    the provider's secret is shown hidden."""
    context = browser.new_context(
        viewport={"width": 1280, "height": 900},
        http_credentials={"username": USER, "password": PASSWORD},
    )
    context.set_default_timeout(WAIT_S * 1000)
    try:
        page = context.new_page()
        page.goto(f"{worker.url}/ui/connectors/{pipeline.sink}")
        page.locator("#inspect").click()
        page.wait_for_url(f"**/ui/connectors/{pipeline.sink}/tap")
        stages = page.locator("#tap-stage option").all_text_contents()
        assert stages == [
            "read",
            "converted",
            "transform:hoist",
            "transform:insert",
            "transform:hdr",
            "written",
        ]
        page.locator("#tap-state", has_text="watching read").wait_for()
        first = page.locator(".tap-event").first
        first.wait_for()
        assert first.locator(".tap-head").text_content().startswith("read · task 0 · ")
        page.locator("#tap-rate").select_option("20")
        page.locator("#tap-stage").select_option("written")
        page.locator("#tap-state", has_text="watching written").wait_for()
        written = page.locator(".tap-event", has_text="written · task 0").first
        written.wait_for()
        body = written.locator(".tap-body").text_content() or ""
        assert '"origin": "tapped"' in body
        assert '"value": "[hidden]"' in body  # the header from the config provider
        page.locator(".tap-event", has_text="leak [hidden]").first.wait_for()
        assert pipeline.secret not in page.content()
        # A stream the worker refuses (here a stage it does not know) shows the worker's reason.
        page.evaluate(
            """() => {
                const stage = document.getElementById('tap-stage');
                stage.add(new Option('nope', 'nope'));
                stage.value = 'nope';
                stage.dispatchEvent(new Event('change', {bubbles: true}));
            }"""
        )
        page.locator("#tap-state.error", has_text="Unknown stage 'nope'").wait_for()
        missing = page.goto(f"{worker.url}/ui/connectors/missing-connector/tap")
        assert missing is not None and missing.status == 404
    finally:
        context.close()


def test_the_tap_follows_a_restarted_task(worker: RestWorker, pipeline: Pipeline) -> None:
    """A task restarted while a watcher reads is a new runner: the tap moves to it."""
    runners = worker.process.herder.worker.runners
    before = runners(pipeline.source)[0]
    client = ConnectClient(worker.url, auth=(USER, PASSWORD), timeout=WAIT_S)
    with client:
        stream = client.tap(pipeline.source, "read", rate=20)
        assert next(stream)[0] == "tap"
        assert next(stream)[0] == "record"
        restarted = worker.http.post(f"/connectors/{pipeline.source}/tasks/0/restart")
        assert restarted.status_code == 204
        wait_for(
            lambda: runners(pipeline.source).get(0) not in (None, before), WAIT_S, "a new runner"
        )
        after = runners(pipeline.source)[0]
        wait_for(lambda: getattr(after, "tap", None) is not None, WAIT_S, "the tap on it")
        records = 0
        for event, _ in stream:
            records += event == "record"
            if records == 3:
                break
        stream.close()
    assert before.tap is None
