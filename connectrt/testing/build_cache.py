"""The user cache the test tools are fetched or built into, and a Go binary built there once.

:func:`user_cache` is ``$XDG_CACHE_HOME/connectrt/<name>`` (``~/.cache`` when unset): Kafka's
jars, Zipkin's jar, and the Go binaries of :mod:`connectrt.testing.jaeger` and
:mod:`connectrt.testing.otel_collector` live there.

:func:`go_build` builds one Go binary from the module proxy with the machine's Go toolchain into
a cache folder, once: ``go get`` of the pinned modules, then ``go build``, in a scratch folder
under the cache folder, the binary moved into place only when both succeeded (so a failed or
interrupted build leaves nothing half-written; Go's own build cache keeps what was compiled, so
the next attempt resumes). A lock file in the folder serialises builds across processes (xdist
workers): a second caller blocks until the first is done, then finds the binary. Nothing here
runs at import time.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["go_build", "user_cache"]


def user_cache(name: str) -> Path:
    """``$XDG_CACHE_HOME/connectrt/<name>`` (``~/.cache/connectrt/<name>`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "connectrt" / name


def go_build(
    folder: Path,
    binary_name: str,
    *,
    sources: Mapping[str, str],
    get: Sequence[str],
    package: str,
    label: str,
    note: str,
    timeout: float,
    error: type[Exception] = RuntimeError,
) -> Path:
    """``folder/binary_name``, built first when missing (see the module docstring).

    ``sources`` are the files of the wrapper module (``go.mod``, perhaps a ``main.go``), ``get``
    the ``module@version`` arguments of ``go get``, ``package`` what ``go build`` builds.
    ``label`` names the build in messages and ``note`` (how long it takes) is printed as it
    starts. Raises ``error`` naming the cause when Go is missing, a step fails or the steps take
    over ``timeout`` seconds together.
    """
    binary = folder / binary_name
    if binary.is_file():
        return binary
    go = shutil.which("go")
    if go is None:
        raise error(f"building {label} needs the Go toolchain (go)")
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.is_file():
            return binary
        print(f"Building {label} from the Go module proxy into {folder} ({note})", flush=True)
        work = Path(tempfile.mkdtemp(prefix="build-", dir=folder))
        try:
            for name, text in sources.items():
                (work / name).write_text(text)
            env = {**os.environ, "GOFLAGS": "-mod=mod -buildvcs=false", "CGO_ENABLED": "0"}
            started = time.monotonic()
            for args in ([go, "get", *get], [go, "build", "-o", str(work / binary_name), package]):
                left = timeout - (time.monotonic() - started)
                try:
                    done = subprocess.run(
                        args, cwd=work, env=env, capture_output=True, text=True, timeout=left
                    )
                except subprocess.TimeoutExpired as exc:
                    raise error(
                        f"building {label} took over {timeout:.0f} s (go {args[1]})"
                    ) from exc
                if done.returncode != 0:
                    raise error(f"building {label} failed (go {args[1]}): {done.stderr[-3000:]}")
            os.replace(work / binary_name, binary)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return binary
