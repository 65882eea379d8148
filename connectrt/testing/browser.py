"""Headless Chromium for browser tests and screenshots: Debian's ``chromium`` driven by Playwright.

:func:`find_chromium` looks for the browser (``CONNECTRT_CHROMIUM``, then ``/usr/bin/chromium``
and ``chromium`` on ``PATH``); :func:`ensure_chromium` installs Debian's ``chromium`` package
with ``apt-get`` when it is missing and we are root (as :mod:`connectrt.testing.postgres` does
for PostgreSQL), so ``make test`` works on a fresh machine. Playwright's own browser downloads
(``playwright install``) are never used: :func:`launch` starts the system browser through
``executable_path`` with the flags a sandboxed, offline CI needs.

Lifecycle: :func:`launch` returns a started Playwright and a browser; close both with
:func:`close` (a test fixture does it). Not thread-safe: Playwright's sync API belongs to the
thread that started it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from connectrt.testing.debian import apt_install, can_apt_install

__all__ = [
    "CHROMIUM_ARGS",
    "BrowserUnavailable",
    "close",
    "ensure_chromium",
    "find_chromium",
    "launch",
    "launched",
]

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


class BrowserUnavailable(RuntimeError):
    """Chromium is missing and could not be installed."""


def find_chromium() -> str | None:
    """The Chromium executable, or None."""
    candidates = [os.environ.get("CONNECTRT_CHROMIUM", ""), "/usr/bin/chromium"]
    for path in candidates:
        if path and os.access(path, os.X_OK):
            return path
    return shutil.which("chromium")


def ensure_chromium(install: bool = True) -> str:
    """The Chromium executable, installing Debian's ``chromium`` package when it is missing,
    ``install`` is true and we are root; BrowserUnavailable otherwise."""
    found = find_chromium()
    if found is not None:
        return found
    if not install or not can_apt_install():
        raise BrowserUnavailable(
            "Chromium not found; install Debian's 'chromium' package (or set CONNECTRT_CHROMIUM)"
        )
    apt_install("chromium", BrowserUnavailable)
    found = find_chromium()
    if found is None:
        raise BrowserUnavailable("chromium was installed but its executable was not found")
    return found


def launch(install: bool = True) -> tuple[Any, Any]:
    """``(playwright, browser)``: Playwright's sync API started and the system Chromium
    launched headless (see :data:`CHROMIUM_ARGS`)."""
    executable = ensure_chromium(install)
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    try:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
    except BaseException:
        playwright.stop()
        raise
    return playwright, browser


def close(playwright: Any, browser: Any) -> None:
    try:
        browser.close()
    finally:
        playwright.stop()


@contextmanager
def launched(install: bool = True) -> Iterator[Any]:
    """Chromium launched headless (:func:`launch`) for the block, closed after it, also when
    the block raises. Use it from one thread: Playwright's sync API is bound to its thread."""
    playwright, browser = launch(install)
    try:
        yield browser
    finally:
        close(playwright, browser)
