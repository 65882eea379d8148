"""A local SparkSession configured for this machine's traps, shared by tests and examples.

:func:`local_spark_session` fixes what otherwise breaks PySpark on a developer box or CI:

* executors' Python workers run ``sys.executable`` (the venv), not ``python3`` from ``PATH``;
* they can import the project: the driver's ``sys.path`` is exported as ``PYTHONPATH`` before
  the JVM starts (workers do not see ``sys.path`` edits made in the driver);
* everything binds to loopback (``SPARK_LOCAL_IP``, ``spark.driver.host``/``bindAddress``);
* no UI and no console progress bars (they garble captured output);
* the JVM starts from :func:`~connectrt.testing.spark_home.local_spark_home` (unless
  ``SPARK_HOME`` is set), so that its Python workers import the installed pyspark instead of
  compiling ``pyspark.zip`` at each start.

Only one SparkContext may live in a process: the first call creates it, later calls return it
(``getOrCreate`` semantics, the master of the first call wins). Call it from the main thread.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from connectrt.testing.java_runtime import LEAN_TEST_JVM_OPTIONS
from connectrt.testing.spark_home import local_spark_home

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DEFAULT_TEST_MASTER", "local_spark_session", "prepare_spark_environment"]

# 10 thread slots (two connectors of 4 long-running tasks each plus spare slots), each task
# attempted up to 3 times so an injected crash is re-run instead of failing the job.
DEFAULT_TEST_MASTER = "local[10,3]"

#: ``spark.driver.extraJavaOptions`` of the test sessions (the driver is the executor in local
#: mode): the C1 compiler only and the serial collector. Measured on 2 cores (start, five
#: aggregations of 2 M rows, a 20,000-row Python map): the JVM's CPU 28 s with the defaults and
#: 14-15 s with these, and the wall time 19 s against 14-16 s. Pass your own
#: ``spark.driver.extraJavaOptions`` in ``conf`` for heavy jobs.
TEST_DRIVER_JAVA_OPTIONS = " ".join(LEAN_TEST_JVM_OPTIONS)


def prepare_spark_environment() -> None:
    """Export the environment Spark's JVM and Python workers must inherit (idempotent)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    existing = os.environ.get("PYTHONPATH", "")
    merged = os.pathsep.join(dict.fromkeys([*existing.split(os.pathsep), *paths]).keys())
    os.environ["PYTHONPATH"] = merged.strip(os.pathsep)


def local_spark_session(
    master: str | None = None,
    *,
    app_name: str = "connectrt",
    conf: dict[str, Any] | None = None,
) -> SparkSession:
    """Create (or return the existing) SparkSession on ``master`` with loopback-only settings.

    ``master`` defaults to ``$CONNECTRT_SPARK_MASTER`` or :data:`DEFAULT_TEST_MASTER`.
    """
    prepare_spark_environment()
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(
            master or os.environ.get("CONNECTRT_SPARK_MASTER", DEFAULT_TEST_MASTER)
        )
        .appName(app_name)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.python.worker.reuse", "true")
        .config("spark.driver.extraJavaOptions", TEST_DRIVER_JAVA_OPTIONS)
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, str(value))
    if "SPARK_HOME" in os.environ:
        session = builder.getOrCreate()
    else:  # the gateway's JVM takes its home from the environment at its launch
        os.environ["SPARK_HOME"] = str(local_spark_home())
        try:
            session = builder.getOrCreate()
        finally:
            del os.environ["SPARK_HOME"]
    session.sparkContext.setLogLevel("ERROR")
    return session
