"""The quickstart files and the Kafka Connect differential, rerun on a ``SASL_SSL`` listener.

The module starts ONE Apache Kafka broker with the secured listeners of
:mod:`connectrt.testing.secured_listeners` and uses its ``SASLSSL`` one: SASL_SSL with
SCRAM-SHA-512 and a client certificate required (certificates by
:mod:`connectrt.testing.certs`, the SCRAM user created through the admin API). Every client
setting is written as a Kafka Connect user writes it in ``worker.properties``
(:func:`sasl_ssl_settings`): ``security.protocol``, ``sasl.mechanism``, a ``ScramLoginModule``
JAAS string, a PEM truststore and a PKCS12 keystore, at the top level and again under
``producer.``, ``consumer.`` and ``admin.`` (Kafka Connect's task clients read only those).

* the quickstart files (``deploy/standalone``, the FileStream pair; ``examples/quickstart``,
  the walkthrough's tick source and line sink) run by ``connectrt standalone`` in a copy whose
  ``worker.properties`` has the block appended: every line arrives, none lost;
* the differential's ``lifecycle`` and ``offsets`` scenarios
  (:mod:`tests.kafka_connect_rest_support`) replayed against ONE Kafka Connect 4.4 JVM and one
  connectrt worker, both configured from the same block: the same results (same steps equal,
  the same deliberate differences) as the committed plaintext run in
  ``tests/integration/kafka_connect_rest_results.json``.

Needs the JDK (the broker; javac for Kafka Connect's shim) and ``openssl``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from connectrt.ports import free_port
from connectrt.testing.certs import Pki, make_pki
from connectrt.testing.kafka_broker import KafkaBroker
from connectrt.testing.rest import wait_for
from connectrt.testing.secured_listeners import add_scram_user, secured_listener_settings
from tests.kafka_connect_differential import replay, running_sides
from tests.kafka_connect_rest_reasons import result_key
from tests.kafka_connect_rest_support import RESULTS, Side

pytestmark = [pytest.mark.integration, pytest.mark.java]

ROOT = Path(__file__).resolve().parents[2]
USER, PASSWORD = "connect", "connect-scram-secret"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
DIFF_SCENARIOS = ("lifecycle", "offsets")


def sasl_ssl_settings(pki: Pki) -> dict[str, str]:
    """The SASL_SSL client settings of a Kafka Connect ``worker.properties``: top level (the
    worker's own clients) and under ``producer.``/``consumer.``/``admin.`` (its task clients)."""
    own = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": f'{SCRAM} required username="{USER}" password="{PASSWORD}";',
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca),
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(pki.client_p12),
        "ssl.keystore.password": pki.password,
    }
    prefixed = {f"{p}{k}": v for p in ("producer.", "consumer.", "admin.") for k, v in own.items()}
    return {**own, **prefixed}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def kafka(pki: Pki) -> Iterator[KafkaBroker]:
    listeners, properties = secured_listener_settings(pki)
    with KafkaBroker(extra_listeners=listeners, properties=properties) as broker:
        add_scram_user(broker.bootstrap_servers, USER, PASSWORD)
        yield broker


# -- the quickstart files --------------------------------------------------------------------
def _append_security(worker: Path, bootstrap: str, port: int, pki: Pki) -> None:
    """The example's ``worker.properties`` pointed at ``bootstrap`` and a free REST port, with
    the SASL_SSL block appended (nothing else changed)."""
    text = worker.read_text(encoding="utf-8")
    assert "bootstrap.servers=localhost:9092" in text and "listeners=http://:8083" in text
    text = text.replace("localhost:9092", bootstrap).replace(
        "http://:8083", f"http://127.0.0.1:{port}"
    )
    block = "".join(f"{k}={v}\n" for k, v in sasl_ssl_settings(pki).items())
    worker.write_text(f"{text}\n# Appended: the cluster's SASL_SSL listener.\n{block}", "utf-8")


def _standalone(folder: Path, *files: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "connectrt.cli", "--log-level", "WARNING", "standalone"]
    with (folder / "worker.log").open("wb") as log:
        return subprocess.Popen(
            [*command, "worker.properties", *files],
            cwd=folder,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        )


def _interrupt(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def test_the_standalone_quickstart_on_sasl_ssl(
    kafka: KafkaBroker, pki: Pki, tmp_path: Path
) -> None:
    """deploy/standalone: 2,000 lines from test.txt to test.sink.txt through the topic."""
    work = tmp_path / "standalone"
    shutil.copytree(ROOT / "deploy" / "standalone", work)
    _append_security(
        work / "worker.properties", kafka.listener_bootstrap("SASLSSL"), free_port(), pki
    )
    topic = f"connect-test-{uuid.uuid4().hex[:8]}"
    for name in ("connect-file-source.properties", "connect-file-sink.properties"):
        path = work / name
        path.write_text(path.read_text(encoding="utf-8").replace("connect-test", topic), "utf-8")
    expected = [f"line {i}" for i in range(2000)]
    (work / "test.txt").write_text("".join(f"{line}\n" for line in expected), "utf-8")
    proc = _standalone(work, "connect-file-source.properties", "connect-file-sink.properties")
    output = work / "test.sink.txt"
    try:

        def written() -> int:
            assert proc.poll() is None, (work / "worker.log").read_text(errors="replace")[-3000:]
            return len(_lines(output))

        wait_for(lambda: written() >= len(expected), 120, "the sink to write every line")
        assert _lines(output) == expected  # 0 lost, none repeated, in order (one partition)
    finally:
        _interrupt(proc)


def test_the_walkthrough_quickstart_on_sasl_ssl(
    kafka: KafkaBroker, pki: Pki, tmp_path: Path
) -> None:
    """examples/quickstart: the tick source and the line sink; every tick the source produced
    reaches ticks.txt, numbers without a gap."""
    work = tmp_path / "quickstart"
    shutil.copytree(
        ROOT / "examples" / "quickstart", work, ignore=shutil.ignore_patterns("__pycache__")
    )
    _append_security(
        work / "worker.properties", kafka.listener_bootstrap("SASLSSL"), free_port(), pki
    )
    topic = f"ticks-{uuid.uuid4().hex[:8]}"
    for name in ("tick-source.properties", "tick-sink.properties"):
        path = work / name
        text = path.read_text(encoding="utf-8")
        path.write_text(
            text.replace("topic=ticks", f"topic={topic}").replace(
                "topics=ticks", f"topics={topic}"
            ),
            "utf-8",
        )
    proc = _standalone(work, "tick-source.properties", "tick-sink.properties")
    ticks = work / "ticks.txt"
    try:

        def count() -> int:
            assert proc.poll() is None, (work / "worker.log").read_text(errors="replace")[-3000:]
            return len(_lines(ticks))

        wait_for(lambda: count() >= 10, 120, "ten ticks in ticks.txt (the sink's group join)")
    finally:
        _interrupt(proc)
    lines = _lines(ticks)
    assert all(line.startswith("tick ") for line in lines), lines[:5]
    numbers = sorted(int(line.split()[1]) for line in lines)
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers))), numbers  # no gap
    assert len(numbers) >= 10


# -- the Kafka Connect differential ----------------------------------------------------------
@pytest.fixture(scope="module")
def sides(
    kafka: KafkaBroker, pki: Pki, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Side, Side]]:
    """(Kafka Connect, connectrt), both configured from the same SASL_SSL settings."""
    bootstrap = kafka.listener_bootstrap("SASLSSL")
    with running_sides(bootstrap, tmp_path_factory, sasl_ssl_settings(pki)) as both:
        yield both


@pytest.mark.parametrize("scenario", DIFF_SCENARIOS)
def test_the_differential_answers_as_on_plaintext(sides: tuple[Side, Side], scenario: str) -> None:
    results = replay(scenario, *sides)
    committed = [
        s
        for s in json.loads(RESULTS.read_text("utf-8"))["steps"]
        if s["id"].startswith(f"{scenario}: ")
    ]
    assert committed, f"no committed plaintext results for {scenario}"
    changed = sorted({result_key(s) for s in results} ^ {result_key(s) for s in committed}, key=str)
    assert not changed, (
        "on SASL_SSL the differential differs from the plaintext run:\n"
        + "\n".join(json.dumps(r, indent=1) for r in results if not r["same"])
        + f"\nchanged: {changed}"
    )
