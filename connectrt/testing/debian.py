"""Installing a Debian package a test service needs (Chromium, PostgreSQL) when it is missing.

Only as root with ``apt-get`` on the path; the caller's own exception otherwise, so that the
tests that need the package can skip with its message. Runs ``apt-get update`` then a
non-interactive ``apt-get install`` of the one package; blocking. Processes of this machine
take turns through a lock file (pytest-xdist workers reach for Chromium at the same moment: the
second ``apt-get`` found dpkg's lock held and failed), and each ``apt-get`` also waits up to
:data:`LOCK_WAIT_S` for dpkg's own locks, which another program may hold.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["LOCK_WAIT_S", "apt_install", "can_apt_install"]

LOCK_WAIT_S = 600
"""How long an ``apt-get`` waits for dpkg's locks (``DPkg::Lock::Timeout``)."""


def can_apt_install() -> bool:
    """Whether this process may install packages (root, ``apt-get`` on the path)."""
    return os.geteuid() == 0 and shutil.which("apt-get") is not None


def apt_install(package: str, error: type[Exception]) -> None:
    """Install ``package`` without its recommends; raise ``error`` with apt's stderr tail when
    the install fails (the caller checks :func:`can_apt_install` first)."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    wait = ["-o", f"DPkg::Lock::Timeout={LOCK_WAIT_S}"]
    lock_path = Path(tempfile.gettempdir()) / "connectrt-apt-get.lock"
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        subprocess.run(
            ["apt-get", *wait, "update", "-q"], check=False, env=env, capture_output=True
        )
        result = subprocess.run(
            ["apt-get", *wait, "install", "-y", "-q", "--no-install-recommends", package],
            env=env,
            capture_output=True,
            text=True,
        )
    if result.returncode != 0:
        raise error(f"apt-get install {package} failed:\n{result.stderr[-2000:]}")
