"""Shared fixtures come from connectrt's pytest plugin (the same ones plugin authors use).

The suite's own plugins (``tests.plugins``, and connectors some test modules define) are named
by Python path; a worker loads such classes only from the packages its ``plugin.packages``
lists, so the test workers list ``tests`` (see ``connectrt.testing.worker_defaults``).

Under pytest-xdist (``make test`` runs ``-n N --dist loadgroup``) every test module is one
unit of work, so its module-scoped workers start once, on one xdist worker. The Spark modules
that share a session-wide Spark make three units: those on the Spark Connect server
(``spark_connect_server``; their modules are named ``*connect*``), and those on a local
``spark`` SparkSession split in two (the data source modules, and the rest), each unit with its
own session (one JVM per unit; a single local unit was the run's critical path). A Spark module
that asks for none of those fixtures (it starts its own drivers, clusters or worker processes:
``submit.sh`` on a cluster, the standalone cluster, the ``connectrt spark`` command) is a unit of
its own, like any other module, so that the long ones run side by side.
The units are handed out longest first (the seconds each took in a recent run, kept in
``tests/unit_seconds.json`` by ``scripts/unit_seconds.py``), so that no long module starts last and
holds one process after the others are done; the rest follow by tier: Spark, end-to-end,
integration, the unit tests last.
"""

from __future__ import annotations

import ast
import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connectrt.api.file_access import configure_file_access, file_access
from connectrt.testing.worker_defaults import allow_plugin_packages

pytest_plugins = ["connectrt.testing.pytest_plugin"]

allow_plugin_packages("tests")


_UNRESTRICTED = file_access()

_ROOT = Path(__file__).resolve().parent.parent


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


#: The fixtures of a Spark that lives for the whole xdist process (pytest_plugin's).
_SHARED_SPARK = frozenset({"spark", "spark_connect", "spark_connect_server"})


@functools.cache
def _uses_a_shared_spark(module: str) -> bool:
    """Whether a function of the test module ``module`` (a path from the rootdir) asks for a
    session-wide Spark fixture, read from its source: the xdist controller that schedules the
    units has not imported the test modules."""
    tree = ast.parse((_ROOT / module).read_text("utf-8"))
    return any(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and any(arg.arg in _SHARED_SPARK for arg in node.args.args)
        for node in ast.walk(tree)
    )


def unit_of(nodeid: str) -> str:
    """The xdist work unit of the test ``nodeid``. For a Spark module that uses a session-wide
    Spark (:func:`_uses_a_shared_spark`): ``spark-connect`` (modules named ``*connect*``, on
    the session's Spark Connect server), ``spark-datasource`` (the data source modules) or
    ``spark`` (the rest), each unit with its own local SparkSession; for any other test, its
    module."""
    module = nodeid.split("::", 1)[0]
    folder, _, name = module.rpartition("/")
    if folder == "tests/spark" and _uses_a_shared_spark(module):
        if "connect" in name:
            return "spark-connect"
        return "spark-datasource" if name.startswith("test_datasource_") else "spark"
    return module


def _tier_of(item: pytest.Item) -> int:
    parts = item.nodeid.split("/")
    return _TIERS.get(parts[1] if len(parts) > 2 else "", len(_TIERS))


@functools.cache
def _unit_seconds() -> dict[str, float]:
    """The seconds each long unit took in a recent run (``tests/unit_seconds.json``); a unit not
    listed (a short one, or one added since) counts as 0."""
    path = _ROOT / "tests" / "unit_seconds.json"
    return json.loads(path.read_text("utf-8")) if path.exists() else {}


def _handout_key(item: pytest.Item) -> tuple[float, int]:
    return (-_unit_seconds().get(unit_of(item.nodeid), 0.0), _tier_of(item))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` (as ``make test`` runs): xdist's scope scheduling with this suite's
    units (:func:`unit_of`) as the scopes, handed out in collection order (see
    :func:`pytest_collection_modifyitems`).

    A scheduler of our own, not ``xdist_group`` marks: pytest-xdist 3.8 groups marked tests by
    rewriting ``item._nodeid``, which pytest 9 no longer reads, so under pytest 9 every test was
    a unit of its own and a module's module-scoped worker (and each process's own SparkSession
    and Spark Connect server) started again wherever its tests landed.
    """
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SuiteUnits(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return SuiteUnits(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the tests for the scheduler above: the longest units first, then by tier (see the
    module docstring). The xdist worker processes collect (the scheduler takes their order), and
    there ``workerinput`` is set; a run without xdist keeps pytest's order."""
    if hasattr(config, "workerinput"):
        items.sort(key=_handout_key)  # stable: a unit's tests keep their order
