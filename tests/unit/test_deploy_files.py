"""The example deployment files under deploy/ stay valid.

* every ``.properties`` file loads; worker files (those with ``bootstrap.servers``) parse with
  ``WorkerConfig.from_props``; connector files (and the JSON ones, via ``load_connector_file``)
  validate with no errors against the bundled plugins;
* the commented examples in worker files (``#key=value``) name real worker keys and still
  parse once uncommented, so enabling one is a matter of deleting a ``#``;
* the systemd unit parses as an INI-like file with [Unit]/[Service]/[Install], runs
  ``connectrt worker`` and has the hardening the README promises. Where ``systemd-analyze`` is
  on PATH, ``systemd-analyze verify`` runs on a copy. Its fair verdict on a machine that is not
  the deployment target: the ExecStart binary (``/opt/connectrt/.venv/bin/connectrt``) and the
  ``connectrt`` user may be missing, so complaints about exactly those are tolerated; anything
  else it prints (unknown keys or sections, bad values, syntax errors) fails the test;
* the compose file (PyYAML when installed, else a line-level check) has a ``kafka`` service on
  ``apache/kafka`` in KRaft mode and a ``connectrt`` service built from the Dockerfile, mounting
  ``worker.properties``, whose ``bootstrap.servers`` is one of Kafka's advertised listeners.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from connectrt.runtime.clients.settings import OverridePolicy
from connectrt.runtime.config.connector import validate_connector_config
from connectrt.runtime.config.worker import WORKER_CONFIG_DEF, WorkerConfig
from connectrt.runtime.plugins.registry import registry
from connectrt.runtime.properties import load_connector_file, load_properties, parse_properties
from connectrt.spark.config import SPARK_BACKEND_CONFIG_DEF, SparkBackendConfig, spark_conf

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
UNIT = DEPLOY / "systemd" / "connectrt-worker.service"
COMPOSE_DIR = DEPLOY / "compose"

PROPERTIES = sorted(DEPLOY.rglob("*.properties"))
CONNECTOR_JSON = sorted(DEPLOY.rglob("*.json"))


def _rel(p: Path) -> str:
    return str(p.relative_to(DEPLOY))


def _is_worker_file(props: dict[str, str]) -> bool:
    return "bootstrap.servers" in props or "connector.class" not in props


WORKER_FILES = [p for p in PROPERTIES if _is_worker_file(load_properties(p))]
CONNECTOR_FILES = [p for p in PROPERTIES if p not in WORKER_FILES] + CONNECTOR_JSON


def test_the_expected_files_exist() -> None:
    """The lists below are not empty by accident (a moved directory would skip everything)."""
    names = {_rel(p) for p in PROPERTIES + CONNECTOR_JSON}
    assert {
        "standalone/worker.properties",
        "worker/worker.properties",
        "compose/worker.properties",
        "worker/connectors/file-source.json",
        "worker/connectors/file-sink.json",
        "spark/worker.properties",
    } <= names
    assert len(WORKER_FILES) >= 3
    assert len(CONNECTOR_FILES) >= 5
    for p in (UNIT, COMPOSE_DIR / "docker-compose.yml", COMPOSE_DIR / "Dockerfile"):
        assert p.is_file(), p
    assert (DEPLOY / "README.md").is_file()


# -- worker files ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", WORKER_FILES, ids=_rel)
def test_worker_file_parses(path: Path) -> None:
    props = load_properties(path)
    assert props, "empty worker file"
    unknown = [k for k in props if not _known_worker_key(k)]
    assert not unknown, f"keys no worker reads (typos?): {unknown}"
    wc = WorkerConfig.from_props(props)
    assert wc.bootstrap_servers
    assert wc["listeners"], "no REST listener"


def _known_worker_key(key: str) -> bool:
    if key in WORKER_CONFIG_DEF.keys or key in SPARK_BACKEND_CONFIG_DEF.keys:
        return True
    if key.startswith("spark."):
        return True  # handed to Spark as is (deploy/spark)
    prefixes = ("producer.", "consumer.", "admin.", "config.providers.")
    converters = tuple(f"{k}.converter." for k in ("key", "value", "header"))
    return key.startswith(prefixes + converters)


@pytest.mark.parametrize("name", ["worker/worker.properties", "compose/worker.properties"], ids=str)
def test_distributed_worker_files_name_their_internal_topics(name: str) -> None:
    props = load_properties(DEPLOY / name)
    for key in ("group.id", "config.storage.topic", "status.storage.topic", "offset.storage.topic"):
        assert props.get(key), f"{name} does not set {key}"
    topics = [props[k] for k in ("config.storage.topic", "status.storage.topic")]
    topics.append(props["offset.storage.topic"])
    assert len(set(topics)) == 3, f"internal topics must differ: {topics}"
    WorkerConfig.from_props(props)


def _commented_examples(path: Path) -> list[str]:
    """``#key=value`` lines whose key looks like a config key (not prose)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^#([a-z][a-z0-9_.-]*)=(.*)$", line)
        if m:
            out.append(line[1:])
    return out


@pytest.mark.parametrize("path", WORKER_FILES, ids=_rel)
def test_commented_examples_name_real_keys_and_parse(path: Path) -> None:
    examples = _commented_examples(path)
    base = load_properties(path)
    for line in examples:
        key = line.split("=", 1)[0]
        assert _known_worker_key(key), f"commented example {line!r}: unknown key {key}"
        WorkerConfig.from_props({**base, **parse_properties(line)})


def test_distributed_worker_file_documents_auth_https_and_control_topic() -> None:
    keys = {
        line.split("=", 1)[0] for line in _commented_examples(DEPLOY / "worker/worker.properties")
    }
    assert {
        "rest.auth.type",
        "rest.auth.credentials.file",
        "rest.auth.tokens.file",
        "listeners",
        "listeners.https.ssl.certificate.location",
        "listeners.https.ssl.key.location",
        "control.topic",
    } <= keys
    # Uncommenting the whole HTTPS block gives an https listener with both PEM locations.
    text = (DEPLOY / "worker/worker.properties").read_text(encoding="utf-8")
    https = [ln[1:] for ln in text.splitlines() if ln.startswith("#listeners")]
    wc = WorkerConfig.from_props(
        {
            **load_properties(DEPLOY / "worker/worker.properties"),
            **parse_properties("\n".join(https)),
        }
    )
    assert wc["listeners"][0].startswith("https://")
    assert wc["listeners.https.ssl.certificate.location"]
    assert wc["listeners.https.ssl.key.location"]


def test_spark_worker_file_and_submit_script() -> None:
    """deploy/spark: a distributed worker with task.executor=spark whose spark.* keys reach
    Spark; the spark-submit script runs the launcher, which runs `connectrt spark`."""
    spark_dir = DEPLOY / "spark"
    props = load_properties(spark_dir / "worker.properties")
    config = SparkBackendConfig.from_props(props)
    assert config.executor == "spark" and config.free_slots >= 1
    assert config.signal_topic not in {props[k] for k in props if k.endswith("storage.topic")}
    conf = spark_conf(props)
    assert conf["spark.master"].startswith("local[") and "spark.task.maxFailures" in conf
    for line in _commented_examples(spark_dir / "worker.properties"):
        assert line.startswith("spark."), line
    script = (spark_dir / "submit.sh").read_text(encoding="utf-8")
    assert script.startswith("#!/bin/sh") and 'exec "$SPARK_SUBMIT"' in script
    assert "SPARK_SUBMIT=spark-submit" in script  # without SPARK_HOME: the one on PATH
    assert "connectrt_spark.py" in script and "spark.pyspark.python" in script
    if shutil.which("sh"):
        subprocess.run(["sh", "-n", str(spark_dir / "submit.sh")], check=True)
    launcher = (spark_dir / "connectrt_spark.py").read_text(encoding="utf-8")
    assert 'main(["spark", props])' in launcher and 'main(["spark", path])' in launcher
    compile(launcher, "connectrt_spark.py", "exec")
    assert "submit.sh" in (DEPLOY / "README.md").read_text(encoding="utf-8")


# -- connector files -------------------------------------------------------------------------


@pytest.mark.parametrize("path", CONNECTOR_FILES, ids=_rel)
def test_connector_file_validates(path: Path) -> None:
    name, config, initial_state = load_connector_file(path)
    assert name and config["name"] == name
    assert initial_state in (None, "RUNNING", "PAUSED", "STOPPED")
    result = validate_connector_config(config, registry, OverridePolicy("All"))
    assert result.error_count == 0, result.error_messages()
    # Every key the file sets is one the connector or the framework defines (no typos).
    undefined = [k for k in config if k not in result.definition.keys]
    assert not undefined, f"keys nothing defines: {undefined}"


@pytest.mark.parametrize(
    "path", sorted((DEPLOY / "worker" / "connectors").glob("*.json")), ids=_rel
)
def test_worker_connector_json_is_a_create_request(path: Path) -> None:
    """POST /connectors bodies: name + a config object of strings (as Kafka documents)."""
    doc = orjson.loads(path.read_bytes())
    assert set(doc) <= {"name", "config", "initial_state"}
    assert isinstance(doc["name"], str) and doc["name"]
    assert doc["config"] and all(isinstance(v, str) for v in doc["config"].values())


def test_worker_connectors_form_a_pipeline() -> None:
    """The example source writes the topic the example sink reads, to different files."""
    configs = [
        load_connector_file(p)[1] for p in sorted((DEPLOY / "worker/connectors").glob("*.json"))
    ]
    sources = [c for c in configs if "Source" in c["connector.class"]]
    sinks = [c for c in configs if "Sink" in c["connector.class"]]
    assert len(sources) == 1 and len(sinks) == 1
    assert sources[0]["topic"] in sinks[0]["topics"].split(",")
    assert sources[0]["file"] != sinks[0]["file"]


# -- systemd ---------------------------------------------------------------------------------


def _parse_unit(text: str) -> dict[str, dict[str, list[str]]]:
    """systemd's unit syntax: [Section], Key=Value (repeatable), # and ; comments, trailing
    backslash continuations. Raises AssertionError on a line that is none of those."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        while line.endswith("\\") and i < len(lines):
            line = line[:-1] + " " + lines[i].strip()
            i += 1
        if not line or line[0] in "#;":
            continue
        m = re.fullmatch(r"\[([A-Za-z0-9-]+)\]", line)
        if m:
            assert m.group(1) not in sections, f"duplicate section {line}"
            current = sections[m.group(1)] = {}
            continue
        m = re.fullmatch(r"([A-Za-z][A-Za-z0-9]*)\s*=\s*(.*)", line)
        assert m, f"line {i}: not a Key=Value line: {line!r}"
        assert current is not None, f"line {i}: {line!r} outside any section"
        current.setdefault(m.group(1), []).append(m.group(2))
    return sections


def _one(section: dict[str, list[str]], key: str) -> str:
    values = section.get(key)
    assert values, f"{key} missing"
    return values[-1]


def test_systemd_unit_structure() -> None:
    unit = _parse_unit(UNIT.read_text(encoding="utf-8"))
    assert set(unit) == {"Unit", "Service", "Install"}
    svc = unit["Service"]
    exec_start = _one(svc, "ExecStart").split()
    assert Path(exec_start[0]).name == "connectrt" and Path(exec_start[0]).is_absolute()
    assert exec_start[1:] == ["worker", "/etc/connectrt/worker.properties"]
    assert _one(svc, "User") == "connectrt" and _one(svc, "User") != "root"
    assert _one(svc, "Restart") == "on-failure"
    assert _one(svc, "KillSignal") == "SIGTERM"
    assert int(_one(svc, "TimeoutStopSec")) >= 10
    for key, value in {
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
    }.items():
        assert _one(svc, key) == value, key
    assert "/var/lib/connectrt" in _one(svc, "ReadWritePaths").split()
    assert _one(svc, "WorkingDirectory") == "/var/lib/connectrt"
    assert _one(unit["Install"], "WantedBy") == "multi-user.target"
    # Start-limit keys belong to [Unit]; in [Service] systemd ignores them.
    assert not {"StartLimitIntervalSec", "StartLimitBurst"} & set(svc)


def test_unit_parser_rejects_garbage() -> None:
    """The structure test above would catch a broken unit."""
    with pytest.raises(AssertionError):
        _parse_unit("[Service]\nthis is not a key value line\n")
    with pytest.raises(AssertionError):
        _parse_unit("ExecStart=/bin/true\n")


# Complaints `systemd-analyze verify` makes because this machine is not the target host.
_ENVIRONMENTAL = (
    re.compile(r"Command .*/opt/connectrt/\.venv/bin/connectrt is not executable"),
    re.compile(r"Failed to resolve (user|group) .*connectrt"),
    re.compile(r"(User|Group) 'connectrt' not found"),
)


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_systemd_analyze_verify(tmp_path: Path) -> None:
    copy = tmp_path / UNIT.name
    shutil.copy(UNIT, copy)
    proc = subprocess.run(
        ["systemd-analyze", "verify", str(copy)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    output = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    problems = [ln for ln in output if not any(p.search(ln) for p in _ENVIRONMENTAL)]
    assert not problems, "\n".join(output)
    assert proc.returncode == 0 or output, "verify failed without saying why"


# -- compose ---------------------------------------------------------------------------------


def _load_compose() -> dict[str, Any]:
    text = (COMPOSE_DIR / "docker-compose.yml").read_text(encoding="utf-8")
    try:
        import yaml
    except ImportError:  # pragma: no cover - PyYAML comes with the dev tools
        return _minimal_compose(text)
    doc = yaml.safe_load(text)
    assert isinstance(doc, dict)
    return doc


def _minimal_compose(text: str) -> dict[str, Any]:
    """Without PyYAML: services are the 2-space-indented keys under ``services:``; each one's
    ``KEY: value`` / ``- item`` lines are kept flat (enough for the checks below)."""
    services: dict[str, Any] = {}
    in_services = False
    current: dict[str, Any] | None = None
    for raw in text.splitlines():
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        if not raw.startswith(" "):
            in_services = raw.rstrip() == "services:"
            current = None
            continue
        if in_services and re.match(r"^  [A-Za-z0-9_-]+:\s*$", raw):
            current = services[raw.strip()[:-1]] = {"_lines": []}
        elif current is not None:
            current["_lines"].append(raw.strip())
    for svc in services.values():
        lines = svc.pop("_lines")
        env = {}
        for ln in lines:
            m = re.match(r"^([A-Z][A-Z0-9_]*):\s*(.*)$", ln)
            if m:
                env[m.group(1)] = m.group(2)
            m = re.match(r"^image:\s*(\S+)", ln)
            if m:
                svc["image"] = m.group(1)
            m = re.match(r"^dockerfile:\s*(\S+)", ln)
            if m:
                svc["build"] = {"dockerfile": m.group(1)}
        svc["environment"] = env
        svc["volumes"] = [ln[2:].strip() for ln in lines if ln.startswith("- ") and ":" in ln]
    return {"services": services}


def test_compose_has_kafka_in_kraft_mode_and_connectrt() -> None:
    services = _load_compose()["services"]
    assert {"kafka", "connectrt"} <= set(services)
    kafka = services["kafka"]
    assert kafka["image"] == "apache/kafka:3.9.0"
    env = {k: str(v) for k, v in kafka["environment"].items()}
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert "ZOOKEEPER" not in " ".join(env)
    assert env["KAFKA_CONTROLLER_LISTENER_NAMES"] in env["KAFKA_LISTENERS"]
    connectrt = services["connectrt"]
    dockerfile = connectrt["build"]["dockerfile"]
    assert (ROOT / dockerfile).resolve() == (COMPOSE_DIR / "Dockerfile").resolve()


def test_compose_connectrt_mounts_its_worker_file_and_matches_kafka() -> None:
    services = _load_compose()["services"]
    connectrt, kafka = services["connectrt"], services["kafka"]
    mounts = {}
    for v in connectrt["volumes"]:
        src, dst = str(v).split(":")[:2]
        mounts[dst] = src
    assert mounts.get("/etc/connectrt/worker.properties") == "./worker.properties"
    props = load_properties(COMPOSE_DIR / "worker.properties")
    advertised = {
        re.sub(r"^[A-Z_]+://", "", listener)
        for listener in str(kafka["environment"]["KAFKA_ADVERTISED_LISTENERS"]).split(",")
    }
    servers = WorkerConfig.from_props(props)["bootstrap.servers"]
    assert servers and set(servers) <= advertised, (servers, advertised)
    host = servers[0].split(":")[0]
    assert host in {"kafka", kafka.get("hostname", "kafka")}
    # The container's command runs that file in worker mode.
    if "command" in connectrt:
        assert list(connectrt["command"]) == ["worker", "/etc/connectrt/worker.properties"]


def test_minimal_compose_reader_agrees_with_yaml() -> None:
    """The fallback reader (for machines without PyYAML) extracts the same facts."""
    text = (COMPOSE_DIR / "docker-compose.yml").read_text(encoding="utf-8")
    minimal = _minimal_compose(text)["services"]
    assert {"kafka", "connectrt"} <= set(minimal)
    assert minimal["kafka"]["image"] == "apache/kafka:3.9.0"
    assert "PLAINTEXT://kafka:9092" in minimal["kafka"]["environment"]["KAFKA_ADVERTISED_LISTENERS"]
    assert (
        "./worker.properties:/etc/connectrt/worker.properties:ro" in minimal["connectrt"]["volumes"]
    )
    assert minimal["connectrt"]["build"]["dockerfile"] == "deploy/compose/Dockerfile"


def test_dockerfile_installs_the_project_with_pip() -> None:
    text = (COMPOSE_DIR / "Dockerfile").read_text(encoding="utf-8")
    assert re.search(r"^FROM python:3\.11", text, re.M)
    # with the mimalloc extra: the worker's allocator (connectrt.process.allocator)
    assert re.search(r'^RUN .*pip install "\.\[mimalloc\]"', text, re.M)
    assert re.search(r"^USER (?!root)\S+", text, re.M), "runs as root"
    copied = re.findall(r"^COPY (.+) \S+$", text, re.M)
    for line in copied:
        for src in line.split():
            assert (ROOT / src).exists(), f"COPY source {src} missing from the build context"
