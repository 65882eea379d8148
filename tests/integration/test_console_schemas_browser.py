"""The console's schema pages in a real browser (headless Chromium through Playwright) against
a real worker with its built-in schema registry (embedded broker, real HTTP): a subject's
versions, and the difference between two of them (fields, the registry's verdict, the text).
The worker asks for basic auth, on its registry too: the pages read the registry with the
browser's credentials.

No request may leave the worker's origin but the registry's own (the pages are rendered by
the worker, which reads the registry server-side): anything else is aborted and fails the test.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.listener.auth import hash_password
from connectrt.testing import browser as chromium
from connectrt.testing.rest import RestWorker, rest_worker_props, running_rest_worker

pytestmark = [pytest.mark.integration, pytest.mark.browser]

WAIT_MS = 60_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium.launched() as launched:
        yield launched


USER, PASSWORD = "ops", "s3cret"


@pytest.fixture(scope="module")
def worker(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RestWorker]:
    credentials = tmp_path_factory.mktemp("users") / "users"
    credentials.write_text(f"{USER}:{hash_password(PASSWORD, iterations=1000)}\n")
    props = rest_worker_props(broker.bootstrap_servers)
    props.update(
        {
            "rest.auth.type": "basic",
            "rest.auth.credentials.file": str(credentials),
            "schema.registry.enable": "true",
            "schema.registry.listener": "http://127.0.0.1:0",
            "schema.registry.topic": f"schemas-console-{uuid.uuid4().hex[:8]}",
        }
    )
    with running_rest_worker(broker.bootstrap_servers, props) as running:
        yield running


@pytest.fixture
def page(browser: Any, worker: RestWorker) -> Iterator[Any]:
    context = browser.new_context(
        viewport={"width": 1280, "height": 900},
        http_credentials={"username": USER, "password": PASSWORD},
    )
    context.set_default_timeout(WAIT_MS)
    offsite: list[str] = []

    def route(handle: Any) -> None:
        parts = urlsplit(handle.request.url)
        if f"{parts.scheme}://{parts.netloc}" == worker.url or parts.scheme in ("data", "blob"):
            handle.continue_()
        else:
            offsite.append(handle.request.url)
            handle.abort()

    context.route("**/*", route)
    try:
        yield context.new_page()
    finally:
        context.close()
    assert offsite == [], f"requests left the worker: {offsite}"


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


def test_a_subjects_versions_and_the_difference_between_two(page: Any, worker: RestWorker) -> None:
    subject = f"console-{uuid.uuid4().hex[:8]}-value"
    versions = [
        _record(("id", "long"), ("qty", "int")),
        _record(("id", "long"), ("qty", "int"), ("note", ["null", "string"])),
        _record(("id", "long"), ("qty", "string"), ("note", ["null", "string"])),
    ]
    registry_url = worker.process.registry.url
    with httpx.Client(base_url=registry_url, auth=(USER, PASSWORD), timeout=30) as registry:
        assert httpx.get(f"{registry_url}/subjects").status_code == 401  # the same security
        path = f"/config/{quote(subject)}"
        assert registry.put(path, json={"compatibility": "NONE"}).status_code == 200
        for text in versions:
            answer = registry.post(f"/subjects/{quote(subject)}/versions", json={"schema": text})
            assert answer.status_code == 200, answer.text
        assert registry.put(path, json={"compatibility": "BACKWARD"}).status_code == 200

    page.goto(f"{worker.url}/ui")
    page.click("#nav-schemas")
    page.get_by_role("link", name=subject).click()
    rows = page.locator("#versions tbody tr")
    rows.nth(2).wait_for()
    assert rows.count() == 3
    assert page.locator("#level").inner_text() == "BACKWARD"
    assert "note" in rows.nth(1).inner_text() and "note" not in rows.nth(0).inner_text()

    # By default: the latest version against the one before.
    assert page.locator("#diff-title").inner_text() == "Version 2 → version 3"
    qty = page.locator('#diff-fields tr[data-field="qty"]')
    assert "changed" in qty.inner_text() and "int" in qty.inner_text()
    assert "string" in qty.inner_text()
    assert page.locator('#diff-fields tr[data-field="note"]').count() == 0
    assert "incompatible" in page.locator("#diff-verdict").inner_text()
    assert "qty" in page.locator("#diff-messages").inner_text()
    added = page.locator("#diff-lines .diff-add")
    assert any('"string"' in t for t in added.all_inner_texts())

    # Two versions of one's choosing.
    page.select_option("#from", "1")
    page.select_option("#to", "2")
    page.click("#compare button[type=submit]")
    page.locator("#diff-title", has_text="Version 1 → version 2").wait_for()
    note = page.locator('#diff-fields tr[data-field="note"]')
    assert "added" in note.inner_text()
    assert page.locator('#diff-fields tr[data-field="qty"]').count() == 0
    verdict = page.locator("#diff-verdict").inner_text()
    assert "compatible" in verdict and "incompatible" not in verdict

    # An unknown subject is a 404 page that says so.
    answer = page.goto(f"{worker.url}/ui/schemas/no-such-subject")
    assert answer is not None and answer.status == 404
    assert "No subject no-such-subject" in page.locator(".notice").inner_text()
