"""The Apache Kafka jar cache (connectrt.testing.kafka_jars): Maven runs once per pom, never
twice at once into one folder, and a missing Maven is named.

A stand-in ``mvn`` script (it records each run and writes a jar where Maven would) keeps these
tests off the network; the real download is exercised by every Apache Kafka test broker start
on a machine without the cache.
"""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import pytest

from connectrt.testing.kafka_jars import (
    MavenUnavailable,
    kafka_cache_root,
    kafka_classpath,
    kafka_version,
    pom_bytes,
)

_FAKE_MVN = """#!/bin/sh
# Called as: mvn -q -B -f POM dependency:copy-dependencies -DoutputDirectory=DIR
echo run >> "{runs}"
sleep 1
for arg in "$@"; do
  case "$arg" in -DoutputDirectory=*) out="${{arg#-DoutputDirectory=}}" ;; esac
done
mkdir -p "$out" && echo jar > "$out/kafka_2.13-{version}.jar"
"""


def _fake_mvn(tmp_path: Path) -> tuple[Path, Path]:
    runs = tmp_path / "runs.txt"
    script = tmp_path / "mvn"
    script.write_text(_FAKE_MVN.format(runs=runs, version=kafka_version()), "utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, runs


def test_the_shipped_pom_pins_kafka_4_4_and_the_log4j_binding() -> None:
    pom = pom_bytes().decode("utf-8")
    assert kafka_version() == "4.4.0"
    for artifact in ("kafka_2.13", "log4j-slf4j-impl", "log4j-api", "log4j-core"):
        assert f"<artifactId>{artifact}</artifactId>" in pom
    assert "<version>3.8.1</version>" in pom  # maven-dependency-plugin, pinned


def test_cache_root_honours_xdg_cache_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert kafka_cache_root() == tmp_path / "connectrt" / "kafka"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert kafka_cache_root() == Path.home() / ".cache" / "connectrt" / "kafka"


def test_concurrent_resolutions_run_maven_once(tmp_path: Path) -> None:
    mvn, runs = _fake_mvn(tmp_path)
    cache = tmp_path / "cache"
    killed = cache / f".{kafka_version()}.partial-x1"  # what a killed resolution leaves
    (killed / "libs").mkdir(parents=True)
    results: list[Path] = []
    errors: list[BaseException] = []

    def resolve() -> None:
        try:
            results.append(kafka_classpath(mvn=str(mvn), cache_root=cache, timeout=120))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=resolve) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(180)
    assert errors == []
    libs = cache / kafka_version() / "libs"
    assert results == [libs, libs, libs]
    assert runs.read_text("utf-8").splitlines() == ["run"]
    assert (cache / kafka_version() / "pom.xml").read_bytes() == pom_bytes()
    # Nothing half-written is left beside the folder.
    assert sorted(p.name for p in cache.iterdir()) == [kafka_version(), f"{kafka_version()}.lock"]
    # A complete cache needs no Maven at all.
    assert kafka_classpath(mvn=str(tmp_path / "absent-mvn"), cache_root=cache) == libs


def test_a_cache_from_another_pom_is_resolved_again(tmp_path: Path) -> None:
    mvn, runs = _fake_mvn(tmp_path)
    folder = tmp_path / "cache" / kafka_version()
    (folder / "libs").mkdir(parents=True)
    (folder / "libs" / "kafka_2.13-old.jar").write_text("old", "utf-8")
    (folder / "pom.xml").write_text("<project>an older pin</project>", "utf-8")
    libs = kafka_classpath(mvn=str(mvn), cache_root=tmp_path / "cache")
    assert runs.read_text("utf-8").splitlines() == ["run"]
    assert [p.name for p in libs.iterdir()] == [f"kafka_2.13-{kafka_version()}.jar"]
    assert (folder / "pom.xml").read_bytes() == pom_bytes()


def test_a_missing_maven_is_named(tmp_path: Path) -> None:
    with pytest.raises(MavenUnavailable, match="install Maven"):
        kafka_classpath(mvn=str(tmp_path / "no-mvn"), cache_root=tmp_path / "cache")
    assert not (tmp_path / "cache" / kafka_version()).exists()


def test_a_failing_maven_shows_its_output(tmp_path: Path) -> None:
    mvn = tmp_path / "mvn"
    mvn.write_text(
        "#!/bin/sh\necho 'Could not transfer artifact: Network is unreachable'\nexit 1\n"
    )
    mvn.chmod(mvn.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(MavenUnavailable, match="Network is unreachable"):
        kafka_classpath(mvn=str(mvn), cache_root=tmp_path / "cache")
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [f"{kafka_version()}.lock"]
