"""Packing connectrt's Python environment for Spark executors: ``connectrt pack-env``.

Executors on other hosts run connector tasks with the Python that ``spark.pyspark.python``
names. Shipping the environment with the job (``--archives env.tar.gz#environment`` and
``spark.pyspark.python=./environment/bin/python``, as pyspark's docs describe for venv-pack and
conda-pack) spares installing connectrt on every node. :func:`pack_env` writes that archive
from the environment it runs in, as venv-pack packs a virtualenv, but only what the executors
import: the ``connectrt`` distribution and its requirements (recursively, markers evaluated),
plus the distributions and top-level packages asked for (connector plugins), never pyspark
itself (the executors' Spark provides ``pyspark.zip``) unless asked.

The archive is a virtualenv laid out as ``python -m venv`` makes one:

* ``pyvenv.cfg`` naming the interpreter this process runs on (its ``home``);
* ``bin/python``, ``bin/python3``, ``bin/python3.X``: symlinks to that interpreter (or to the
  one ``python`` names, e.g. ``/usr/bin/python3.11`` on the nodes), so the nodes need that
  Python, of this version (venv-pack's rule too). For a cluster without it, pack with
  conda-pack instead, whose archive carries the interpreter;
* ``lib/python3.X/site-packages/``: each distribution's files from its ``RECORD`` (no
  ``__pycache__``, no scripts: executors need none), and for an editable install (a source
  checkout, ``pip install -e``) its top-level packages copied from where they import, with its
  metadata but not its ``.pth`` (which names a path of this machine).

Compiled extensions (confluent-kafka, orjson...) are this machine's builds: the nodes need the
same OS family and CPU architecture.

Runs in the calling thread; writes only ``output`` (through a temporary file next to it).
"""

from __future__ import annotations

import io
import json
import os
import sys
import sysconfig
import tarfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path, PurePosixPath
from typing import Any

from connectrt.errors import ConnectError

__all__ = ["PackEnvError", "PackedEnv", "pack_env", "required_distributions"]

#: Never packed unless named: the executors' Spark provides them (``pyspark.zip``, py4j).
SPARK_PROVIDED = frozenset({"pyspark", "py4j"})


class PackEnvError(ConnectError):
    """The environment cannot be packed (a distribution or package is not installed)."""


@dataclass
class PackedEnv:
    """What :func:`pack_env` wrote: the archive, the distributions and packages in it."""

    output: Path
    distributions: list[str] = field(default_factory=list)
    packages: list[str] = field(default_factory=list)
    files: int = 0
    bytes_in: int = 0

    @property
    def size(self) -> int:
        return self.output.stat().st_size


def _requirement_parser() -> Any:
    """packaging's ``Requirement`` (not a connectrt requirement: else pip's vendored copy)."""
    try:
        from packaging.requirements import Requirement

        return Requirement
    except ImportError:
        from pip._vendor.packaging.requirements import Requirement as Vendored

        return Vendored


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _split_extras(spec: str) -> tuple[str, set[str]]:
    """``name[a,b]`` -> ``("name", {"a", "b"})``."""
    name, _, rest = spec.partition("[")
    extras = {e.strip() for e in rest.rstrip("]").split(",") if e.strip()}
    return name.strip(), extras


def required_distributions(
    roots: Iterable[str], exclude: Iterable[str] = ()
) -> list[metadata.Distribution]:
    """The installed distributions ``roots`` (``name`` or ``name[extra,...]``) need, themselves
    included: their requirements followed recursively with the markers evaluated for this
    interpreter (and the extras asked for). :data:`SPARK_PROVIDED` and ``exclude`` are left
    out unless they are roots. Raises :class:`PackEnvError` for a requirement not installed."""
    requirement = _requirement_parser()
    skip = {_canonical(n) for n in (*SPARK_PROVIDED, *exclude)}
    found: dict[str, metadata.Distribution] = {}
    pending: list[tuple[str, set[str], str]] = []
    for root in roots:
        name, extras = _split_extras(root)
        skip.discard(_canonical(name))
        pending.append((name, extras, "asked for"))
    extras_done: dict[str, set[str]] = {}
    while pending:
        name, extras, why = pending.pop()
        key = _canonical(name)
        if key in skip:
            continue
        done = extras_done.setdefault(key, set())
        if key in found and extras <= done:
            continue
        try:
            dist = found.get(key) or metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise PackEnvError(f"{name} ({why}) is not installed in {sys.prefix}") from None
        found[key] = dist
        done |= extras
        for line in dist.requires or []:
            req = requirement(line)
            envs = [{"extra": e} for e in sorted(extras)] or [{"extra": ""}]
            if req.marker is not None and not any(req.marker.evaluate(env) for env in envs):
                continue
            pending.append((req.name, set(req.extras), f"required by {dist.metadata['Name']}"))
    return sorted(found.values(), key=lambda d: _canonical(d.metadata["Name"]))


def _is_editable(dist: metadata.Distribution) -> bool:
    text = dist.read_text("direct_url.json")
    if not text:
        return False
    try:
        return bool(json.loads(text).get("dir_info", {}).get("editable"))
    except ValueError:
        return False


def _is_source_checkout(dist: metadata.Distribution) -> bool:
    """Whether ``dist`` is the ``*.egg-info`` that setuptools leaves in a source checkout (found
    first when the checkout is on ``sys.path``, as under pytest): its file list is the one of
    the build that wrote it, perhaps stale, so its packages are packed from where they import,
    as an editable install's are."""
    if dist.read_text("PKG-INFO") is None:
        return False  # a .dist-info: its RECORD lists what is installed
    base = Path(str(dist.locate_file(""))).resolve()
    return base.name not in ("site-packages", "dist-packages")


def _keep(relative: PurePosixPath) -> bool:
    return "__pycache__" not in relative.parts and relative.suffix != ".pyc"


def _package_dir(name: str) -> Path:
    """Where top-level package (or module) ``name`` imports from now."""
    spec = find_spec(name)
    if spec is None:
        raise PackEnvError(f"package {name} cannot be imported here")
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    if spec.origin is None:
        raise PackEnvError(f"package {name} has no files to pack")
    return Path(spec.origin)


def _tree(root: Path, arcroot: PurePosixPath) -> Iterator[tuple[Path, PurePosixPath]]:
    if root.is_file():
        yield root, arcroot
        return
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for file in sorted(files):
            path = Path(folder) / file
            relative = PurePosixPath(path.relative_to(root).as_posix())
            if _keep(relative):
                yield path, arcroot / relative


def _distribution_files(
    dist: metadata.Distribution, site: PurePosixPath
) -> Iterator[tuple[Path, PurePosixPath]]:
    """A regular install's files under site-packages (its scripts and data elsewhere left
    out); an editable install's metadata and its top-level packages, from where they import."""
    base = Path(str(dist.locate_file(""))).resolve()
    editable = _is_editable(dist) or _is_source_checkout(dist)
    for entry in dist.files or []:
        relative = PurePosixPath(str(entry))
        if ".." in relative.parts or not _keep(relative):
            continue
        if editable and not relative.parts[0].endswith((".dist-info", ".egg-info")):
            continue  # the .pth / finder naming the checkout: its packages come next
        if relative.name in ("RECORD", "direct_url.json", "INSTALLER"):
            continue  # this file list is not the archive's; no pip records for the nodes
        path = base / relative
        if path.is_file():
            yield path, site / relative
    if editable:
        tops = (dist.read_text("top_level.txt") or "").split()
        if not tops:
            raise PackEnvError(
                f"{dist.metadata['Name']} is an editable install that does not list its "
                "packages (no top_level.txt): name its packages with --package instead "
                "(and --exclude it where another distribution requires it)"
            )
        for top in tops:
            source = _package_dir(top)
            yield from _tree(source, site / source.name)


def _site_packages() -> PurePosixPath:
    return PurePosixPath("lib", f"python{sys.version_info.major}.{sys.version_info.minor}") / (
        "site-packages"
    )


def _base_interpreter() -> Path:
    base = getattr(sys, "_base_executable", None) or sys.executable
    return Path(os.path.realpath(base))


def _pyvenv_cfg(interpreter: Path) -> bytes:
    version = ".".join(str(p) for p in sys.version_info[:3])
    return (
        f"home = {interpreter.parent}\n"
        "include-system-site-packages = false\n"
        f"version = {version}\n"
        "# written by connectrt pack-env: the nodes need this Python at this path\n"
    ).encode()


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    info.mtime = int(time.time())
    tar.addfile(info, io.BytesIO(data))


def _add_symlink(tar: tarfile.TarFile, name: str, target: str) -> None:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    info.mode = 0o777
    info.mtime = int(time.time())
    tar.addfile(info)


def pack_env(
    output: Path,
    distributions: Sequence[str] = (),
    packages: Sequence[str] = (),
    exclude: Sequence[str] = (),
    compresslevel: int = 6,
    python: str | None = None,
) -> PackedEnv:
    """Write the executors' environment to ``output`` (a ``.tar.gz``): ``connectrt``, the
    ``distributions`` asked for (``name`` or ``name[extra]``, for connector plugins), all they
    require, and the top-level ``packages`` (import names, copied from where they import now;
    for plugins not installed as distributions). ``python``: the interpreter the archive's
    ``bin/python`` links to on the nodes (default: this one's base interpreter), of this
    Python's version. See the module docstring."""
    if sysconfig.get_platform().startswith("win"):
        raise PackEnvError("pack-env packs POSIX virtualenvs only")
    dists = required_distributions(["connectrt", *distributions], exclude)
    site = _site_packages()
    interpreter = Path(python) if python else _base_interpreter()
    if not interpreter.is_absolute():
        raise PackEnvError(f"--python must be an absolute path, not {python}")
    minor = f"python{sys.version_info.major}.{sys.version_info.minor}"
    packed = PackedEnv(output, [f"{d.metadata['Name']}=={d.version}" for d in dists])
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(output.name + ".partial")
    seen: set[PurePosixPath] = set()

    def add(tar: tarfile.TarFile, path: Path, arcname: PurePosixPath) -> None:
        if arcname in seen:
            return
        seen.add(arcname)
        tar.add(path, arcname=str(arcname), recursive=False)
        packed.files += 1
        packed.bytes_in += path.stat().st_size

    try:
        with tarfile.open(partial, "w:gz", compresslevel=compresslevel) as tar:
            _add_bytes(tar, "pyvenv.cfg", _pyvenv_cfg(interpreter))
            _add_symlink(tar, f"bin/{minor}", str(interpreter))
            _add_symlink(tar, "bin/python3", minor)
            _add_symlink(tar, "bin/python", minor)
            for dist in dists:
                for path, arcname in _distribution_files(dist, site):
                    add(tar, path, arcname)
            for name in packages:
                source = _package_dir(name)
                packed.packages.append(name)
                for path, arcname in _tree(source, site / source.name):
                    add(tar, path, arcname)
        partial.replace(output)
    finally:
        partial.unlink(missing_ok=True)
    return packed
