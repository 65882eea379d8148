"""No setup trap: a script run with the venv's python without activating the venv.

Spark starts its Python workers with ``python3`` from ``PATH`` unless ``PYSPARK_PYTHON`` says
otherwise. Here ``PATH`` starts with a bare virtualenv (no pyarrow, no connectrt), as a shell
without the project's venv activated would. ``register(spark)`` must make the read work when
``PYSPARK_PYTHON`` is unset, and fail at once, saying what to set, when it names that Python.
Each case is a real driver process with its own local[2] session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from collections.abc import Callable
from pathlib import Path

import pytest

from connectrt.broker import EmbeddedBroker
from connectrt.testing.harness import create_topic
from tests.spark.bridge_helpers import produce_raw

pytestmark = [pytest.mark.spark, pytest.mark.integration]

DRIVER = Path(__file__).with_name("register_driver.py")


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv of the base interpreter with nothing installed in it."""
    home = tmp_path_factory.mktemp("bare-venv")
    venv.create(home, with_pip=False)
    python = home / "bin" / "python3"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = subprocess.run(
        [python, "-c", "import pyarrow"], capture_output=True, text=True, env=env
    )
    assert probe.returncode != 0, "the bare virtualenv must not have pyarrow"
    return python


@pytest.fixture
def topic(broker: EmbeddedBroker, unique_name: Callable[[str], str]) -> str:
    name = unique_name("plain")
    create_topic(broker.bootstrap_servers, name, 2)
    produce_raw(
        broker.bootstrap_servers,
        name,
        ((None, json.dumps({"n": i}).encode(), i % 2) for i in range(25)),
    )
    return name


def run_driver(broker: EmbeddedBroker, topic: str, env: dict[str, str]) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, str(DRIVER), broker.bootstrap_servers, topic],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, proc.stdout + proc.stderr


def user_env(bare_python: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_"))}
    env.pop("PYTHONPATH", None)
    env["PATH"] = str(bare_python.parent) + os.pathsep + env.get("PATH", "")
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    return env


def test_register_runs_local_workers_with_this_python_when_pyspark_python_is_unset(
    broker: EmbeddedBroker, topic: str, bare_python: Path
) -> None:
    code, output = run_driver(broker, topic, user_env(bare_python))
    assert code == 0, output[-3000:]
    assert "ROWS 25" in output


def test_register_fails_at_once_naming_what_to_set_when_workers_cannot_import_connectrt(
    broker: EmbeddedBroker, topic: str, bare_python: Path
) -> None:
    env = user_env(bare_python)
    env["PYSPARK_PYTHON"] = str(bare_python)  # the user's explicit choice is not overridden
    code, output = run_driver(broker, topic, env)
    assert code == 3, output[-3000:]
    line = next(x for x in output.splitlines() if x.startswith("REGISTER FAILED"))
    assert "cannot import connectrt" in line
    assert "No module named" in line
    assert f"PYSPARK_PYTHON={sys.executable}" in line
    assert "ROWS" not in output
