"""Making Spark's Python workers find connectrt, or saying at once what to set.

Spark runs Python code (data source planning, ``read()``, ``write()``, ``mapInArrow``) in
Python worker processes it starts itself, with ``PYSPARK_PYTHON`` (default: ``python3`` from
``PATH``), not with the interpreter of the driver script. A script run with a virtualenv's
python without activating it therefore fails on its first read with ``No module named
'connectrt'`` (or ``'pyarrow'``), long after the session started.

* :func:`adopt_local_workers`: for a classic session on a ``local`` master whose workers would
  run the default ``python3``, point them at this interpreter and this process's import path
  (what ``connectrt spark`` does by setting ``PYSPARK_PYTHON`` before the session starts).
  Spark fixes the worker interpreter of a Python function when the function is created, so
  this must run before the data source is registered.
* :func:`check_workers`: everywhere else (Spark Connect, where the workers are the server's; a
  cluster; an explicit ``PYSPARK_PYTHON``) run one tiny job whose single task imports what the
  bridge needs, and raise :class:`WorkerEnvironmentError` naming the workers' interpreter, the
  import error and what to set.

Driver side, from the thread that owns the session.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from connectrt.errors import ConnectError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "WorkerEnvironmentError",
    "adopt_local_workers",
    "check_workers",
    "is_connect_session",
]

log = logging.getLogger(__name__)

# What a bridge task imports: the data source (pyspark, pyarrow, confluent-kafka, the runtime).
PROBE_MODULES = ("pyarrow", "confluent_kafka", "connectrt.spark.datasource.source")
_DEFAULT_WORKER_PYTHON = "python3"


class WorkerEnvironmentError(ConnectError):
    """Spark's Python workers cannot import connectrt; the message says what to set."""


def is_connect_session(spark: Any) -> bool:
    """True for a Spark Connect session (``SparkSession.builder.remote(...)``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _project_root() -> str:
    import connectrt

    return str(Path(connectrt.__file__).resolve().parent.parent)


def adopt_local_workers(spark: SparkSession) -> bool:
    """Point a classic local session's Python workers at this interpreter (see the module
    docstring). Returns True when the workers are known to run this interpreter with this
    import path (so no check is needed), False when they are not this process's to set."""
    if is_connect_session(spark):
        return False
    sc = spark.sparkContext
    if not str(sc.master).startswith("local"):
        return False
    root = _project_root()
    paths = [p for p in (sc.environment.get("PYTHONPATH") or "").split(os.pathsep) if p]
    if root not in paths:
        sc.environment["PYTHONPATH"] = os.pathsep.join([*paths, root])
    if sc.pythonExec == sys.executable:
        return True
    if "PYSPARK_PYTHON" in os.environ or sc.pythonExec != _DEFAULT_WORKER_PYTHON:
        return False  # the user chose the workers' interpreter: check it rather than override
    log.info(
        "Spark's Python workers would run %r from PATH; running them with %s instead (as "
        "with PYSPARK_PYTHON=%s)",
        sc.pythonExec,
        sys.executable,
        sys.executable,
    )
    sc.pythonExec = sys.executable
    os.environ["PYSPARK_PYTHON"] = sys.executable
    return True


def _probe_schema() -> str:
    return "python string, error string"


def check_workers(spark: SparkSession) -> None:
    """Run one task that imports :data:`PROBE_MODULES` on a Python worker; raise
    :class:`WorkerEnvironmentError` if it cannot (see the module docstring)."""
    modules = PROBE_MODULES

    # Defined here, not at module level, so that cloudpickle ships it by value: a worker that
    # cannot import connectrt can still run it and say why.
    def probe(batches: Iterator[Any]) -> Iterator[Any]:
        import importlib
        import sys as worker_sys

        import pyarrow

        error = ""
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception as e:
                error = f"{type(e).__name__}: {e}"
                break
        for _ in batches:
            pass
        yield pyarrow.RecordBatch.from_pydict({"python": [worker_sys.executable], "error": [error]})

    where = "the Spark Connect server's" if is_connect_session(spark) else "Spark's"
    try:
        rows = spark.range(1, numPartitions=1).mapInArrow(probe, _probe_schema()).collect()
    except Exception as e:
        raise WorkerEnvironmentError(_advice(spark, where, None, _first_line(e))) from e
    python, error = rows[0]["python"], rows[0]["error"]
    if error:
        raise WorkerEnvironmentError(_advice(spark, where, python, error))
    log.info("%s Python workers (%s) import connectrt", where, python)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    for line in text.splitlines():
        if "ModuleNotFoundError" in line or "ImportError" in line:
            return line.strip()
    return text.splitlines()[0][:500] if text else type(error).__name__


def _advice(spark: Any, where: str, python: str | None, error: str) -> str:
    ran = f" ({python})" if python else ""
    if is_connect_session(spark):
        todo = (
            "Start the Spark Connect server with PYSPARK_PYTHON (or spark.pyspark.python) set "
            "to a Python that has connectrt installed with its spark extra (pip install "
            "'connectrt[spark]'), the same Python version as this client"
        )
    elif str(spark.sparkContext.master).startswith("local"):
        todo = (
            f"Set PYSPARK_PYTHON={sys.executable} (this interpreter) before the SparkSession "
            "starts, or unset it to let connectrt choose, or install connectrt with its spark "
            "extra into the Python that PYSPARK_PYTHON names"
        )
    else:
        todo = (
            "Install connectrt with its spark extra on every node and set "
            "spark.pyspark.python (or PYSPARK_PYTHON) to that Python, or ship a packed "
            "virtualenv with --archives (see deploy/spark/README.md)"
        )
    return (
        f"{where} Python workers{ran} cannot import connectrt and what the DataFrame bridge "
        f"needs: {error}. {todo}."
    )
