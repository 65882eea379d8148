"""connectrt's JsonConverter against Kafka Connect 4.4's own, value for value and byte for byte.

Kafka's side is ``JsonDiff.java`` (shipped in ``connectrt/testing/data/connect_json``), compiled
here with javac against connect-json 4.4.0 from Maven Central (cached by
:mod:`connectrt.testing.connect_json_jars`) and run once, in one JVM, over all generated cases
(:mod:`tests.unit.json_vs_kafka_cases`): every primitive type and its bounds, optional values
and defaults, nested structs, arrays, maps with string and other keys, the four logical types
(negative scales, both ``decimal.format`` values, dates and timestamps beyond Python's
``datetime``, the Time 24:00), schemaless values, tombstones, wrong-typed values, and raw
bytes to read (empty input, trailing bytes, wide integers, -0.0, ``1e39`` as a float32).

Two directions:

* Python writes: connectrt's bytes must be Kafka's (at least 99% of the cases whose values agree;
  Java 17's ``Double.toString`` differs from the shortest text for a few values), and Kafka
  must read connectrt's bytes as it reads its own; a case where only one side raises differs.
* Kafka writes: connectrt must read Kafka's bytes (and the raw cases) as Kafka does.

Needs Java 17+ with javac, and Maven unless the jars are cached: marked ``java``.
"""

from __future__ import annotations

import base64
import json
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from connectrt.converters.json import JsonConverter
from connectrt.converters.json.java_text import round_float32
from connectrt.data.schema import Schema
from connectrt.errors import ConnectError
from connectrt.testing.connect_json_jars import connect_json_classpath, harness_source
from connectrt.testing.java_runtime import JavaUnavailable, require_java
from tests.unit.json_vs_kafka_cases import canon, generate, java_canon, python_value

pytestmark = pytest.mark.java

#: Cases a JVM version may write differently with the same value (listed on failure).
MIN_IDENTICAL_SHARE = 0.99


def _converter(config: dict[str, str], cache: dict[str, JsonConverter]) -> JsonConverter:
    key = json.dumps(config, sort_keys=True)
    conv = cache.get(key)
    if conv is None:
        conv = cache[key] = JsonConverter()
        conv.configure(config, is_key=False)
    return conv


def _read(conv: JsonConverter, data: bytes | None) -> Any:
    try:
        sv = conv.to_connect_data("t", data)
    except ConnectError as exc:
        return {"err": f"{type(exc).__name__}: {exc}"}
    return canon(sv.schema, sv.value)


def _python_write(case: dict[str, Any], cache: dict[str, JsonConverter]) -> bytes | str | None:
    """connectrt's bytes for a write case, or its error text."""
    conv = _converter(case["config"], cache)
    plain = _converter({}, cache)

    def parse_schema(obj: Any, by: JsonConverter = plain) -> Schema | None:
        return by.schema_from_json(json.dumps(obj).encode())

    try:
        schema = None if case["schema"] is None else parse_schema(case["schema"], conv)
        value = python_value(case["value"], schema, parse_schema)
        return conv.from_connect_data("t", schema, value)
    except ConnectError as exc:
        return f"{type(exc).__name__}: {exc}"


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """(java binary, class folder): JsonDiff compiled against connect-json's jars."""
    try:
        java = require_java()
    except JavaUnavailable as exc:
        pytest.skip(str(exc))
    javac = shutil.which("javac", path=str(Path(java).resolve().parent)) or shutil.which("javac")
    if javac is None:
        pytest.skip("No javac (a JDK 17+) to compile the Kafka side of the differential")
    try:
        libs = connect_json_classpath()
    except ConnectError as exc:
        pytest.skip(f"connect-json's jars are unavailable: {exc}")
    folder = tmp_path_factory.mktemp("jsondiff")
    (folder / "JsonDiff.java").write_text(harness_source(), encoding="utf-8")
    classpath = f"{libs}/*"
    subprocess.run(
        [javac, "-nowarn", "-cp", classpath, "-d", str(folder), str(folder / "JsonDiff.java")],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return java, Path(f"{classpath}:{folder}")


def test_json_converter_matches_kafka(harness: tuple[str, Path], tmp_path: Path) -> None:
    java, classpath = harness
    cases = generate()
    cache: dict[str, JsonConverter] = {}
    python_bytes: dict[int, bytes | str | None] = {}
    for case in cases:
        if "value" in case:
            written = _python_write(case, cache)
            python_bytes[case["id"]] = written
            if type(written) is bytes:
                case["py"] = base64.b64encode(written).decode()
            elif written is None:
                case["py"] = None
    cases_file, out_file = tmp_path / "cases.jsonl", tmp_path / "java.jsonl"
    cases_file.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    run = subprocess.run(
        [java, "-Xshare:auto", "-cp", str(classpath), "JsonDiff", str(cases_file), str(out_file)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    results = {r["id"]: r for r in map(json.loads, out_file.read_text("utf-8").splitlines())}
    assert len(results) == len(cases)

    writes = agree = identical = 0
    read_cases = read_differ_count = 0
    differ: list[str] = []
    other_bytes: list[str] = []
    read_differ: list[str] = []
    for case in cases:
        r = results[case["id"]]
        conv = _converter(case["config"], cache)
        if "raw" in case:
            read_cases += 1
            mine = _read(conv, base64.b64decode(case["raw"]))
            theirs = java_canon(r["read"])
            if _differs(mine, theirs):
                read_differ_count += 1
                read_differ.append(f"raw {case['raw']} {case['config']}: {mine} vs Kafka {theirs}")
            continue
        writes += 1
        py = python_bytes[case["id"]]
        py_err = isinstance(py, str)
        java_err = "werr" in r
        java_bytes = None if java_err or r["bytes"] is None else base64.b64decode(r["bytes"])
        where = f"#{case['id']} {case['schema']} {case['value']} {case['config']}"
        # Python writes, Kafka reads
        if py_err != java_err:
            differ.append(f"{where}: connectrt {py!r}, Kafka {r.get('werr') or java_bytes!r}")
        elif not py_err and _differs(*_as_written(case, java_canon(r["py"]), java_canon(r["own"]))):
            differ.append(
                f"{where}: Kafka reads connectrt's {py!r} as {r['py']}, its own "
                f"{java_bytes!r} as {r['own']}"
            )
        else:
            agree += 1
            if py == java_bytes or py_err:
                identical += 1
            else:
                other_bytes.append(f"{where}: connectrt {py!r}, Kafka {java_bytes!r}")
        # Kafka writes, Python reads
        if not java_err:
            read_cases += 1
            mine = _read(conv, java_bytes)
            if _differs(mine, java_canon(r["own"])):
                read_differ_count += 1
                read_differ.append(
                    f"{where}: connectrt reads Kafka's {java_bytes!r} as {mine}, "
                    f"Kafka as {r['own']}"
                )
    report = (
        f"Python writes: {writes} cases, {agree} agree in value, {identical} with identical "
        f"bytes, {len(differ)} differ; Kafka writes / raw reads: {read_cases} reads, "
        f"{read_differ_count} differ"
    )
    print(report)
    assert writes > 2000 and read_cases > 2000, report
    assert not differ, report + "\nValues differ:\n" + "\n".join(differ[:40])
    assert not read_differ, report + "\nReads differ:\n" + "\n".join(read_differ[:40])
    assert identical >= MIN_IDENTICAL_SHARE * agree, (
        report + "\nBytes differ:\n" + "\n".join(other_bytes[:60])
    )
    if other_bytes:
        print("Same value, other bytes:\n" + "\n".join(other_bytes))


def _as_written(case: dict[str, Any], *reads: Any) -> tuple[Any, ...]:
    """Kafka's reads of both sides' bytes, compared as the values written: without schemas in
    the message a FLOAT32 is read back as a double, and Java 17's ``Float.toString`` is not
    always the shortest text of the float32, so for schemas with a FLOAT32 anywhere every
    number read as a double is compared at float32 precision."""
    if case["config"].get("schemas.enable") == "true" or '"float"' not in json.dumps(
        case["schema"]
    ):
        return reads
    return tuple(_float32_all(r) for r in reads)


def _float32_all(v: Any) -> Any:
    if isinstance(v, dict):
        if set(v) == {"f"}:
            x = struct.unpack("<d", struct.pack("<q", int(v["f"])))[0]
            return {"f": repr(round_float32(x))}
        return {k: _float32_all(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_float32_all(x) for x in v]
    return v


def _differs(mine: Any, theirs: Any) -> bool:
    """Whether two read results differ: both errors agree whatever their messages."""
    mine_err = isinstance(mine, dict) and "err" in mine
    theirs_err = isinstance(theirs, dict) and "err" in theirs
    if mine_err or theirs_err:
        return mine_err != theirs_err
    return bool(mine != theirs)
