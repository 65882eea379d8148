"""``connectrt spark WORKER.properties`` run as a child process, for the CLI tests on a local
master (``test_backend_cli.py``) and on a Spark Connect server (``test_connect_backend_cli.py``).

:func:`write_worker_properties` writes the worker file with topics unique to the run;
:func:`spark_worker` starts the command, waits (generously: a cold Spark start) until
``/health`` says healthy and yields the process with an HTTP client on its REST API; on the way
out it kills the process if the test left it running. :func:`run_sequence_source` runs a two-task
source until its records are all in Kafka, :func:`stop_gracefully` is the SIGINT stop the tests
assert on. One thread: the test's.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from connectrt.ports import free_port
from connectrt.storage.offset_codec import decode_value
from connectrt.testing.harness import create_topic, read_topic
from connectrt.testing.rest import wait_for

#: The worker settings of a driver on a local master, beside ``spark.master``.
LOCAL_SPARK = [
    "spark.ui.enabled=false",
    "spark.ui.showConsoleProgress=false",
    "spark.driver.host=127.0.0.1",
    "spark.driver.bindAddress=127.0.0.1",
]

STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"


#: For the tests that check a graceful stop: the stop signal reaches a task through the signal
#: topic and its job ends through Spark, which on a busy machine (or a Spark Connect server
#: shared with other tests) can take longer than the 5 s default; 60 s still fits in
#: :func:`stop_gracefully`'s 90 s.
GRACEFUL_STOP_TIMEOUT = "task.shutdown.graceful.timeout.ms=60000"


def write_worker_properties(
    path: Path, bootstrap_servers: str, prefix: str, port: int, extra: list[str]
) -> Path:
    """The worker file at ``path``: group ``prefix``, topics ``prefix-configs``,
    ``prefix-status``, ``prefix-offsets``, the REST API on ``port``, plugins from ``tests``,
    then the ``extra`` ``key=value`` lines."""
    lines = [
        f"bootstrap.servers={bootstrap_servers}",
        f"group.id={prefix}",
        f"config.storage.topic={prefix}-configs",
        f"status.storage.topic={prefix}-status",
        f"offset.storage.topic={prefix}-offsets",
        f"listeners=http://127.0.0.1:{port}",
        f"file.connectors.allowed.dirs={tempfile.gettempdir()}",
        "plugin.packages=tests",
        *extra,
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def run_sequence_source(
    http: httpx.Client,
    bootstrap_servers: str,
    name: str,
    records_per_task: int,
    runs_there: Callable[[str], bool],
    there: str,
) -> None:
    """Connector ``name``: two tasks of ``tests.plugins.sequence.SequenceSource`` into the new
    topic ``name``; returns once both tasks are RUNNING on a worker id ``runs_there`` accepts
    (``there`` names it for the wait) and the topic holds all their records."""
    create_topic(bootstrap_servers, name, partitions=1)
    config = {
        "connector.class": "tests.plugins.sequence.SequenceSource",
        "tasks.max": "2",
        "topic": name,
        "records.per.task": str(records_per_task),
        "key.converter": STRING_CONVERTER,
        "value.converter": STRING_CONVERTER,
    }
    assert http.put(f"/connectors/{name}/config", json=config).status_code == 201

    def running_there() -> bool:
        tasks = http.get(f"/connectors/{name}/status").json().get("tasks", [])
        return len(tasks) == 2 and all(
            t["state"] == "RUNNING" and runs_there(t["worker_id"]) for t in tasks
        )

    wait_for(running_there, 90, f"2 tasks RUNNING {there}")
    total = 2 * records_per_task
    wait_for(
        lambda: sum(len(r) for r in read_topic(bootstrap_servers, name).values()) == total,
        60,
        f"{total} records",
    )


_PORT_TAKEN = "could not listen on"
_PORT_ATTEMPTS = 3


def _start_worker(
    props: Path,
    port: int,
    log: Path,
    env: Mapping[str, str],
    what: str,
    retry_port: bool,
    timeout: float = 240,
) -> tuple[subprocess.Popen[bytes], httpx.Client] | None:
    """One start of ``connectrt spark props``, healthy on ``port``; None when the worker exited
    because its port was taken and ``retry_port`` allows another try (the process has ended)."""
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "connectrt.cli", "spark", str(props)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=dict(env),
        )
    http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
    port_taken = False

    def healthy() -> bool:
        nonlocal port_taken
        if proc.poll() is not None:
            output = log.read_text()
            if retry_port and _PORT_TAKEN in output:
                port_taken = True
                return True
            raise AssertionError(output[-3000:])
        # Only once this process says it listens: until then another test's worker may hold
        # the port (it was free when chosen; the driver binds it a minute later) and answer.
        if f"REST API listening on http://127.0.0.1:{port}" not in log.read_text():
            return False
        try:
            return http.get("/health").json().get("status") == "healthy"
        except httpx.HTTPError:
            return False

    try:
        wait_for(healthy, timeout, f"{what} to be healthy")
    except BaseException:
        http.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        raise
    if port_taken:
        http.close()
        return None
    return proc, http


@contextmanager
def spark_worker(
    props: Path, port: int, log: Path, env: Mapping[str, str], what: str, timeout: float = 240
) -> Iterator[tuple[subprocess.Popen[bytes], httpx.Client]]:
    """``connectrt spark props`` (output to ``log``, environment ``env``), healthy on ``port``
    (``what`` names it in the wait's message; ``timeout`` bounds that wait: the driver's JVM,
    its session and the worker are up in 15-40 s on a quiet machine, but took over 120 s in a
    run with the suite's six processes and two CPU hogs at a load of 20).

    The port was free when the test chose it, but the Spark driver binds ephemeral ports of its
    own before the REST API listens: when the worker exits saying its port is taken, it is
    started again on another free port (``listeners=`` rewritten in ``props``), at most
    :data:`_PORT_ATTEMPTS` times. The yielded client's ``base_url`` has the port in use."""
    started = None
    for attempt in range(1, _PORT_ATTEMPTS + 1):
        started = _start_worker(props, port, log, env, what, attempt < _PORT_ATTEMPTS, timeout)
        if started is not None:
            break
        port = free_port()
        listeners = f"listeners=http://127.0.0.1:{port}"
        props.write_text(re.sub(r"(?m)^listeners=.*$", listeners, props.read_text()))
    assert started is not None
    proc, http = started
    try:
        yield proc, http
    finally:
        http.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


def stop_gracefully(proc: subprocess.Popen[bytes], log: Path) -> None:
    """SIGINT, then exit status 0 within 90 s (the log's tail otherwise)."""
    proc.send_signal(signal.SIGINT)
    assert proc.wait(90) == 0, log.read_text()[-3000:]


def stored_offsets(bootstrap_servers: str, topic: str) -> dict[bytes | None, Any]:
    """The source offsets in the offsets topic ``topic``, the last of each key."""
    return {
        k: decode_value(v)
        for records in read_topic(bootstrap_servers, topic).values()
        for k, v in records
    }
