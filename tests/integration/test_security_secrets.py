"""No resolved or secret value in any answer, trace, status record or log line (issue 27, attacks
1, 7 and the config echo of 11), replayed over real HTTP against a ``connectrt worker``
subprocess with config providers on, with and without ``allowed.paths``/``allowlist.pattern``.

Planted secrets: an environment variable and a properties-file value that contain a backslash
and quotes, the worker's ``HOME``, ``/etc/passwd``'s root entry, a literal ``*.password``, a
PASSWORD-typed key with an innocent name, a JDBC URL password, a JAAS config and a Schema
Registry user info. The attacks: provider references in ``connector.class``, converters,
transforms and int-typed keys at create, update, patch and validate; a config without
``connector.class``; a connector and a task that fail with the secrets (as is and
``repr``-escaped) in their errors and log lines; a transform whose error quoting them goes to
a dead letter queue. Then every secret, in every form (raw, JSON-escaped, ``repr``-escaped,
URL-encoded), is searched for in every REST body and header, the console pages, the status
topic, the dead letter queue (values and headers) and the worker's whole log output.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, quote_plus

import httpx
import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.ports import free_port
from connectrt.testing.harness import create_topic, read_topic

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PLUGIN_SOURCE = ROOT / "tests" / "plugins" / "leaky_secrets.py"
PROVIDERS = "org.apache.kafka.common.config.provider"
STRING = "org.apache.kafka.connect.storage.StringConverter"
_COMMAND = (sys.executable, "-m", "connectrt.cli", "--log-level", "DEBUG", "worker")


def forms(secret: str) -> set[str]:
    """The encodings a secret must not appear in (the test's own, independent of the code's)."""
    out = {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        secret.replace("\\", "\\\\"),  # repr-escaped: backslashes doubled
        repr(secret)[1:-1],
        json.dumps(repr(secret)[1:-1])[1:-1],  # a repr inside a JSON string
        quote(secret, safe=""),
        quote_plus(secret),
    }
    return {f for f in out if f}


def _etc_passwd_root() -> str | None:
    """What ``${file:/etc/passwd:root}`` resolves to (``x:0:0:root:...``), if anything."""
    try:
        for line in Path("/etc/passwd").read_text().splitlines():
            if line.startswith("root:"):
                return line[len("root:") :]
    except OSError:
        pass
    return None


@dataclass
class Planted:
    """The secrets of one run, each unique so that a hit cannot be a coincidence."""

    root: Path
    run: str = field(default_factory=lambda: uuid.uuid4().hex[:10])

    def __post_init__(self) -> None:
        self.secrets_dir = self.root / "secrets"
        self.secrets_dir.mkdir()
        self.home = self.root / f"home{self.run}"
        self.home.mkdir()
        self.env_name = f"CONNECTRT_SEC_{self.run.upper()}"
        # Backslash, quotes, a slash and a non-ASCII letter: every encoding differs from it.
        self.env = f"envS\\{self.run}/q'd\"\u00e9"
        self.file = f"fileS\\{self.run}\\end"
        self.properties = self.secrets_dir / "app.properties"
        # .properties escapes: a doubled backslash is one backslash.
        self.properties.write_text("token=" + self.file.replace("\\", "\\\\") + "\n")
        self.password = f"pw\\lit{self.run}"
        self.blob = f"blob{self.run}"
        self.url_password = f"urlpw{self.run}"
        self.jaas = f"jaas{self.run}"
        self.user_info = f"bai{self.run}"

    @property
    def env_ref(self) -> str:
        return f"${{env:{self.env_name}}}"

    @property
    def file_ref(self) -> str:
        return f"${{file:{self.properties}:token}}"

    def values(self) -> dict[str, str]:
        out = {
            "env": self.env,
            "file": self.file,
            "HOME": f"home{self.run}",  # the resolved HOME is <tmp>/home<run>
            "password": self.password,
            "PASSWORD-typed": self.blob,
            "url password": self.url_password,
            "jaas": self.jaas,
            "user info": self.user_info,
        }
        passwd = _etc_passwd_root()
        if passwd:
            out["/etc/passwd"] = passwd
        return out

    def literal_secrets(self) -> dict[str, str]:
        """Secret-typed and secret-named keys with literal values."""
        return {
            "db.password": self.password,
            "auth.blob": self.blob,
            "jdbc.url": f"jdbc:postgresql://alice:{self.url_password}@db.invalid/app",
            "note.sasl.jaas.config": (
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'username="alice" password="{self.jaas}";'
            ),
            "value.converter.basic.auth.user.info": f"alice:{self.user_info}",
        }

    def leaks(self, text: str) -> list[str]:
        return [
            f"{what} as {form!r}"
            for what, secret in self.values().items()
            for form in forms(secret)
            if form in text
        ]


class WorkerProcess:
    """A ``connectrt worker`` subprocess at DEBUG, its whole output kept in ``log``."""

    def __init__(self, props: Path, log: Path, url: str, env: dict[str, str]) -> None:
        self.props, self.log, self.url, self.env = props, log, url, env
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [*_COMMAND, str(self.props)],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                env=self.env,
            )
        deadline = time.monotonic() + 120
        while True:
            assert self.process.poll() is None, self.log.read_text()[-3000:]
            try:
                if httpx.get(f"{self.url}/connectors", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("timed out after 120 s waiting for the worker's REST API")
            time.sleep(0.3)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)


@dataclass
class Setup:
    planted: Planted
    worker: WorkerProcess
    http: httpx.Client
    bootstrap: str
    status_topic: str
    restricted: bool
    seen: list[tuple[str, str]] = field(default_factory=list)  # (where, text)

    def call(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        response = self.http.request(method, path, **kwargs)  # type: ignore[arg-type]
        headers = "\n".join(f"{k}: {v}" for k, v in response.headers.items())
        self.seen.append((f"{method} {path} -> {response.status_code}", headers + response.text))
        assert response.status_code < 500, f"{method} {path}: {response.text}"
        return response


@pytest.fixture(
    params=[
        ("unrestricted", "threads"),
        ("allowed.paths+allowlist.pattern", "threads"),
        ("unrestricted", "processes"),  # tasks in their own processes, with their own logs
    ],
    ids=lambda p: "-".join(p),
)
def s(request: pytest.FixtureRequest, broker: EmbeddedBroker, tmp_path: Path) -> Iterator[Setup]:
    planted = Planted(tmp_path)
    providers, executor = request.param
    restricted = providers != "unrestricted"
    location = tmp_path / "plugins" / "leaky"
    location.mkdir(parents=True)
    shutil.copy(PLUGIN_SOURCE, location / "leaky_secrets.py")
    run = planted.run
    url = f"http://127.0.0.1:{free_port()}"
    status_topic = f"status-{run}"
    props = {
        "bootstrap.servers": broker.bootstrap_servers,
        "group.id": f"sec-{run}",
        "config.storage.topic": f"configs-{run}",
        "status.storage.topic": status_topic,
        "offset.storage.topic": f"offsets-{run}",
        "offset.storage.partitions": "1",
        "key.converter": STRING,
        "value.converter": STRING,
        "listeners": url,
        "plugin.path": str(tmp_path / "plugins"),
        "task.shutdown.graceful.timeout.ms": "5000",
        "task.executor": executor,
        "config.providers": "file,env",
        "config.providers.file.class": f"{PROVIDERS}.FileConfigProvider",
        "config.providers.env.class": f"{PROVIDERS}.EnvVarConfigProvider",
    }
    if restricted:
        props["config.providers.file.param.allowed.paths"] = str(planted.secrets_dir)
        props["config.providers.env.param.allowlist.pattern"] = f"HOME|{planted.env_name}"
    props_file = tmp_path / "worker.properties"
    props_file.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    env = {**os.environ, planted.env_name: planted.env, "HOME": str(planted.home)}
    # Task processes import the task class by name: the plugin's location on their path too.
    paths = (str(ROOT), str(location), env.get("PYTHONPATH"))
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    worker = WorkerProcess(props_file, tmp_path / "worker.log", url, env)
    worker.start()
    try:
        with httpx.Client(base_url=url, timeout=60) as http:
            yield Setup(planted, worker, http, broker.bootstrap_servers, status_topic, restricted)
    finally:
        worker.stop()


def _wait(what: str, predicate: Callable[[], bool], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.5)


def _references(p: Planted) -> list[str]:
    return [p.env_ref, p.file_ref, "${env:HOME}", "${file:/etc/passwd:root}"]


def _attack_requests(s: Setup) -> None:
    """Attack 1 and the config echo of 11: every request answers 4xx, none quotes a secret."""
    p = s.planted
    base = {
        "connector.class": "LeakySource",
        "topic": f"t-{p.run}",
        "leak.fail": "none",
        **p.literal_secrets(),
    }
    for n, ref in enumerate(_references(p)):
        attacks: dict[str, dict[str, str]] = {
            "connector.class": {**base, "connector.class": ref},
            "connector.class mixed": {**base, "connector.class": f"x.{ref}.Y"},
            "value.converter": {**base, "value.converter": ref},
            "header.converter": {**base, "header.converter": ref},
            "transforms.*.type": {**base, "transforms": "t", "transforms.t.type": ref},
            "tasks.max (INT)": {**base, "tasks.max": ref},
            "errors.retry.timeout (LONG)": {**base, "errors.retry.timeout": ref},
            "errors.tolerance (enum)": {**base, "errors.tolerance": ref},
        }
        for what, config in attacks.items():
            name = f"attack-{n}-{what.split()[0].replace('*', 'x')}-{p.run}"
            created = s.call("POST", "/connectors", json={"name": name, "config": config})
            assert created.status_code in (400, 201), (what, created.text)
            if created.status_code == 201:  # some keys are only checked when a task starts
                s.call("DELETE", f"/connectors/{name}")
            s.call("PUT", f"/connectors/{name}-put/config", json=config)
            s.call("DELETE", f"/connectors/{name}-put")
            s.call("PUT", "/connector-plugins/LeakySource/config/validate", json=config)
    # No connector.class: 400, and nothing of the config echoed (not even masked).
    no_class = {k: v for k, v in base.items() if k != "connector.class"}
    no_class["note.env"] = p.env_ref
    for method, path, body in (
        ("POST", "/connectors", {"name": f"noclass-{p.run}", "config": no_class}),
        ("PUT", f"/connectors/noclass-{p.run}/config", no_class),
    ):
        response = s.call(method, path, json=body)
        assert response.status_code == 400, response.text
        message = response.json()["message"]
        assert "contains no connector type" in message
        assert "db.password" not in message and "topic" not in message, message
        assert "[hidden]" not in message, message


def _failing_connectors(s: Setup) -> list[str]:
    """Attack 7: a connector and a task that fail quoting their secrets, and a transform whose
    errors go to a dead letter queue."""
    p = s.planted
    refs = {"note.env": p.env_ref, "note.file": p.file_ref, "note.home": "${env:HOME}"}
    common = {"connector.class": "LeakySource", **p.literal_secrets(), **refs}
    configs = {
        f"leaky-task-{p.run}": {**common, "leak.fail": "task", "topic": f"lt-{p.run}"},
        f"leaky-connector-{p.run}": {**common, "leak.fail": "connector", "topic": f"lc-{p.run}"},
        f"leaky-dlq-{p.run}": {
            **common,
            "leak.fail": "none",
            "topic": f"ld-{p.run}",
            "transforms": "leak",
            "transforms.leak.type": "leaky_secrets.LeakyTransform",
            "transforms.leak.db.password": p.password,
            "transforms.leak.note.env": p.env_ref,
            "transforms.leak.note.file": p.file_ref,
            "errors.tolerance": "all",
            "errors.log.enable": "true",
            "errors.log.include.messages": "true",
            "errors.deadletterqueue.topic.name": f"dlq-{p.run}",
            "errors.deadletterqueue.context.headers.enable": "true",
            "errors.deadletterqueue.topic.replication.factor": "1",
        },
    }
    for topic in (f"lt-{p.run}", f"lc-{p.run}", f"ld-{p.run}"):
        create_topic(s.bootstrap, topic)
    for name, config in configs.items():
        created = s.call("PUT", f"/connectors/{name}/config", json=config)
        assert created.status_code == 201, created.text
        # The update path with the secrets in place: accepted, nothing quoted back.
        assert s.call("PUT", f"/connectors/{name}/config", json=config).status_code == 200

    def failed(name: str, task: bool) -> bool:
        status = s.http.get(f"/connectors/{name}/status").json()
        entry = (status.get("tasks") or [{}])[0] if task else status.get("connector", {})
        return entry.get("state") == "FAILED" and "cannot log in" in entry.get("trace", "")

    _wait("the leaky task to fail", lambda: failed(f"leaky-task-{p.run}", True))
    _wait("the leaky connector to fail", lambda: failed(f"leaky-connector-{p.run}", False))
    return list(configs)


def _dlq_records(s: Setup) -> list[str]:
    """The dead letter queue's records (values and headers) as text; empty while none."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": s.bootstrap,
            "group.id": f"dlq-read-{uuid.uuid4().hex[:8]}",
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )
    out: list[str] = []
    try:
        topic = f"dlq-{s.planted.run}"
        if topic not in consumer.list_topics(timeout=10).topics:
            return out
        consumer.assign([TopicPartition(topic, 0, -2)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            messages = consumer.consume(100, 1)
            for m in messages:
                if m.error():
                    continue
                headers = "\n".join(
                    f"{k}: {(v or b'').decode('utf-8', 'replace')}" for k, v in m.headers() or []
                )
                out.append(f"{(m.value() or b'').decode('utf-8', 'replace')}\n{headers}")
            if any(m.error() and m.error().code() == KafkaError._PARTITION_EOF for m in messages):
                break
    finally:
        consumer.close()
    return out


def _read_everything(s: Setup, names: list[str]) -> None:
    """Every REST read and console page about the connectors, recorded in ``s.seen``."""
    reads = ["/connectors?expand=status&expand=info", "/connectors", "/connector-plugins"]
    for name in names:
        reads += [
            f"/connectors/{name}",
            f"/connectors/{name}/config",
            f"/connectors/{name}/status",
            f"/connectors/{name}/tasks",
            f"/connectors/{name}/tasks/0/status",
            f"/connectors/{name}/topics",
            f"/connectors/{name}/offsets",
            f"/ui/connectors/{name}",
            f"/ui/connectors/{name}/fragments/status",
            f"/ui/connectors/{name}/fragments/offsets",
            f"/ui/connectors/{name}/edit",
        ]
    reads += ["/ui", "/ui/fragments/connectors", "/ui/new?plugin=LeakySource", "/metrics"]
    for path in reads:
        s.call("GET", path)
    for name in names:  # PATCH quotes the config back too
        s.call("PATCH", f"/connectors/{name}/config", json={"note.more": s.planted.env_ref})


def test_no_secret_in_any_answer_trace_status_record_dlq_header_or_log_line(s: Setup) -> None:
    p = s.planted
    _attack_requests(s)
    names = _failing_connectors(s)
    _wait("a record in the dead letter queue", lambda: bool(_dlq_records(s)))
    _read_everything(s, names)
    # The traces explain the failures, with the secrets hidden (and the references as
    # written where the plugin quoted its raw config: it was given resolved values).
    # The PATCHes above restart the tasks: a task process reports its failure a moment later.
    task_status = f"/connectors/leaky-task-{p.run}/tasks/0/status"
    _wait(
        "the restarted task of leaky-task to fail again",
        lambda: s.http.get(task_status).json().get("state") == "FAILED",
    )
    task = s.http.get(task_status).json()
    assert "cannot log in" in task["trace"] and "[hidden]" in task["trace"], task
    connector = s.http.get(f"/connectors/leaky-connector-{p.run}/status").json()["connector"]
    assert "cannot log in" in connector["trace"] and "[hidden]" in connector["trace"]

    sinks: list[tuple[str, str]] = list(s.seen)
    status_records = read_topic(s.bootstrap, s.status_topic)
    status_text = "\n".join(
        (v or b"").decode("utf-8", "replace")
        for records in status_records.values()
        for _, v in records
    )
    assert "cannot log in" in status_text, "the failures reached the status topic"
    sinks.append(("the status topic", status_text))
    dlq = _dlq_records(s)
    assert dlq and "cannot log in" in dlq[0], dlq[:1]  # the error headers are there
    sinks += [("a dead letter queue record", text) for text in dlq]
    s.worker.stop()  # flush and close the log
    log = s.worker.log.read_text(encoding="utf-8", errors="replace")
    assert "cannot log in" in log and "task starting" in log, "the plugin's lines are logged"
    sinks.append(("the worker's log", log))

    found = [f"{where}: {leak}" for where, text in sinks for leak in p.leaks(text)]
    assert not found, "\n".join(found[:40])
