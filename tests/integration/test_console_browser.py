"""The web console and the API docs in a real browser: headless Chromium (Debian's, installed
by :mod:`connectrt.testing.browser` when missing) driven by Playwright, against a real worker
(embedded broker, real HTTP).

Every request the pages make is recorded: none may leave the worker's origin (no CDN), and the
ones to other hosts are aborted, so a page that needed the internet would fail here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest
from playwright.sync_api import Error as PlaywrightError

from connectrt.broker import EmbeddedBroker
from connectrt.listener.auth import hash_password
from connectrt.testing import browser as chromium
from connectrt.testing.rest import RestWorker, start_rest_worker

pytestmark = [pytest.mark.integration, pytest.mark.browser]

WAIT_MS = 60_000  # a sink group join or a task start on a busy machine
SECRET = "hunter2-console"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium.launched() as launched:
        yield launched


@pytest.fixture(scope="module")
def worker(broker: EmbeddedBroker) -> Iterator[RestWorker]:
    w = start_rest_worker(broker.bootstrap_servers)
    try:
        yield w
    finally:
        w.stop()


@pytest.fixture(autouse=True)
def remove_connectors(worker: RestWorker) -> Iterator[None]:
    yield
    worker.delete_connectors()


class OffsiteGuard:
    """Records every request of a browser context; aborts and remembers those that leave
    ``origin``."""

    def __init__(self, context: Any, origin: str) -> None:
        self.origin = origin
        self.requests: list[str] = []
        self.offsite: list[str] = []
        context.route("**/*", self._route)

    def _route(self, route: Any) -> None:
        url = route.request.url
        self.requests.append(url)
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob") or f"{parts.scheme}://{parts.netloc}" == self.origin:
            route.continue_()
        else:
            self.offsite.append(url)
            route.abort()


@pytest.fixture
def page(browser: Any, worker: RestWorker) -> Iterator[tuple[Any, OffsiteGuard]]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(WAIT_MS)
    guard = OffsiteGuard(context, worker.url)
    try:
        yield context.new_page(), guard
    finally:
        context.close()
    assert guard.offsite == [], f"requests left the worker: {guard.offsite}"


def _state(page: Any, state: str) -> None:
    page.locator("#status .connector-state .state", has_text=state).wait_for()


def test_create_through_the_form_watch_running_pause_and_edit(
    page: tuple[Any, OffsiteGuard], worker: RestWorker, tmp_path: Path, unique_name: Any
) -> None:
    p, guard = page
    name, topic = unique_name("ui-src"), unique_name("ui-topic")
    source = tmp_path / "in.txt"
    source.write_text("".join(f"line {i}\n" for i in range(200)))

    p.goto(f"{worker.url}/ui")
    p.get_by_text("No connectors yet").wait_for()
    p.click("#nav-new")
    p.get_by_role("link", name="FileStreamSourceConnector").click()
    # data-ready: console.js has put its listeners on the form (it does on DOMContentLoaded)
    p.locator("form[data-config-form][data-ready]").wait_for()

    def field(key: str) -> Any:
        return p.locator(f'[data-key="{key}"]')

    def errors(key: str) -> Any:
        return p.locator(f'[data-errors-for="{key}"]')

    # Live validation through the validate endpoint: a bad value is flagged as typed...
    field("tasks.max").fill("many")
    errors_text = errors("tasks.max")
    errors_text.filter(has_text=re.compile(r"\S")).wait_for()
    assert "tasks.max" in errors_text.inner_text() or "integer" in errors_text.inner_text()
    assert "error" in p.locator("#form-summary").inner_text()
    # ... and cleared once fixed.
    field("tasks.max").fill("1")
    p.wait_for_function(
        "() => document.querySelector('[data-errors-for=\"tasks.max\"]').textContent === ''"
    )
    field("name").fill(name)
    field("file").fill(str(source))
    field("topic").fill(topic)
    p.locator("#form-summary", has_text="The configuration is valid.").wait_for()
    p.get_by_role("button", name="Create connector").click()

    p.wait_for_url(re.compile(r"/ui/connectors/"))
    assert p.locator("h1").inner_text().startswith(name)
    _state(p, "RUNNING")
    p.locator("#tasks tr[data-task='0'] .state", has_text="RUNNING").wait_for()
    assert worker.http.get(f"/connectors/{name}/config").json()["topic"] == topic

    # Pause, then resume, through the REST API from the page's buttons.
    p.get_by_role("button", name="Pause").click()
    _state(p, "PAUSED")
    assert worker.http.get(f"/connectors/{name}/status").json()["connector"]["state"] == "PAUSED"
    p.get_by_role("button", name="Resume").click()
    _state(p, "RUNNING")

    # The throughput chart fills from the worker's samples (every 5 s).
    p.locator("#charts figure.chart").first.wait_for()
    p.locator("#charts figure.chart svg polyline").first.wait_for(state="attached")
    # ... with the task's end-to-end latency (poll -> acknowledged) once its records are in Kafka.
    p.locator(
        "#charts figure.chart .latency .p99", has_text=re.compile(r"\d ms|\d s")
    ).first.wait_for()
    assert re.search(r"\d", p.locator("#charts figure.chart .latency .p50").first.inner_text())
    # Source offsets appear once committed.
    p.wait_for_function(
        "() => { htmx.trigger('#offsets', 'refresh');"
        " return !!document.querySelector('#offsets-table'); }",
        polling=1000,
    )

    # Edit the config: the form is prefilled; the change reaches the connector.
    p.get_by_role("link", name="Edit config").click()
    p.locator("form[data-config-form][data-mode='edit'][data-ready]").wait_for()
    assert field("topic").input_value() == topic
    field("batch.size").fill("50")
    p.get_by_role("button", name="Save config").click()
    p.wait_for_url(re.compile(r"/ui/connectors/[^/]+$"))
    p.locator("#config tr", has_text="batch.size").filter(has_text="50").wait_for()
    assert worker.http.get(f"/connectors/{name}/config").json()["batch.size"] == "50"

    # Delete asks for confirmation, then returns to the overview.
    p.on("dialog", lambda dialog: dialog.accept())
    p.get_by_role("button", name="Delete").click()
    p.wait_for_url(f"{worker.url}/ui")
    p.get_by_text("No connectors yet").wait_for()
    assert name not in worker.http.get("/connectors").json()
    assert any(u.endswith("/ui/static/htmx.min.js") for u in guard.requests)


def test_a_field_typed_before_the_script_ran_is_validated_once_it_runs(
    page: tuple[Any, OffsiteGuard], worker: RestWorker
) -> None:
    """A slow page: the form is on screen but ``console.js`` has not run yet (held here until
    something was typed). What was typed meanwhile is validated as soon as it runs, not at
    the next keystroke."""
    p, _guard = page
    held: list[Any] = []
    p.route("**/ui/static/console.js", lambda route: held.append(route))
    p.goto(f"{worker.url}/ui/new?plugin=FileStreamSourceConnector", wait_until="commit")
    p.locator('form[data-config-form] [data-key="tasks.max"]').fill("many")
    assert len(held) == 1 and p.locator("form[data-config-form][data-ready]").count() == 0
    held[0].continue_()
    p.locator("form[data-config-form][data-ready]").wait_for()
    p.locator('[data-errors-for="tasks.max"]').filter(has_text=re.compile(r"\S")).wait_for()
    assert "error" in p.locator("#form-summary").inner_text()


def _create_source_with_secret(worker: RestWorker, name: str, file: Path, topic: str) -> None:
    """A FileStreamSource on ``file`` whose config holds ``SECRET`` in a password key."""
    created = worker.http.post(
        "/connectors",
        json={
            "name": name,
            "config": {
                "connector.class": "FileStreamSource",
                "file": str(file),
                "topic": topic,
                "archive.password": SECRET,
            },
        },
    )
    assert created.status_code == 201, created.text


def test_failed_task_trace_and_errors_are_shown(
    page: tuple[Any, OffsiteGuard], worker: RestWorker, tmp_path: Path, unique_name: Any
) -> None:
    p, _ = page
    name = unique_name("ui-failing")
    _create_source_with_secret(worker, name, tmp_path, unique_name("t"))  # a directory: fails
    p.goto(f"{worker.url}/ui")
    row = p.locator(f'#connector-table tr[data-connector="{name}"]')
    row.locator("text=1 failed").wait_for()
    row.get_by_role("link", name=name).click()
    p.locator("#tasks tr[data-task='0'] .state", has_text="FAILED").wait_for()
    trace = p.locator("details.trace pre").first
    assert "Is a directory" in trace.inner_text()
    # Secrets are shown as the REST API shows them: hidden, on the page and in the edit form.
    p.locator("#config tr", has_text="archive.password").filter(has_text="[hidden]").wait_for()
    assert SECRET not in p.content()
    p.get_by_role("link", name="Edit config").click()
    assert p.locator('[data-key="archive.password"]').input_value() == "[hidden]"
    assert SECRET not in p.content()
    # Saving the form unchanged keeps the stored secret (and the key outside the definition).
    p.get_by_role("button", name="Save config").click()
    p.wait_for_url(re.compile(r"/ui/connectors/[^/]+$"))
    stored = worker.process.herder.config_store.snapshot().connectors[name]
    assert stored["archive.password"] == SECRET

    # A rejected action is reported with the REST API's message: a source's offsets cannot
    # be reset to an offset number (400).
    p.on("dialog", lambda dialog: dialog.accept())
    p.select_option("form[data-offset-reset] select[name=to]", "offset")
    p.fill("form[data-offset-reset] input[name=offset]", "3")
    p.click("form[data-offset-reset] button[type=submit]")
    toast = p.locator("#toast")
    toast.wait_for(state="visible")
    assert toast.inner_text() and "HTTP" not in toast.inner_text()[:5]


def test_forms_cannot_be_submitted_before_the_script_runs(
    browser: Any, worker: RestWorker, tmp_path: Path, unique_name: Any
) -> None:
    """Until console.js has attached its handlers, a click on Save (or Enter in a field) would
    be a plain browser submission: the config, passwords included, in a URL. On a busy
    machine a user (and this suite) can click that early. Without JavaScript at all the
    buttons stay disabled and the forms say POST, so no submission can put values in a URL."""
    name = unique_name("ui-nojs")
    _create_source_with_secret(worker, name, tmp_path / "in.txt", unique_name("t"))
    context = browser.new_context(java_script_enabled=False)
    context.set_default_timeout(WAIT_MS)
    guard = OffsiteGuard(context, worker.url)
    try:
        p = context.new_page()
        pages = {
            f"{worker.url}/ui/connectors/{name}/edit": "form[data-config-form]",
            f"{worker.url}/ui/connectors/{name}": "form[data-offset-reset]",
        }
        for url, selector in pages.items():
            p.goto(url)
            form = p.locator(selector)
            assert form.get_attribute("method") == "post"
            assert form.locator("button[type=submit]").is_disabled()
            form.locator("input:not([type=hidden])").first.press("Enter")
            p.wait_for_timeout(500)
            assert p.url == url  # implicit submission is blocked by the disabled default button
        assert not [u for u in guard.requests if "?" in u], guard.requests
    finally:
        context.close()


def test_api_docs_render_offline(page: tuple[Any, OffsiteGuard], worker: RestWorker) -> None:
    p, guard = page
    p.goto(f"{worker.url}/docs")
    p.locator(".swagger-ui .info .title", has_text="connectrt").wait_for()
    p.locator(".opblock-summary-path", has_text="/connectors/{connector}/config").first.wait_for()
    assert any(u.endswith("/docs/assets/swagger-ui-bundle.js") for u in guard.requests)
    assert any(u.endswith("/docs/assets/swagger-ui.css") for u in guard.requests)
    # "Try it out" works from the page: a live GET through Swagger UI.
    p.locator(".opblock-summary-path", has_text=re.compile(r"^/connectors$")).first.click()
    p.get_by_role("button", name="Try it out").first.click()
    with p.expect_response(re.compile(r"/connectors(\?.*)?$")) as answered:
        p.get_by_role("button", name="Execute").first.click()
    assert answered.value.status == 200


def _refused(context: Any, url: str) -> bool:
    """Whether the browser was refused ``url``: Chromium either shows the 401 answer or, when
    it gave up on the authentication prompt, fails the navigation with an auth error."""
    page = context.new_page()
    try:
        response = page.goto(url)
    except PlaywrightError as e:
        return "ERR_INVALID_AUTH_CREDENTIALS" in str(e)
    status = response.status if response is not None else None
    return status == 401 and "Connectors" not in page.content()


def test_console_asks_for_credentials_with_basic_auth(
    browser: Any, broker: EmbeddedBroker, tmp_path: Path
) -> None:
    credentials = tmp_path / "users"
    credentials.write_text(f"ops:{hash_password('s3cret', iterations=1000)}\n")
    secured = start_rest_worker(
        broker.bootstrap_servers,
        **{"rest.auth.type": "basic", "rest.auth.credentials.file": str(credentials)},
    )
    try:
        anonymous = browser.new_context()
        try:
            for path in ("/ui", "/ui/static/htmx.min.js", "/docs", "/docs/assets/swagger-ui.css"):
                response = anonymous.request.get(f"{secured.url}{path}")
                assert response.status == 401, path
                # The challenge is what makes a browser ask for a user name and password.
                assert response.headers["www-authenticate"].startswith("Basic")
            # Headless, nobody answers the browser's prompt: the page is refused.
            assert _refused(anonymous, f"{secured.url}/ui")
        finally:
            anonymous.close()
        wrong = browser.new_context(http_credentials={"username": "ops", "password": "nope"})
        try:
            # Chromium answers the challenge with the wrong password and is refused again.
            assert _refused(wrong, f"{secured.url}/ui")
        finally:
            wrong.close()
        signed_in = browser.new_context(http_credentials={"username": "ops", "password": "s3cret"})
        signed_in.set_default_timeout(WAIT_MS)
        try:
            page = signed_in.new_page()
            response = page.goto(f"{secured.url}/ui")
            assert response is not None and response.status == 200
            page.get_by_text("No connectors yet").wait_for()
            # The page's own requests (htmx polling) carry the credentials too.
            with page.expect_response(re.compile(r"/ui/fragments/connectors$")) as polled:
                pass
            assert polled.value.status == 200
        finally:
            signed_in.close()
    finally:
        secured.stop()


ATTACK_PAGE = """<!doctype html>
<html><body>
<form id="plain" method="post" enctype="text/plain" action="{worker}/connectors">
  <input name='{{"name": "csrf-form-plain", "config": {config}, "pad": "' value='"}}'>
</form>
<form id="urlencoded" method="post" action="{worker}/connectors" target="sink">
  <input name="name" value="csrf-form-urlencoded">
</form>
<iframe name="sink"></iframe>
<script>
  const config = {config};
  window.attack = async () => {{
    const out = [];
    const send = async (name, init) => {{
      try {{
        await fetch("{worker}/connectors", {{method: "POST", mode: "no-cors", ...init}});
        out.push(name + ": sent");
      }} catch (e) {{ out.push(name + ": " + e); }}
    }};
    await send("fetch-text", {{headers: {{"Content-Type": "text/plain"}},
      body: JSON.stringify({{name: "csrf-fetch-text", config: config}})}});
    await send("fetch-blob", {{body: new Blob([JSON.stringify({{name: "csrf-fetch-blob",
      config: config}})])}});  // a Blob without a type: no Content-Type header at all
    await send("fetch-json", {{mode: "cors", headers: {{"Content-Type": "application/json"}},
      body: JSON.stringify({{name: "csrf-fetch-json", config: config}})}});
    return out;
  }};
</script>
</body></html>
"""


@pytest.fixture
def attacker_site(worker: RestWorker, tmp_path: Path) -> Iterator[str]:
    """A second local HTTP server, on another port (another origin), serving a page that
    tries to create connectors on the worker."""
    import http.server
    import threading

    config = orjson.dumps(
        {"connector.class": "FileStreamSource", "file": str(tmp_path / "x.txt"), "topic": "csrf"}
    ).decode()
    (tmp_path / "index.html").write_text(ATTACK_PAGE.format(worker=worker.url, config=config))

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(tmp_path), **kwargs)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_page_from_another_origin_cannot_create_connectors(
    browser: Any, worker: RestWorker, attacker_site: str
) -> None:
    context = browser.new_context()
    context.set_default_timeout(WAIT_MS)
    answers: list[tuple[str, int]] = []

    def record(response: Any) -> None:
        if response.url.startswith(worker.url):
            answers.append((response.request.method, response.status))

    context.on("response", record)
    try:
        p = context.new_page()
        p.goto(f"{attacker_site}/index.html")
        outcome = p.evaluate("window.attack()")
        # fetch() with text/plain and with an untyped Blob are "simple" requests: the browser
        # sends them without asking. The JSON one needs a CORS preflight, which the worker
        # does not grant to this origin, so the browser never sends the POST.
        assert outcome[:2] == ["fetch-text: sent", "fetch-blob: sent"], outcome
        assert "TypeError" in outcome[2], outcome
        p.locator("#urlencoded").evaluate("form => form.submit()")
        p.wait_for_timeout(1000)
        with p.expect_navigation():
            p.locator("#plain").evaluate("form => form.submit()")
        assert '"error_code":403' in p.content().replace(" ", "")
    finally:
        context.close()
    posts = [status for method, status in answers if method == "POST"]
    assert len(posts) >= 3 and set(posts) == {403}, answers  # the requests did arrive
    assert worker.http.get("/connectors").json() == []


def test_the_console_on_its_own_origin_still_writes(
    page: tuple[Any, OffsiteGuard], worker: RestWorker, tmp_path: Path, unique_name: Any
) -> None:
    """The browser sends Origin with the console's own requests: the worker's own origin
    passes, for the config form's JSON and for htmx's body-less actions alike."""
    p, _ = page
    name = unique_name("ui-own")
    _create_source_with_secret(worker, name, tmp_path / "in.txt", unique_name("t"))
    p.goto(f"{worker.url}/ui/connectors/{name}")
    p.get_by_role("button", name="Pause").click()
    _state(p, "PAUSED")
    status = p.evaluate(
        """async ([name, file]) => (await fetch("/connectors", {method: "POST",
             headers: {"Content-Type": "application/json"},
             body: JSON.stringify({name: name, config: {"connector.class": "FileStreamSource",
                                                          file: file, topic: "own"}})})).status""",
        [name + "-2", str(tmp_path / "in2.txt")],
    )
    assert status == 201
    assert name + "-2" in worker.http.get("/connectors").json()
