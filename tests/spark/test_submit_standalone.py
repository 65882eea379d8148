"""``deploy/spark/submit.sh`` against a real Spark standalone cluster whose worker hosts have no
connectrt: the executors run connector tasks with the Python environment shipped with the job.

The cluster (:class:`~connectrt.testing.spark_standalone.StandaloneCluster`, 2 worker hosts on
``127.0.0.2`` and ``127.0.0.3``, 2 cores each) is ``isolated``: its workers, hence their
executors, get no ``PYTHONPATH``, no ``PYSPARK_PYTHON`` and no virtualenv on ``PATH``, so an
executor finds neither the project nor its requirements (the base interpreter it could run has
no connectrt). ``connectrt pack-env`` packs the environment; ``submit.sh`` runs spark-submit in
client mode with it as ``--archives ...#environment``, the FileStream source's input shipped
with ``--files`` (the connector names it by a relative path: the executor's working
directory), the REST API listening on every interface and asked on another address than the
driver's (``127.0.0.9``), and a worker file whose ``spark.master=local[4,3]`` must give way to
spark-submit's ``--master``.

One cluster and one driver for the module (the ``spark-standalone`` unit of work under xdist,
see ``tests/conftest.py``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.ports import free_port
from connectrt.testing.child_lifeline import die_with_this_thread
from connectrt.testing.harness import create_topic, read_topic
from connectrt.testing.java_runtime import LEAN_TEST_JVM_OPTIONS
from connectrt.testing.rest import wait_for
from connectrt.testing.spark_standalone import StandaloneCluster, spark_home
from tests.spark.cli_support import STRING_CONVERTER, write_worker_properties

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SUBMIT = ROOT / "deploy" / "spark" / "submit.sh"
#: The address the test asks the REST API on: not the driver's (127.0.0.1), not bound by name.
CLIENT_SIDE = "127.0.0.9"
LINES = [f"line-{i}" for i in range(5_000)]


@dataclass
class Submitted:
    cluster: StandaloneCluster
    http: httpx.Client
    bootstrap: str
    archive: Path
    log: Path

    def tasks(self, name: str) -> list[dict[str, str]]:
        return list(self.http.get(f"/connectors/{name}/status").json().get("tasks", []))


def _start_pack(archive: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """``connectrt pack-env`` as an operator runs it (gzip level 1: the test's time), in the
    background while the cluster starts."""
    return subprocess.Popen(
        [sys.executable, "-m", "connectrt.cli", "pack-env", "-o", str(archive), "-c", "1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _packed(pack: subprocess.Popen[str]) -> None:
    output, _ = pack.communicate(timeout=600)
    assert pack.returncode == 0, output
    assert "confluent-kafka==" in output and "pyspark" not in output


@pytest.fixture(scope="module")
def submitted(
    broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Submitted]:
    folder = tmp_path_factory.mktemp("submit")
    project_path = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        "PYTHONPATH": project_path,  # the driver's: this host has connectrt
    }
    archive = folder / "connectrt-env.tar.gz"
    pack = _start_pack(archive, env)
    (folder / "cluster").mkdir()
    with StandaloneCluster(cores=2, folder=folder / "cluster", isolated=True) as cluster:
        try:
            cluster.start(workers=2, timeout=300)
        finally:
            _packed(pack)
        run = uuid.uuid4().hex[:8]
        port = free_port()
        props = write_worker_properties(
            folder / "worker.properties",
            broker.bootstrap_servers,
            f"submit-{run}",
            port,
            [
                "offset.flush.interval.ms=1000",
                "task.executor.spark.slots.poll.ms=1000",
                # spark-submit's --master wins over this (it would run every task locally).
                "spark.master=local[4,3]",
                "spark.ui.enabled=false",
                "spark.ui.showConsoleProgress=false",
            ],
        )
        source = folder / "in.txt"
        source.write_text("\n".join(LINES) + "\n")
        lean = " ".join(LEAN_TEST_JVM_OPTIONS)
        submit_env = {
            **env,
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "ENV_ARCHIVE": str(archive),
            "DRIVER_PYTHON": sys.executable,
            "DRIVER_HOST": "127.0.0.1",
            "REST_LISTENER": f"http://0.0.0.0:{port}",
            "REST_ADVERTISED_HOST": CLIENT_SIDE,
            "FILES": str(source),
            "TASKS": "3",  # source + sink, one slot kept free: 2 executors x 2 cores
            "EXECUTOR_CORES": "2",
        }
        log = folder / "driver.log"
        spark_options = [
            "--driver-memory", "512m",
            "--driver-java-options", lean,
            "--conf", f"spark.executor.extraJavaOptions={lean}",
            "--conf", f"spark.executor.memory={cluster.executor_memory}",
        ]  # fmt: skip
        with log.open("w") as out:
            proc = subprocess.Popen(
                ["sh", str(SUBMIT), cluster.master_url, str(props), *spark_options],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=submit_env,
                cwd=folder,
                start_new_session=True,  # spark-submit's JVM and the Python driver: one group
                preexec_fn=die_with_this_thread(),
            )
        http = httpx.Client(base_url=f"http://{CLIENT_SIDE}:{port}", timeout=30)

        def healthy() -> bool:
            if proc.poll() is not None:
                raise AssertionError(log.read_text()[-4000:])
            try:
                return http.get("/health").json().get("status") == "healthy"
            except httpx.HTTPError:
                return False

        try:
            wait_for(healthy, 420, f"the driver's REST API on {CLIENT_SIDE}:{port}")
            yield Submitted(cluster, http, broker.bootstrap_servers, archive, log)
        finally:
            http.close()
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(60)


def _proc_text(pid: int, name: str) -> str:
    return Path(f"/proc/{pid}/{name}").read_bytes().replace(b"\0", b" ").decode(errors="replace")


def test_a_file_pipeline_runs_on_the_shipped_environment(submitted: Submitted) -> None:
    """FileStream source (the file shipped with --files) -> topic -> FileStream sink (a file in
    the executor's working directory): every line once, in order, both ways; the tasks run on
    the worker hosts, in Python workers whose connectrt and confluent-kafka come from the
    unpacked archive."""
    http = submitted.http
    assert http.get("/").status_code == 200
    port = submitted.http.base_url.port
    run = uuid.uuid4().hex[:8]
    topic = f"lines-{run}"
    create_topic(submitted.bootstrap, topic, partitions=1)
    source = {
        "connector.class": "FileStreamSource",
        "tasks.max": "1",
        "file": "in.txt",  # relative: the copy --files put in the executor's working directory
        "topic": topic,
        "key.converter": STRING_CONVERTER,
        "value.converter": STRING_CONVERTER,
    }
    sink = {
        "connector.class": "FileStreamSink",
        "tasks.max": "1",
        "file": f"out-{run}.txt",
        "topics": topic,
        "key.converter": STRING_CONVERTER,
        "value.converter": STRING_CONVERTER,
    }
    assert http.put(f"/connectors/source-{run}/config", json=source).status_code == 201
    assert http.put(f"/connectors/sink-{run}/config", json=sink).status_code == 201

    def values() -> list[bytes | None]:
        return [
            v for records in read_topic(submitted.bootstrap, topic).values() for _, v in records
        ]

    wait_for(lambda: len(values()) >= len(LINES), 300, f"{len(LINES)} lines in {topic}")
    assert values() == [line.encode() for line in LINES]  # exactly once, in order

    cluster_dir = submitted.cluster.folder
    assert cluster_dir is not None

    def sink_lines() -> list[str]:
        found = list(cluster_dir.glob(f"worker-*/app-*/*/out-{run}.txt"))
        return found[0].read_text().splitlines() if len(found) == 1 else []

    wait_for(lambda: len(sink_lines()) >= len(LINES), 300, "every line in the sink's file")
    assert sink_lines() == LINES

    for name in (f"source-{run}", f"sink-{run}"):
        status = http.get(f"/connectors/{name}/status").json()
        # The driver's id: submit.sh's REST_ADVERTISED_HOST and the listener's port.
        assert status["connector"]["worker_id"] == f"{CLIENT_SIDE}:{port}", status
        [task] = submitted.tasks(name)
        assert task["state"] == "RUNNING", task
        pid = task["worker_id"].rsplit(":", 1)[1]
        host = submitted.cluster.host_of(int(pid))
        assert host is not None, f"{name} ({task['worker_id']}) runs on no worker host"
        # The task's Python worker: started from the archive unpacked in its executor's
        # working directory, without the project on its path, with confluent-kafka's
        # compiled extension loaded from the archive.
        workdir = Path(os.readlink(f"/proc/{pid}/cwd"))
        assert workdir.is_relative_to(cluster_dir), workdir
        shipped = workdir / "environment"
        assert (shipped / "pyvenv.cfg").is_file()
        site = next(shipped.glob("lib/python3.*/site-packages"))
        assert (site / "connectrt" / "__init__.py").is_file()
        assert "environment/bin/python" in _proc_text(int(pid), "cmdline")
        environ = dict(
            item.split("=", 1)
            for item in Path(f"/proc/{pid}/environ").read_text().split("\0")
            if "=" in item
        )
        path = environ.get("PYTHONPATH", "").replace(str(spark_home()), "<spark>")
        assert str(ROOT) not in path and "site-packages" not in path, path
        maps = _proc_text(int(pid), "maps")
        assert f"{site.resolve()}/confluent_kafka" in maps or f"{site}/confluent_kafka" in maps

    for name in (f"source-{run}", f"sink-{run}"):
        assert http.delete(f"/connectors/{name}").status_code == 204
