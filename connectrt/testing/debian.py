"""Installing a Debian package a test service needs (Chromium, PostgreSQL) when it is missing.

Only as root with ``apt-get`` on the path; the caller's own exception otherwise, so that the
tests that need the package can skip with its message. Runs ``apt-get update`` then a
non-interactive ``apt-get install`` of the one package; blocking, for one thread at a time.
"""

from __future__ import annotations

import os
import shutil
import subprocess

__all__ = ["apt_install", "can_apt_install"]


def can_apt_install() -> bool:
    """Whether this process may install packages (root, ``apt-get`` on the path)."""
    return os.geteuid() == 0 and shutil.which("apt-get") is not None


def apt_install(package: str, error: type[Exception]) -> None:
    """Install ``package`` without its recommends; raise ``error`` with apt's stderr tail when
    the install fails (the caller checks :func:`can_apt_install` first)."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-q"], check=False, env=env, capture_output=True)
    result = subprocess.run(
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", package],
        env=env,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise error(f"apt-get install {package} failed:\n{result.stderr[-2000:]}")
