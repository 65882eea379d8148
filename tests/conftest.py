"""Shared fixtures come from connectrt's pytest plugin (the same ones plugin authors use).

The suite's own plugins (``tests.plugins``, and connectors some test modules define) are named
by Python path; a worker loads such classes only from the packages its ``plugin.packages``
lists, so the test workers list ``tests`` (see ``connectrt.testing.worker_defaults``).

Under pytest-xdist (``make test`` runs ``-n N --dist loadgroup``) every test module is one
unit of work, so its module-scoped workers start once, on one xdist worker. The Spark modules
make three units: those on a Spark Connect server (``spark_connect_server``), and the others
split in two (the data source modules, and the rest), each unit with its own local
``spark`` SparkSession (one JVM per unit; a single local unit was the run's critical path).
The Spark units are handed out first, being the longest, then the end-to-end and integration
modules, the unit tests last.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from connectrt.api.file_access import configure_file_access, file_access
from connectrt.testing.worker_defaults import allow_plugin_packages

pytest_plugins = ["connectrt.testing.pytest_plugin"]

allow_plugin_packages("tests")


_UNRESTRICTED = file_access()


@pytest.fixture(autouse=True)
def _fresh_file_access() -> Iterator[None]:
    """Each test starts under the rule a process has before any worker runs (unrestricted) and
    the one before it is put back after: a worker running in this process installs its own
    rule whenever it builds a task (even while a module-scoped worker is torn down), and under
    xdist the next test on the same process (a FileStream unit test, say) would otherwise run
    under it. A test whose worker builds a task gets that worker's rule then, as in production.
    """
    before = file_access()
    configure_file_access(_UNRESTRICTED)
    yield
    configure_file_access(before)


#: The order units of work are handed out in: lower first.
_TIERS = {"spark": 0, "e2e": 1, "integration": 2}


def _unit_of(item: pytest.Item) -> str:
    """The xdist work unit of ``item``: for Spark tests ``spark-connect`` (on the Spark Connect
    server), else ``spark-datasource`` (the data source modules) or ``spark`` (the rest), each
    with its own local SparkSession; for the others its module."""
    if item.get_closest_marker("spark") is not None:
        if "spark_connect_server" in getattr(item, "fixturenames", ()):
            return "spark-connect"
        module = item.nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
        return "spark-datasource" if module.startswith("test_datasource_") else "spark"
    return item.nodeid.split("::", 1)[0]


def _tier_of(item: pytest.Item) -> int:
    if item.get_closest_marker("spark") is not None:
        return _TIERS["spark"]
    parts = item.nodeid.split("/")
    return _TIERS.get(parts[1] if len(parts) > 2 else "", len(_TIERS))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Group and order the tests for ``--dist loadgroup`` (see the module docstring); a run
    without xdist keeps pytest's order."""
    if getattr(config.option, "dist", "no") != "loadgroup":
        return
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(_unit_of(item)))
    items.sort(key=_tier_of)  # stable: modules keep their order within a tier
