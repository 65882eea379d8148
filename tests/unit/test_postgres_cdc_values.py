"""Pure parts of the PostgreSQL CDC source: Debezium's value formats the side-by-side test
found, and the resumable snapshot's query (no server needed)."""

from __future__ import annotations

import json

from connectors.postgres_cdc.catalog import TableInfo
from connectors.postgres_cdc.columns import ColumnInfo, column_type
from connectors.postgres_cdc.events import SOURCE_SCHEMA, SourceInfo, TableEvents
from connectors.postgres_cdc.task import _key_text, _snapshot_query


def _column(name: str, type_name: str, typmod: int = -1, not_null: bool = False) -> ColumnInfo:
    return ColumnInfo(name, type_name, "b", typmod, not_null)


def test_zoned_timestamps_have_the_columns_precision_in_fraction_digits() -> None:
    default = column_type(_column("at", "timestamptz"), "precise")
    assert default.parse("2024-01-02 03:04:05.5+02") == "2024-01-02T01:04:05.500000Z"
    assert default.parse("2024-01-02 03:04:05+00") == "2024-01-02T03:04:05.000000Z"
    three = column_type(_column("at", "timestamptz", typmod=3), "precise")
    assert three.parse("2024-01-02 03:04:05.123456+00") == "2024-01-02T03:04:05.123Z"
    zero = column_type(_column("at", "timestamptz", typmod=0), "precise")
    assert zero.parse("2024-01-02 03:04:05+00") == "2024-01-02T03:04:05Z"


def test_variable_scale_numerics_drop_trailing_zeros_as_debeziums_do() -> None:
    numeric = column_type(_column("amount", "numeric"), "precise")

    def parts(text: str) -> tuple[int, int]:
        value = numeric.parse(text)
        return value.get("scale"), int.from_bytes(value.get("value"), "big", signed=True)

    assert parts("-7140.00") == (0, -7140)
    assert parts("2.500") == (1, 25)
    assert parts("7100") == (0, 7100)  # never below scale 0
    assert parts("0.000") == (0, 0)
    assert parts("-0.000123") == (6, -123)
    assert parts("3.14159") == (5, 314159)
    # The unscaled value in as few bytes as Java's BigInteger.toByteArray.
    raw = {t: numeric.parse(t).get("value") for t in ("-128", "-129", "127", "128", "0", "-1")}
    assert raw == {
        "-128": b"\x80",
        "-129": b"\xff\x7f",
        "127": b"\x7f",
        "128": b"\x00\x80",
        "0": b"\x00",
        "-1": b"\xff",
    }
    # A declared scale keeps its digits; the string mode keeps the server's text.
    assert (
        str(
            column_type(_column("p", "numeric", typmod=(10 << 16 | 2) + 4), "precise").parse("7.00")
        )
        == "7.00"
    )
    assert column_type(_column("amount", "numeric"), "string").parse("7.00") == "7.00"


def test_the_source_block_has_debeziums_fields_and_compact_sequence() -> None:
    assert SOURCE_SCHEMA.version == 1
    assert [f.name for f in SOURCE_SCHEMA.fields][-3:] == ["xmin", "origin", "origin_lsn"]
    table = TableInfo("public", "t", (_column("id", "int4", not_null=True),), ("id",), "d")
    events = TableEvents("p", "db", table, "precise", tombstones=True)
    (record,) = events.records(
        "c", None, [1], SourceInfo(1_000_000, "false", 7, 200, 100), {"server": "p"}, [{}]
    )
    assert record.value is not None
    assert record.value.get("source").get("sequence") == '["100","200"]'


def test_the_snapshot_reads_in_key_order_and_resumes_after_a_key() -> None:
    table = TableInfo(
        "public",
        "t",
        (_column("a", "int4", not_null=True), _column("id", "text", not_null=True)),
        ("id", "a"),
        "d",
    )
    sql, params = _snapshot_query(table, None)
    assert sql == 'SELECT t."a"::text, t."id"::text FROM "public"."t" AS t ORDER BY t."id", t."a"'
    assert params == ()
    sql, params = _snapshot_query(table, ["x", "5"])
    assert 'WHERE (t."id", t."a") > (%s, %s) ORDER BY' in sql and params == ("x", "5")
    assert json.loads(_key_text(table, ("5", "x")) or "") == ["x", "5"]
    keyless = TableInfo("public", "k", (_column("v", "text"),), (), "d")
    assert _snapshot_query(keyless, ["1"]) == ('SELECT t."v"::text FROM "public"."k" AS t', ())
    assert _key_text(keyless, ("1",)) is None
