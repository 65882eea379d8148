"""A real Spark standalone cluster for tests, from pyspark's own classes and jars.

:class:`StandaloneCluster` runs ``org.apache.spark.deploy.master.Master`` on ``127.0.0.1`` and
any number of ``org.apache.spark.deploy.worker.Worker`` JVMs, each a "host" of its own: worker
``n`` (from 1) binds ``127.0.0.<n+1>`` (Linux routes all of ``127.0.0.0/8`` to loopback) with
``cores`` cores, so executors, their Python workers and the tasks' worker ids differ per host.
The JVMs are pyspark's jars run by ``java`` directly (what ``bin/spark-class`` would run, without
its launcher JVM), with :data:`~connectrt.testing.java_runtime.LEAN_TEST_JVM_OPTIONS`.

Lifecycle: :meth:`StandaloneCluster.start` starts the master and ``workers`` workers and
returns once each worker has registered; :meth:`add_worker` starts one more host;
:meth:`kill_worker` SIGKILLs a host's every process (the Worker JVM, the executor JVM it
launched and the executor's Python workers: a host that dies); :meth:`host_of` names the host a
process runs on; :meth:`stop` kills everything.
Each JVM runs in a session of its own and dies with the test process
(:mod:`connectrt.testing.child_lifeline`).

A driver joins with :meth:`driver_conf` (``spark.master`` and lean executors: 512 MiB heap,
the lean JVM options, executor cores = the worker's cores). Executors inherit each Worker's
environment: ``PYSPARK_PYTHON`` (this interpreter) and ``PYTHONPATH`` (this process's
``sys.path``), so the Python workers import the project as the driver does; every "host"
shares this machine's filesystem. With ``isolated=True`` the workers get neither, nor this
virtualenv's ``bin`` on ``PATH`` (nor ``VIRTUAL_ENV``): their executors see a node without
connectrt, where a job must ship its Python environment (``spark.archives``).

Threading: one thread (the test's) drives a cluster.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from connectrt.errors import ConnectError
from connectrt.ports import free_port
from connectrt.testing.child_lifeline import die_with_this_thread
from connectrt.testing.java_runtime import LEAN_TEST_JVM_OPTIONS, require_java
from connectrt.testing.jvm_service import tail
from connectrt.testing.spark_home import spark_home

__all__ = ["SparkClusterError", "StandaloneCluster", "StandaloneWorker", "spark_home"]

_MASTER_CLASS = "org.apache.spark.deploy.master.Master"
_WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
_MASTER_READY = "I have been elected leader"
_WORKER_READY = "Successfully registered with master"
_LOG4J = """rootLogger.level = info
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n%ex
logger.jetty.name = org.sparkproject.jetty
logger.jetty.level = warn
"""


class SparkClusterError(ConnectError):
    """The standalone cluster could not start (the message has the JVM's output)."""


def _descendants(root: int) -> list[int]:
    """The processes under ``root`` (children, their children...), from ``/proc``."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                # pid (comm) state ppid ...: comm may hold spaces, so split after its ")".
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
    found: list[int] = []
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        children = [child for child, parent in parents.items() if parent == pid]
        found.extend(children)
        frontier.extend(children)
    return found


def _scala_version() -> str:
    """The Scala binary version of pyspark's jars (``2.13``), from its scala-library jar."""
    for jar in (spark_home() / "jars").glob("scala-library-*.jar"):
        return ".".join(jar.stem.removeprefix("scala-library-").split(".")[:2])
    return "2.13"


@dataclass
class StandaloneWorker:
    """One worker host: its number, address and Worker JVM (group leader of its host)."""

    number: int
    host: str
    proc: subprocess.Popen[bytes]
    log: Path
    killed: bool = False

    @property
    def alive(self) -> bool:
        return not self.killed and self.proc.poll() is None


@dataclass
class StandaloneCluster:
    """See the module docstring. ``cores`` per worker, ``worker_memory`` each worker offers."""

    cores: int = 2
    worker_memory: str = "1g"
    executor_memory: str = "512m"
    daemon_heap: str = "256m"
    folder: Path | None = None
    isolated: bool = False
    workers: list[StandaloneWorker] = field(default_factory=list)
    master_port: int = 0
    _master: subprocess.Popen[bytes] | None = None
    _own_folder: tempfile.TemporaryDirectory[str] | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self, workers: int = 2, timeout: float = 180.0) -> StandaloneCluster:
        """Start the master, then ``workers`` workers; returns when all have registered."""
        if self.folder is None:
            self._own_folder = tempfile.TemporaryDirectory(prefix="spark-standalone-")
            self.folder = Path(self._own_folder.name)
        (self.folder / "log4j2.properties").write_text(_LOG4J)
        self.master_port = free_port()
        log = self.folder / "master.log"
        self._master = self._spawn(
            _MASTER_CLASS,
            ["--host", "127.0.0.1", "--port", str(self.master_port), "--webui-port", "0"],
            "127.0.0.1",
            log,
        )
        try:
            self._await(self._master, log, _MASTER_READY, timeout, "the Spark master")
            for _ in range(workers):
                self.add_worker(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def add_worker(self, timeout: float = 180.0) -> StandaloneWorker:
        """Start worker host ``127.0.0.<n+1>`` with :attr:`cores` cores; returns once it has
        registered with the master."""
        assert self.folder is not None, "start() the cluster first"
        number = len(self.workers) + 1
        host = f"127.0.0.{number + 1}"
        work = self.folder / f"worker-{number}"
        work.mkdir()
        log = self.folder / f"worker-{number}.log"
        argv = [
            "--host", host,
            "--webui-port", "0",
            "--cores", str(self.cores),
            "--memory", self.worker_memory,
            "--work-dir", str(work),
            self.master_url,
        ]  # fmt: skip
        proc = self._spawn(_WORKER_CLASS, argv, host, log)
        worker = StandaloneWorker(number, host, proc, log)
        self.workers.append(worker)
        self._await(proc, log, _WORKER_READY, timeout, f"Spark worker {number} ({host})")
        return worker

    def kill_worker(self, worker: StandaloneWorker) -> None:
        """SIGKILL the host: its Worker JVM and every process under it (the executor JVM, the
        pyspark daemon, which makes a process group of its own, and its Python workers), as
        when the machine dies."""
        worker.killed = True
        for pid in [worker.proc.pid, *_descendants(worker.proc.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        worker.proc.wait(timeout=60)

    def host_of(self, pid: int) -> StandaloneWorker | None:
        """The live worker host running process ``pid`` (an executor's Python worker, say)."""
        for worker in self.workers:
            if worker.alive and pid in _descendants(worker.proc.pid):
                return worker
        return None

    def stop(self) -> None:
        """Kill every worker host and the master; remove the folder if this made it."""
        for worker in self.workers:
            if not worker.killed:
                self.kill_worker(worker)
        if self._master is not None and self._master.poll() is None:
            try:
                os.killpg(self._master.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._master.wait(timeout=60)
        if self._own_folder is not None:
            self._own_folder.cleanup()
            self._own_folder = None

    def __enter__(self) -> StandaloneCluster:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    # -- for drivers ---------------------------------------------------------------------------
    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    def driver_conf(self) -> dict[str, str]:
        """The ``spark.*`` settings of a driver on this cluster (loopback, no UI, lean
        executors of :attr:`cores` cores)."""
        return {
            "spark.master": self.master_url,
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.executor.cores": str(self.cores),
            "spark.executor.memory": self.executor_memory,
            "spark.executor.extraJavaOptions": " ".join(LEAN_TEST_JVM_OPTIONS),
            "spark.driver.extraJavaOptions": " ".join(LEAN_TEST_JVM_OPTIONS),
        }

    def output(self, worker: StandaloneWorker | None = None, lines: int = 60) -> str:
        """The last lines of the master's log, or of ``worker``'s."""
        assert self.folder is not None
        return tail(worker.log if worker else self.folder / "master.log", lines)

    # -- internals -----------------------------------------------------------------------------
    def _env(self, host: str) -> dict[str, str]:
        spark = {
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": host,
            "SPARK_LOCAL_HOSTNAME": host,
            # The worker builds its executors' classpath from SPARK_HOME; without a RELEASE
            # file (pyspark has none) it asks for the Scala version before finding jars/.
            "SPARK_SCALA_VERSION": _scala_version(),
        }
        if self.isolated:
            venv_bin = str(Path(sys.prefix) / "bin")
            hidden = {"PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV"}
            path = os.pathsep.join(
                p for p in os.environ.get("PATH", "").split(os.pathsep) if p != venv_bin
            )
            kept = {k: v for k, v in os.environ.items() if k not in hidden}
            return {**kept, "PATH": path, **spark}
        paths = [p for p in sys.path if p and os.path.isdir(p)]
        existing = os.environ.get("PYTHONPATH", "")
        pythonpath = os.pathsep.join(dict.fromkeys([*existing.split(os.pathsep), *paths]))
        return {
            **os.environ,
            **spark,
            "PYSPARK_PYTHON": sys.executable,
            "PYTHONPATH": pythonpath.strip(os.pathsep),
        }

    def _spawn(
        self, main_class: str, argv: list[str], host: str, log: Path
    ) -> subprocess.Popen[bytes]:
        assert self.folder is not None
        java = require_java()
        command = [
            java,
            *LEAN_TEST_JVM_OPTIONS,
            f"-Xmx{self.daemon_heap}",
            f"-Dlog4j.configurationFile={self.folder / 'log4j2.properties'}",
            "-cp",
            str(spark_home() / "jars" / "*"),
            main_class,
            *argv,
        ]
        with log.open("wb") as out:
            return subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.folder,
                env=self._env(host),
                start_new_session=True,  # its own process group: kill_worker kills the host
                preexec_fn=die_with_this_thread(),
            )

    @staticmethod
    def _await(
        proc: subprocess.Popen[bytes], log: Path, ready: str, timeout: float, what: str
    ) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready in log.read_text(errors="replace"):
                return
            if proc.poll() is not None:
                raise SparkClusterError(
                    f"{what} exited with status {proc.returncode}:\n{tail(log, 60)}"
                )
            time.sleep(0.5)
        raise SparkClusterError(f"{what} not ready within {timeout:.0f} s:\n{tail(log, 60)}")
