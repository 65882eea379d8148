"""The plugin and file settings of the workers the test helpers start.

A worker loads only discovered plugins unless its ``plugin.packages`` lists more, and lets the
FileStream connectors use only the directories of ``file.connectors.allowed.dirs``. Tests
usually run connectors defined in the test suite (``tests.plugins.sequence.SequenceSource``)
and write files under pytest's temporary directories, so :class:`~.harness.WorkerHarness` and
:func:`~.rest.rest_worker_props` add :func:`test_worker_settings` to their worker configs:

* ``plugin.packages``: what a test suite declared once with :func:`allow_plugin_packages`
  (in its ``conftest.py``: ``allow_plugin_packages("tests")``);
* ``file.connectors.allowed.dirs``: the system temporary directory (where ``tmp_path`` is).

Settings a test passes explicitly win. :func:`allow_plugin_packages` also allows the packages
in this process's plugin registry, for code that loads classes without a worker config.
Call it at import time (conftest), before tests start threads.
"""

from __future__ import annotations

import tempfile

from connectrt.runtime.plugins.registry import registry

__all__ = ["allow_plugin_packages", "test_worker_settings"]

_PLUGIN_PACKAGES: list[str] = []


def allow_plugin_packages(*packages: str) -> None:
    """Let test workers (and this process's registry) load classes from ``packages``."""
    registry.allow_packages(packages)
    _PLUGIN_PACKAGES.extend(p for p in packages if p not in _PLUGIN_PACKAGES)


def test_worker_settings() -> dict[str, str]:
    """``plugin.packages`` and ``file.connectors.allowed.dirs`` for a test worker."""
    return {
        "plugin.packages": ",".join(_PLUGIN_PACKAGES),
        "file.connectors.allowed.dirs": tempfile.gettempdir(),
    }
