"""Finding a Java runtime for the Apache Kafka test broker, and checking its version.

Apache Kafka 4.x brokers need Java 17 or newer. :func:`require_java` names the binary it will
use (an explicit path, else ``$JAVA_HOME/bin/java``, else ``java`` on ``PATH``), runs
``java -version`` once per binary and raises :class:`JavaUnavailable` with what to install when
there is no such binary, it does not run, or it is too old. Thread-safe (the version cache is
guarded by a lock).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading

from connectrt.errors import ConnectError

__all__ = [
    "LEAN_TEST_JVM_OPTIONS",
    "MIN_JAVA_MAJOR",
    "JavaUnavailable",
    "java_major_version",
    "require_java",
]

#: The oldest Java that runs an Apache Kafka 4.x broker.
MIN_JAVA_MAJOR = 17

#: JVM options of the test JVMs (broker, Kafka Connect): the C1 compiler only and the serial
#: collector, which suit a JVM that starts, moves a few thousand records and stops. Measured
#: for one broker (start, 50,000 records produced and consumed, 60 s idle): 4.9, 2.0 and 2.4 CPU
#: seconds with the JVM's defaults, 3.0, 1.0 and 1.5 with these; a test run starts a dozen.
LEAN_TEST_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")

_INSTALL_HINT = (
    "Apache Kafka 4.4 needs Java 17 or newer: install a JDK or JRE 17+ (Debian/Ubuntu: "
    "apt-get install openjdk-17-jre-headless) and put its java on PATH or set JAVA_HOME"
)
# `openjdk version "17.0.15" 2025-04-15`, `java version "1.8.0_392"`, `openjdk version "21" ...`
_VERSION_LINE = re.compile(r'version "(\d+)(?:\.(\d+))?[^"]*"')
_checked: dict[str, int] = {}
_checked_lock = threading.Lock()


class JavaUnavailable(ConnectError):
    """No usable Java 17+ runtime: missing, not runnable, or too old."""


def _find_java(java: str | None) -> str:
    if java is not None:
        return java
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("java")
    if found is None:
        raise JavaUnavailable(f"No 'java' found on PATH or in JAVA_HOME. {_INSTALL_HINT}")
    return found


def run_tool(
    argv: list[str], timeout: float, cwd: str | os.PathLike[str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a JDK or build tool (``java``, ``javac``, Maven, Kafka's tools) to its end: stdin
    closed, stdout and stderr captured as text (undecodable bytes replaced), whatever its exit
    status. OSError when it cannot be started, ``subprocess.TimeoutExpired`` after
    ``timeout`` seconds. Blocks the caller."""
    return subprocess.run(
        argv,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
        check=False,
    )


def java_major_version(java: str) -> int:
    """The major version ``java -version`` reports (``1.8`` counts as 8); JavaUnavailable if
    the binary cannot be run or its output names no version."""
    try:
        result = run_tool([java, "-version"], 120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JavaUnavailable(f"Could not run {java!r} -version: {exc}. {_INSTALL_HINT}") from exc
    output = result.stderr + result.stdout
    match = _VERSION_LINE.search(output)
    if result.returncode != 0 or match is None:
        raise JavaUnavailable(
            f"{java!r} -version exited with status {result.returncode} and named no version "
            f"({output.strip()[:300]!r}). {_INSTALL_HINT}"
        )
    major = int(match.group(1))
    if major == 1 and match.group(2) is not None:
        major = int(match.group(2))
    return major


def require_java(java: str | None = None, minimum: int = MIN_JAVA_MAJOR) -> str:
    """The path of a Java runtime of at least ``minimum``; JavaUnavailable otherwise.

    ``java`` names the binary; None looks in ``JAVA_HOME`` then ``PATH``. The version check
    runs once per binary and process.
    """
    binary = _find_java(java)
    with _checked_lock:
        major = _checked.get(binary)
    if major is None:
        major = java_major_version(binary)
        with _checked_lock:
            _checked[binary] = major
    if major < minimum:
        raise JavaUnavailable(f"{binary!r} is Java {major}. {_INSTALL_HINT}")
    return binary
