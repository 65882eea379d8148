"""``deploy/spark/submit.sh`` builds the spark-submit command line its docs promise: checked
with a stand-in ``SPARK_SUBMIT`` that prints its arguments (the real submission runs in
``tests/spark/test_submit_standalone.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SUBMIT = ROOT / "deploy" / "spark" / "submit.sh"


def _run(tmp_path: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    stub = tmp_path / "spark-submit"
    stub.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    stub.chmod(0o755)
    base = {k: v for k, v in os.environ.items() if k != "SPARK_HOME"}
    return subprocess.run(
        ["sh", str(SUBMIT), "spark://master:7077", "worker.properties", *extra],
        env={**base, "SPARK_SUBMIT": str(stub), "DRIVER_PYTHON": sys.executable, **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_archive_files_and_listener_reach_spark_submit(tmp_path: Path) -> None:
    (tmp_path / "env.tar.gz").write_bytes(b"")
    env = {
        "ENV_ARCHIVE": "env.tar.gz",
        "FILES": "in.txt,trust.jks",
        "DRIVER_HOST": "10.0.0.5",
        "REST_LISTENER": "http://0.0.0.0:9000",
        "REST_ADVERTISED_HOST": "connect.example",
        "TASKS": "3",
        "EXECUTOR_CORES": "2",
    }
    done = _run(tmp_path, env, "--conf", "spark.executor.memory=1g")
    assert done.returncode == 0, done.stderr
    args = done.stdout.splitlines()

    def after(flag: str) -> list[str]:
        return [args[i + 1] for i, a in enumerate(args) if a == flag]

    assert after("--master") == ["spark://master:7077"]
    assert after("--deploy-mode") == ["client"]
    assert after("--archives") == ["env.tar.gz#environment"]
    assert after("--files") == ["in.txt,trust.jks"]
    assert set(after("--conf")) >= {
        "spark.pyspark.python=./environment/bin/python",
        f"spark.pyspark.driver.python={sys.executable}",
        "spark.driver.host=10.0.0.5",
        "spark.cores.max=4",
        "spark.executor.cores=2",
        "spark.executor.memory=1g",
    }
    app = args.index(str(ROOT / "deploy" / "spark" / "connectrt_spark.py"))
    assert args[app + 1 :] == [
        "worker.properties",
        "listeners=http://0.0.0.0:9000",
        "rest.advertised.host.name=connect.example",
    ]


def test_without_an_archive_the_nodes_python_runs_the_tasks(tmp_path: Path) -> None:
    done = _run(tmp_path, {"ENV_ARCHIVE": "none"})
    assert done.returncode == 0, done.stderr
    args = done.stdout.splitlines()
    assert "--archives" not in args and "--files" not in args
    assert not any(a.startswith("spark.pyspark.python=") for a in args)
    assert args[-1] == "listeners=http://0.0.0.0:8083"  # every interface by default


def test_a_missing_archive_says_how_to_make_it(tmp_path: Path) -> None:
    done = _run(tmp_path, {})
    assert done.returncode == 1
    assert "connectrt-env.tar.gz not found: run 'connectrt pack-env" in done.stderr
