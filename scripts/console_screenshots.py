"""Screenshots of the web console and the API docs for docs/operators/console.md.

Starts the embedded broker and a worker (as the tests do), creates a small set of connectors (a
datagen source at 200 records/s, a FileStream sink reading it, a sink whose malformed records go
to a dead letter queue, a source whose task fails) and three versions of a subject in the
built-in schema registry, waits until the throughput charts have a minute of samples, then
saves PNGs of the main pages with headless Chromium
(:mod:`connectrt.testing.browser`). Run from the checkout:

    .venv/bin/python scripts/console_screenshots.py [output directory]

The default output directory is docs/operators/images. Takes about two minutes.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

import connectrt
from connectrt.broker import EmbeddedBroker
from connectrt.testing import browser as chromium
from connectrt.testing.harness import create_topic, produce
from connectrt.testing.rest import RestWorker, start_rest_worker, wait_for

CHECKOUT = str(Path(connectrt.__file__).resolve().parents[1]) + "/"
SAMPLING_SECONDS = 75  # the worker samples every 5 s: enough points for a readable chart
SUBJECT = "shop.items-value"
REGISTRY = {
    "schema.registry.enable": "true",
    "schema.registry.listener": "http://127.0.0.1:0",
    "schema.registry.topic": "_schemas",
}


def _create(worker: RestWorker, name: str, config: dict[str, str]) -> None:
    response = worker.http.post("/connectors", json={"name": name, "config": config})
    if response.status_code != 201:
        raise SystemExit(f"creating {name}: {response.status_code} {response.text}")


def _connectors(worker: RestWorker, workdir: Path, bootstrap: str) -> None:
    create_topic(bootstrap, "orders", partitions=1)
    create_topic(bootstrap, "payments", partitions=1)
    produce(bootstrap, "payments", [b'{"id": 1}', b"not json", b'{"id": 2}', b"{broken"])
    (workdir / "orders.txt").touch()
    _create(
        worker,
        "orders-datagen",
        {
            "connector.class": "DatagenConnector",
            "kafka.topic": "orders",
            "quickstart": "orders",
            "rate": "200",
        },
    )
    _create(
        worker,
        "orders-to-file",
        {"connector.class": "FileStreamSink", "topics": "orders", "file": "orders.txt"},
    )
    _create(
        worker,
        "payments-lenient",
        {
            "connector.class": "FileStreamSink",
            "topics": "payments",
            "file": "payments.txt",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": "payments-dlq",
            "errors.deadletterqueue.topic.replication.factor": "1",
        },
    )
    _create(
        worker,
        "broken-source",
        {"connector.class": "FileStreamSource", "file": str(workdir), "topic": "broken"},
    )


def _record(*fields: tuple[str, Any]) -> str:
    return json.dumps(
        {
            "type": "record",
            "name": "items",
            "fields": [
                {"name": n, "type": t, **({"default": None} if isinstance(t, list) else {})}
                for n, t in fields
            ],
        }
    )


def _subject(worker: RestWorker) -> None:
    """Three versions of :data:`SUBJECT`: a column added, then one dropped and one retyped."""
    name = ("name", ["null", "string"])
    note = ("note", ["null", "string"])
    versions = [
        _record(("id", "long"), name, ("qty", "int")),
        _record(("id", "long"), name, ("qty", "int"), note),
        _record(("id", "long"), ("qty", "string"), note),
    ]
    with httpx.Client(base_url=worker.process.registry.url, timeout=30) as registry:
        config = f"/config/{quote(SUBJECT)}"
        registry.put(config, json={"compatibility": "NONE"}).raise_for_status()
        for text in versions:
            path = f"/subjects/{quote(SUBJECT)}/versions"
            registry.post(path, json={"schema": text}).raise_for_status()
        registry.put(config, json={"compatibility": "BACKWARD"}).raise_for_status()


def shoot_schema(page: Any, worker: RestWorker, out: Path) -> None:
    """The subject's page: its versions and the difference between the last two."""
    page.goto(f"{worker.url}/ui/schemas/{quote(SUBJECT)}")
    page.locator("#diff-lines").wait_for()
    page.screenshot(path=str(out / "console-schema-diff.png"), full_page=True)


def _shoot(worker: RestWorker, out: Path) -> None:
    playwright, browser = chromium.launch()
    try:
        context = browser.new_context(viewport={"width": 1280, "height": 860})
        context.set_default_timeout(60_000)
        page = context.new_page()

        page.goto(f"{worker.url}/ui")
        page.locator("#connector-table").wait_for()
        page.screenshot(path=str(out / "console-overview.png"))

        page.goto(f"{worker.url}/ui/connectors/orders-to-file")
        page.locator("#charts figure.chart").first.wait_for()
        page.locator("#offsets-table").wait_for()
        page.screenshot(path=str(out / "console-connector.png"), full_page=True)

        page.goto(f"{worker.url}/ui/connectors/broken-source")
        page.locator("details.trace pre").first.wait_for()
        # The trace names files of this checkout: shorten them, so the image names no path of
        # the machine it was made on (the status refresh is stopped first, so it stays so).
        page.evaluate(
            """root => {
                const status = document.querySelector('#status');
                const still = status.cloneNode(true);
                still.removeAttribute('hx-get');
                still.removeAttribute('hx-trigger');
                status.replaceWith(still);
                document.querySelectorAll('details.trace pre').forEach(
                    p => { p.textContent = p.textContent.split(root).join('.../'); });
            }""",
            CHECKOUT,
        )
        page.screenshot(path=str(out / "console-failed-task.png"))

        page.goto(f"{worker.url}/ui/new?plugin=FileStreamSink")
        page.locator('[data-key="name"]').fill("orders-copy")
        page.locator('[data-key="tasks.max"]').fill("two")
        page.locator('[data-errors-for="tasks.max"]').filter(has_text="tasks.max").wait_for()
        page.screenshot(path=str(out / "console-new-connector.png"))

        shoot_schema(page, worker, out)

        page.goto(f"{worker.url}/docs")
        page.locator(".opblock-summary-path").first.wait_for()
        page.screenshot(path=str(out / "console-api-docs.png"))
        context.close()
    finally:
        chromium.close(playwright, browser)


def main(argv: list[str]) -> int:
    out = Path(argv[1] if len(argv) > 1 else "docs/operators/images").resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, EmbeddedBroker() as broker:
        os.chdir(tmp)
        worker = start_rest_worker(broker.bootstrap_servers, **REGISTRY)
        try:
            _connectors(worker, Path(tmp), broker.bootstrap_servers)
            _subject(worker)
            wait_for(
                lambda: (
                    worker.http.get("/connectors/orders-to-file/status").json()["tasks"][0]["state"]
                    == "RUNNING"
                ),
                90,
                "the sink task RUNNING",
            )
            time.sleep(SAMPLING_SECONDS)  # not a synchronisation: the charts need history
            _shoot(worker, out)
        finally:
            worker.delete_connectors()
            worker.stop()
    for png in sorted(out.glob("console-*.png")):
        print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
