"""The Spark distribution pyspark installs, and a view of it for local Spark JVMs started here.

:func:`spark_home` is the installed pyspark package, which is a Spark distribution (``bin/``,
``jars/``, ``sbin/``, ``python/lib/pyspark.zip``).

:func:`local_spark_home` is the ``SPARK_HOME`` a local test JVM (a local SparkSession's gateway,
a Spark Connect server) is started with: the same distribution with ``python/`` left out. Spark
puts ``$SPARK_HOME/python/lib/pyspark.zip`` (and py4j's zip) first on every Python worker's
``PYTHONPATH``, and a worker importing pyspark from the zip compiles its sources again each
time, as zip imports keep no bytecode: 1.2 s of CPU against 0.4 s for the installed, compiled
copy (measured with ``python -X importtime``). Spark gives a worker that it starts on its own
(a Python data source's planner, a streaming source's runner) 10 s to connect back, a limit no
setting changes, and on a loaded two-core machine the zip import alone came close to it: two
streaming tests failed with "Python worker failed to connect back". Without the zips the
workers import the pyspark and py4j installed beside this interpreter, the same versions.
A cluster's workers (``spark_standalone``, ``submit.sh``) keep the real home: there the zip is
how pyspark reaches executors.

The view is a folder of symbolic links in the user cache, made once per installed pyspark;
concurrent callers (xdist processes) race safely (built aside, renamed into place).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from connectrt.testing.build_cache import user_cache

__all__ = ["local_spark_home", "spark_home"]

#: What the view leaves out of the distribution: the Python sources Spark would hand its workers.
_LEFT_OUT = frozenset({"python"})


def spark_home() -> Path:
    """The installed pyspark package, which is a Spark distribution (bin/, jars/, sbin/)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def local_spark_home() -> Path:
    """The distribution without ``python/``, for local JVMs (see the module docstring)."""
    home = spark_home()
    view = user_cache("spark-home") / hashlib.sha256(str(home).encode()).hexdigest()[:16]
    if (view / "bin").exists():
        return view
    view.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".view-", dir=view.parent))
    try:
        for entry in home.iterdir():
            name = entry.name
            if name not in _LEFT_OUT and not name.startswith(("_", ".")) and entry.is_dir():
                (scratch / name).symlink_to(entry, target_is_directory=True)
        try:
            os.rename(scratch, view)
        except OSError:
            if not (view / "bin").exists():  # not another process's view: a real failure
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return view
