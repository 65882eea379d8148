"""Only the Kafka client adapters import ``confluent_kafka``; the rest of connectrt goes through
the seam, :mod:`connectrt.runtime.clients.kafka`.

The scan reads every module under ``connectrt/`` with :mod:`ast` (so a function-local import
counts, and a mention in a string or a comment does not) and fails naming each module that
imports ``confluent_kafka`` (or one of its submodules) outside :data:`ADAPTERS`.
The planted tests run the same scan over a small tree written into a temporary directory, so a
scan that stopped seeing imports would show.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLIENT_LIBRARY = "confluent_kafka"

#: Where ``confluent_kafka`` may be imported, and why. A name covers the module or package and
#: everything below it.
ADAPTERS: Mapping[str, str] = {
    "connectrt.runtime.clients": "the seam itself: the protocols and the real clients' builders",
    "connectrt.storage": (
        "the Kafka-backed config/status/offset stores; below the runtime in the layers "
        "contract, so they cannot import the seam in connectrt.runtime.clients"
    ),
    "connectrt.broker": "the embedded broker's readiness probe (one admin call at start)",
    "connectrt.testing": "test helpers that read and write a real broker to check results",
    "connectrt.spark": (
        "Spark's Kafka reader (partition bounds and offset ranges read on Spark executors), an "
        "input adapter of its own; issue 31 asks for the runtime"
    ),
}


def module_name(path: Path, root: Path) -> str:
    """The dotted name of the module at ``path`` (a package's ``__init__`` names the package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_client_library(source: str, filename: str = "<source>") -> list[int]:
    """The line numbers of ``source``'s imports of ``confluent_kafka`` or its submodules,
    wherever they are (module level, inside a function, under ``TYPE_CHECKING``)."""
    lines = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        if any(n == CLIENT_LIBRARY or n.startswith(CLIENT_LIBRARY + ".") for n in names):
            lines.append(node.lineno)
    return lines


def importers(root: Path, package: str = "connectrt") -> dict[str, list[int]]:
    """Every module of ``package`` under ``root`` that imports the client library, with the
    lines that do."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if CLIENT_LIBRARY not in text:
            continue  # cannot import it; parsing only the rest keeps the scan fast
        lines = imports_client_library(text, str(path))
        if lines:
            found[module_name(path, root)] = lines
    return found


@functools.cache
def _project_importers() -> dict[str, list[int]]:
    """:func:`importers` of this project, scanned once per test session."""
    return importers(ROOT)


def _within(module: str, packages: Iterable[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def violations(
    found: Mapping[str, list[int]],
    allowed: Iterable[str] = tuple(ADAPTERS),
) -> list[str]:
    """``module:line`` of every import of the client library outside ``allowed``."""
    allowed = tuple(allowed)
    return [
        f"{module}:{line}"
        for module, lines in sorted(found.items())
        if not _within(module, allowed)
        for line in lines
    ]


def test_only_the_adapters_import_the_client_library() -> None:
    bad = violations(_project_importers())
    assert not bad, (
        "These modules import confluent_kafka directly; import the Kafka types and the "
        "new_producer/new_consumer/new_admin builders from connectrt.runtime.clients.kafka "
        "instead (add a call the protocols lack there): " + ", ".join(bad)
    )


def test_every_exemption_names_a_module_that_exists() -> None:
    """A renamed package must not leave an exemption behind that matches nothing, or a new
    package of the old name would be exempt unseen."""
    for name in ADAPTERS:
        path = ROOT / Path(*name.split("."))
        assert path.is_dir() or path.with_suffix(".py").is_file(), name


def test_a_planted_import_in_the_runtime_is_named(tmp_path: Path) -> None:
    """The scan finds module-level, ``from ... import`` of a submodule and function-local
    imports outside the adapters, and passes the adapters."""
    files = {
        "connectrt/__init__.py": "",
        "connectrt/runtime/__init__.py": "",
        "connectrt/runtime/tasks/planted.py": "import os\nfrom confluent_kafka import Producer\n",
        "connectrt/runtime/offsets/planted.py": (
            "def admin():\n    from confluent_kafka.admin import AdminClient\n    return 1\n"
        ),
        "connectrt/runtime/herder/__init__.py": "import confluent_kafka as ck\n",
        "connectrt/control_topic.py": "'''Uses confluent_kafka.Consumer.'''  # confluent_kafka\n",
        "connectrt/runtime/clients/kafka.py": "from confluent_kafka import Consumer\n",
        "connectrt/runtime/sink/runner.py": "from confluent_kafka import Consumer\n",
        "connectrt/storage/kafka_log.py": "import confluent_kafka\n",
        "connectrt/runtime/clients_extra.py": "from confluent_kafka import Producer\n",
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    assert violations(importers(tmp_path)) == [
        "connectrt.runtime.clients_extra:1",  # a sibling of clients/, not inside it
        "connectrt.runtime.herder:1",
        "connectrt.runtime.offsets.planted:2",
        "connectrt.runtime.sink.runner:1",
        "connectrt.runtime.tasks.planted:2",
    ]


def test_relative_imports_and_lookalike_names_are_not_the_client_library() -> None:
    source = (
        "from . import confluent_kafka\n"
        "from .confluent_kafka import Producer\n"
        "import confluent_kafka_extra\n"
        "from confluent_kafkaesque import x\n"
    )
    assert imports_client_library(source) == []
    assert imports_client_library("import json, confluent_kafka.admin\n") == [1]
