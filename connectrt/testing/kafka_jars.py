"""The Apache Kafka broker's jars, resolved from Maven Central into a user cache.

The versions live in one file shipped with this package, ``data/kafka/pom.xml`` (Kafka plus the
Log4j 2 SLF4J binding the published POMs leave out). :func:`kafka_classpath` returns the folder
of jars for it, ``$XDG_CACHE_HOME/connectrt/kafka/<version>/libs`` (``~/.cache`` when unset),
running ``mvn dependency:copy-dependencies`` only when that folder is missing or was resolved
from a different pom. Nothing is downloaded at import time.

Concurrency: resolution holds an exclusive ``flock`` on ``<version>.lock`` beside the folder and
resolves into a temporary sibling that is renamed into place only once Maven succeeded, so
sessions running at the same time never see (or both fill) a half-written folder, and a killed
download leaves only a temporary folder behind. Readers that find a complete folder take no lock.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path

from connectrt.errors import ConnectError
from connectrt.testing.build_cache import user_cache
from connectrt.testing.java_runtime import run_tool

__all__ = [
    "MavenUnavailable",
    "kafka_cache_root",
    "kafka_classpath",
    "kafka_jars_cached",
    "kafka_version",
    "maven_classpath",
    "pom_bytes",
]

_POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
_OUTPUT_TAIL_CHARS = 4000


class MavenUnavailable(ConnectError):
    """Maven is missing, or it could not resolve the broker's jars."""


def pom_bytes() -> bytes:
    """The shipped ``pom.xml`` that pins the broker's version and its logging binding."""
    return resources.files("connectrt.testing").joinpath("data/kafka/pom.xml").read_bytes()


def kafka_version() -> str:
    """The Apache Kafka version the shipped pom pins (its ``kafka.version`` property)."""
    root = ET.fromstring(pom_bytes())
    node = root.find("m:properties/m:kafka.version", _POM_NS)
    if node is None or not (node.text or "").strip():
        raise ConnectError("connectrt's Kafka pom.xml has no kafka.version property")
    return (node.text or "").strip()


def kafka_cache_root() -> Path:
    """``$XDG_CACHE_HOME/connectrt/kafka`` (``~/.cache/connectrt/kafka`` when unset)."""
    return user_cache("kafka")


def _is_complete(folder: Path, pom: bytes, marker: str = "kafka_*.jar") -> bool:
    try:
        same_pom = (folder / "pom.xml").read_bytes() == pom
    except OSError:
        return False
    return same_pom and any((folder / "libs").glob(marker))


def kafka_jars_cached(cache_root: Path | None = None) -> bool:
    """Whether the pinned broker's jars are already in the cache (no Maven needed)."""
    root = cache_root if cache_root is not None else kafka_cache_root()
    return _is_complete(root / kafka_version(), pom_bytes())


def kafka_classpath(
    *,
    mvn: str | None = None,
    cache_root: Path | None = None,
    timeout: float = 1800.0,
) -> Path:
    """The folder holding the broker's jars (for ``java -cp 'FOLDER/*'``), resolved if needed.

    ``mvn`` names the Maven binary (default: ``mvn`` on ``PATH``); it is needed only when the
    cache is missing or stale. Blocks while another process resolves the same version, at most
    ``timeout`` seconds overall. Raises :class:`MavenUnavailable` with Maven's output on failure.
    """
    root = cache_root if cache_root is not None else kafka_cache_root()
    return maven_classpath(
        pom_bytes(), root / kafka_version(), "kafka_*.jar", mvn=mvn, timeout=timeout
    )


def maven_classpath(
    pom: bytes,
    folder: Path,
    marker: str,
    *,
    mvn: str | None = None,
    timeout: float = 1800.0,
) -> Path:
    """``folder/libs``, holding the dependencies of ``pom`` (copied there by Maven unless
    ``folder`` already holds that pom and a jar matching the glob ``marker``): the broker's
    jars (:func:`kafka_classpath`) or another shipped pom's. Locking as in the module notes."""
    root, version = folder.parent, folder.name
    if _is_complete(folder, pom, marker):
        return folder / "libs"
    root.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout
    with open(root / f"{version}.lock", "a+b") as lock:
        while True:
            try:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise MavenUnavailable(
                        f"Another process has been resolving the jars of {folder} for over "
                        f"{timeout:.0f} s (lock {lock.name})"
                    ) from None
                time.sleep(0.5)
        try:
            if not _is_complete(folder, pom, marker):  # another process may have finished
                # Left by a resolution that was killed; nobody else writes them while we lock.
                for leftover in root.glob(f".{version}.*-*"):
                    shutil.rmtree(leftover, ignore_errors=True)
                _resolve(folder, pom, mvn, max(deadline - time.monotonic(), 60.0), marker)
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    return folder / "libs"


def _resolve(folder: Path, pom: bytes, mvn: str | None, timeout: float, marker: str) -> None:
    binary = mvn or shutil.which("mvn")
    if binary is None:
        raise MavenUnavailable(
            f"Apache Kafka's jars are not in {folder} and Maven ('mvn') is not on PATH to fetch "
            "them from Maven Central: install Maven 3.8+ (Debian/Ubuntu: apt-get install maven)"
        )
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.partial-", dir=folder.parent))
    try:
        (staging / "pom.xml").write_bytes(pom)
        cmd = [
            binary,
            "-q",
            "-B",
            "-f",
            str(staging / "pom.xml"),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={staging / 'libs'}",
        ]
        try:
            result = run_tool(cmd, timeout, cwd=staging)
        except FileNotFoundError as exc:
            raise MavenUnavailable(
                f"Maven {binary!r} not found ({exc}): install Maven 3.8+ to fetch Apache "
                "Kafka's jars (Debian/Ubuntu: apt-get install maven)"
            ) from exc
        except subprocess.TimeoutExpired as exc:
            raise MavenUnavailable(
                f"Maven did not resolve Apache Kafka's jars within {timeout:.0f} s"
            ) from exc
        if result.returncode != 0 or not _is_complete(staging, pom, marker):
            output = (result.stdout + result.stderr).strip()[-_OUTPUT_TAIL_CHARS:]
            raise MavenUnavailable(
                f"'{' '.join(cmd)}' exited with status {result.returncode} without the jars "
                f"(is Maven Central reachable?). Maven's output:\n{output or '(none)'}"
            )
        shutil.rmtree(staging / "target", ignore_errors=True)
        stale: Path | None = None
        if folder.exists():  # resolved from another pom: swap it out, then remove it
            stale = Path(tempfile.mkdtemp(prefix=f".{folder.name}.stale-", dir=folder.parent))
            os.rename(folder, stale / folder.name)
        os.rename(staging, folder)
        if stale is not None:
            shutil.rmtree(stale, ignore_errors=True)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
