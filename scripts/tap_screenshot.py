"""A screenshot of the console's record inspector, for the guide (docs/guide/see-a-pipeline.md).

Starts the embedded broker and a worker (as the tests do), a datagen source (the ``orders``
quickstart at 20 records/s) and a FileStream sink reading it through one transformation, opens
``/ui/connectors/orders-to-file/tap`` in headless Chromium (:mod:`connectrt.testing.browser`) at
the transformation's stage, waits for three records and saves the page. Run from the checkout:

    .venv/bin/python scripts/tap_screenshot.py [output file]

The default output is docs/images/console-record-inspector.png. Takes about half a minute.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from connectrt.broker import EmbeddedBroker
from connectrt.testing import browser as chromium
from connectrt.testing.harness import create_topic
from connectrt.testing.rest import RestWorker, start_rest_worker, wait_for

SINK = "orders-to-file"


def _pipeline(worker: RestWorker, bootstrap: str) -> None:
    create_topic(bootstrap, "orders", partitions=1)
    configs = {
        "orders-datagen": {
            "connector.class": "DatagenConnector",
            "kafka.topic": "orders",
            "quickstart": "orders",
            "rate": "20",
        },
        SINK: {
            "connector.class": "FileStreamSink",
            "topics": "orders",
            "file": "orders.txt",
            "transforms": "stamp",
            "transforms.stamp.type": "org.apache.kafka.connect.transforms.InsertField$Value",
            "transforms.stamp.static.field": "pipeline",
            "transforms.stamp.static.value": "orders-to-file",
        },
    }
    for name, config in configs.items():
        response = worker.http.post("/connectors", json={"name": name, "config": config})
        if response.status_code != 201:
            raise SystemExit(f"creating {name}: {response.status_code} {response.text}")

    def running() -> bool:
        tasks = worker.http.get(f"/connectors/{SINK}/status").json().get("tasks", [])
        return bool(tasks) and tasks[0]["state"] == "RUNNING"

    wait_for(running, 90, "the sink task RUNNING")


def _shoot(worker: RestWorker, out: Path) -> None:
    with chromium.launched() as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 860})
        context.set_default_timeout(60_000)
        page = context.new_page()
        page.goto(f"{worker.url}/ui/connectors/{SINK}/tap")
        page.locator("#tap-stage").select_option("transform:stamp")
        page.locator("#tap-state", has_text="watching transform:stamp").wait_for()
        page.locator(".tap-event", has_text="transform:stamp").nth(2).wait_for()
        page.locator("#tap-toggle").click()  # paused: the list holds still for the picture
        page.screenshot(path=str(out))
        context.close()


def main(argv: list[str]) -> int:
    out = Path(argv[1] if len(argv) > 1 else "docs/images/console-record-inspector.png").resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, EmbeddedBroker() as broker:
        os.chdir(tmp)
        worker = start_rest_worker(broker.bootstrap_servers)
        try:
            _pipeline(worker, broker.bootstrap_servers)
            _shoot(worker, out)
        finally:
            worker.delete_connectors()
            worker.stop()
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
