"""``connectrt pack-env`` (:mod:`connectrt.spark.pack_env`): which distributions it packs, the
archive's virtualenv layout, and that the unpacked archive runs with no trace of this
environment (no ``PYTHONPATH``, another working directory, this tree out of reach)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from connectrt.cli.main import cli
from connectrt.spark.pack_env import PackEnvError, pack_env, required_distributions


def _names(dists: list) -> set[str]:
    return {d.metadata["Name"].lower().replace("_", "-") for d in dists}


def test_the_closure_of_connectrt_without_spark() -> None:
    names = _names(required_distributions(["connectrt"]))
    assert {"connectrt", "confluent-kafka", "orjson", "fastavro", "pydantic-core"} <= names
    assert "pyspark" not in names and "py4j" not in names
    assert "pytest" not in names  # the dev extra is not followed


def test_extras_are_followed_but_spark_is_left_to_the_nodes() -> None:
    pytest.importorskip("pyarrow")
    names = _names(required_distributions(["connectrt[spark]"]))
    assert "pyarrow" in names and "pyspark" not in names
    assert "pyspark" in _names(required_distributions(["connectrt", "pyspark"]))


def test_a_missing_distribution_is_named() -> None:
    with pytest.raises(PackEnvError, match=r"no-such-dist-xyz .*is not installed"):
        required_distributions(["connectrt", "no-such-dist-xyz"])


def _only_connectrt() -> list[str]:
    return sorted(_names(required_distributions(["connectrt"])) - {"connectrt"})


def test_the_archive_is_a_virtualenv_that_runs_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """connectrt alone (its requirements excluded to keep the test small) plus a plugin
    package: unpacked elsewhere, its python has the archive as prefix and imports connectrt
    and the plugin from it, with no PYTHONPATH."""
    plugins = tmp_path / "src"
    (plugins / "zz_packed_plugin").mkdir(parents=True)
    (plugins / "zz_packed_plugin" / "__init__.py").write_text("WHO = 'plugin'\n")
    monkeypatch.syspath_prepend(str(plugins))
    archive = tmp_path / "env.tar.gz"
    packed = pack_env(
        archive, packages=["zz_packed_plugin"], exclude=_only_connectrt(), compresslevel=1
    )
    assert [d.split("==")[0] for d in packed.distributions] == ["connectrt"]
    with tarfile.open(archive) as tar:
        members = {m.name: m for m in tar.getmembers()}
        site = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"
        assert members["bin/python"].issym() and members["bin/python"].linkname.startswith(
            "python3"
        )
        assert os.path.isabs(
            members[f"bin/python{sys.version_info[0]}.{sys.version_info[1]}"].linkname
        )
        assert f"{site}/connectrt/__init__.py" in members
        assert f"{site}/connectors/file/source.py" in members
        assert f"{site}/zz_packed_plugin/__init__.py" in members
        # The metadata of the distribution as found: a dist-info, or the egg-info that an
        # editable install leaves beside the sources (found first when they are on sys.path).
        assert any(
            (n.startswith(f"{site}/connectrt-") and n.endswith(".dist-info/METADATA"))
            or n == f"{site}/connectrt.egg-info/PKG-INFO"
            for n in members
        )
        assert not any("__pycache__" in n or n.endswith(".pth") for n in members)
        assert not any(n.endswith("/RECORD") or n.endswith("direct_url.json") for n in members)
        unpacked = tmp_path / "node" / "environment"
        unpacked.mkdir(parents=True)
        tar.extractall(unpacked, filter="tar")
    assert "include-system-site-packages = false" in (unpacked / "pyvenv.cfg").read_text()
    probe = (
        "import sys, connectrt.spark.pack_env as m, zz_packed_plugin as p;"
        "print(sys.prefix); print(m.__file__); print(p.__file__)"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        ["./environment/bin/python", "-c", probe],
        cwd=unpacked.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    prefix, module, plugin = done.stdout.split()
    assert Path(prefix) == unpacked
    assert Path(module).is_relative_to(unpacked) and Path(plugin).is_relative_to(unpacked)


def test_the_command_links_the_python_the_nodes_have(tmp_path: Path) -> None:
    archive = tmp_path / "env.tar.gz"
    args = ["pack-env", "-o", str(archive), "--python", "/usr/bin/python3.11"]
    args += [f"--exclude={name}" for name in _only_connectrt()]
    result = CliRunner().invoke(cli, [*args, "--compress-level", "1"])
    assert result.exit_code == 0, result.output
    assert f"wrote {archive}" in result.output and "connectrt==" in result.output
    with tarfile.open(archive) as tar:
        minor = f"python{sys.version_info[0]}.{sys.version_info[1]}"
        assert tar.getmember(f"bin/{minor}").linkname == "/usr/bin/python3.11"
        cfg = tar.extractfile("pyvenv.cfg")
        assert cfg is not None and b"home = /usr/bin\n" in cfg.read()


def test_a_relative_python_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PackEnvError, match="absolute path"):
        pack_env(tmp_path / "x.tar.gz", exclude=_only_connectrt(), python="python3")
