"""Start ``connectrt standalone`` as a real subprocess for the kill -9 tests of this package."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def start_standalone(
    tmp: Path, log_name: str, connectors: tuple[str, ...] = ("sink.properties",)
) -> subprocess.Popen[bytes]:
    """A standalone worker on ``tmp/worker.properties`` and the connector files in ``tmp``,
    logging (WARNING and above) to ``tmp/log_name``. The caller kills and waits for it."""
    with (tmp / log_name).open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "connectrt.cli", "--log-level", "WARNING", "standalone"]
            + [str(tmp / "worker.properties")]
            + [str(tmp / name) for name in connectors],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
