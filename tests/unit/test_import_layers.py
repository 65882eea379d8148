"""The import contracts in pyproject.toml catch what they are there to catch.

``make check`` runs ``lint-imports`` on the project; these tests run it on a copy of the
packages with one violation planted, so a contract that silently stopped matching would show.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _copy_project(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in ("connectrt", "connectors"):
        shutil.copytree(ROOT / package, dest / package, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")


def _lint(project: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(project)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(project / "pyproject.toml")],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def project_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("layers")
    _copy_project(dest)
    return dest


def test_the_project_keeps_every_contract(project_copy: Path) -> None:
    result = _lint(project_copy)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout


@pytest.mark.parametrize(
    ("module", "source", "contract"),
    [
        (
            "connectrt/storage/_planted.py",
            "from connectrt.runtime.worker.worker import Worker\n",
            "connectrt layers",
        ),
        (
            "connectrt/rest/_planted.py",
            "import connectrt.spark.config\n",
            "connectrt layers",
        ),
        (
            "connectrt/runtime/tasks/_planted.py",
            "from connectrt.runtime.sink.runner import SinkTaskRunner\n",
            "runtime floors",
        ),
        (
            "connectrt/runtime/source/_planted.py",
            "from connectrt.runtime.sink.offsets import SinkOffsetCommitter\n",
            "runtime floors",
        ),
        (
            "connectors/file/_planted.py",
            "from connectrt.converters.json import JsonConverter\n",
            "bundled connectors import only",
        ),
        (
            "connectrt/transforms/_planted.py",
            "from connectrt.transforms.chain import TransformationChain\n",
            "no import cycles",
        ),
    ],
)
def test_a_planted_violation_breaks_its_contract(
    tmp_path: Path, module: str, source: str, contract: str
) -> None:
    _copy_project(tmp_path)
    (tmp_path / module).write_text(source)
    if "cycles" in contract:
        # Close the loop: chain imports the planted module back.
        chain = tmp_path / "connectrt/transforms/chain.py"
        chain.write_text(
            chain.read_text() + "\nfrom connectrt.transforms import _planted  # noqa\n"
        )
    result = _lint(tmp_path)
    assert result.returncode != 0, result.stdout
    broken = [line for line in result.stdout.splitlines() if line.endswith("BROKEN")]
    assert any(line.startswith(contract) for line in broken), result.stdout
