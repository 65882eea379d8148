"""Struct: put/get/validate, error messages, equality."""

from __future__ import annotations

import decimal

import pytest

from connectrt.data import Decimal, Schema, SchemaBuilder, Struct
from connectrt.errors import DataError

ADDRESS = (
    SchemaBuilder.struct()
    .name("Address")
    .field("street", Schema.STRING_SCHEMA)
    .field("zip", Schema.OPTIONAL_STRING_SCHEMA)
    .build()
)
USER = (
    SchemaBuilder.struct()
    .name("User")
    .field("id", Schema.INT64_SCHEMA)
    .field("age", Schema.OPTIONAL_INT32_SCHEMA)
    .field("country", SchemaBuilder.string().default_value("NL"))
    .field(
        "address",
        SchemaBuilder.struct()
        .name("Address")
        .field("street", Schema.STRING_SCHEMA)
        .field("zip", Schema.OPTIONAL_STRING_SCHEMA)
        .optional(),
    )
    .build()
)


def test_put_get_and_chaining() -> None:
    s = Struct(USER).put("id", 7).put("age", 30)
    assert s.get("id") == 7
    assert s["age"] == 30
    assert s.schema is USER


def test_get_returns_default_when_unset() -> None:
    s = Struct(USER)
    assert s.get("country") == "NL"
    assert s.get_without_default("country") is None
    assert s.get("age") is None


def test_setitem_and_put_by_field() -> None:
    s = Struct(USER)
    s["id"] = 1
    field = USER.field("age")
    assert field is not None
    s.put(field, 5)
    assert s.get(field) == 5 and s["id"] == 1


def test_unknown_field() -> None:
    s = Struct(USER)
    with pytest.raises(DataError, match="has no field 'x'"):
        s.put("x", 1)
    with pytest.raises(DataError, match="has no field 'x'"):
        s.get("x")
    other_field = ADDRESS.field("zip")
    assert other_field is not None
    with pytest.raises(DataError, match="no field"):
        s.put(other_field, "1")


def test_put_wrong_type_names_field_and_type() -> None:
    s = Struct(USER)
    with pytest.raises(DataError) as info:
        s.put("age", "thirty")
    assert str(info.value) == "Invalid value for field 'age': expected INT32, got str"
    with pytest.raises(DataError, match="'id': expected INT64, got bool"):
        s.put("id", True)
    with pytest.raises(DataError, match="out of range for INT32"):
        s.put("age", 2**31)
    assert s.get("age") is None  # failed put leaves the struct unchanged


def test_put_null_into_required_field_fails() -> None:
    with pytest.raises(DataError, match="'id': null is not allowed"):
        Struct(USER).put("id", None)


def test_validate_names_missing_required_field() -> None:
    s = Struct(USER).put("age", 1)
    with pytest.raises(DataError, match="'id'"):
        s.validate()
    s.put("id", 1)
    s.validate()  # country has a default, address is optional


def test_nested_struct_errors_name_the_path() -> None:
    address_schema = USER.field("address")
    assert address_schema is not None
    incomplete = Struct(address_schema.schema).put("zip", "1234")
    with pytest.raises(DataError, match=r"'address\.street'"):
        Struct(USER).put("id", 1).put("address", incomplete)
    incomplete.put("street", "Main")
    s = Struct(USER).put("id", 1).put("address", incomplete)
    s.validate()
    with pytest.raises(DataError, match="does not match"):
        s.put("address", Struct(ADDRESS).put("street", "x"))


def test_struct_requires_struct_schema() -> None:
    with pytest.raises(DataError, match="Not a struct schema"):
        Struct(Schema.INT32_SCHEMA)


def test_equality_and_repr() -> None:
    a = Struct(USER).put("id", 1).put("age", 2)
    b = Struct(USER).put("id", 1).put("age", 2)
    assert a == b
    b.put("age", 3)
    assert a != b
    assert a != Struct(ADDRESS)
    assert repr(a) == ("Struct{id=1, age=2, country=None, address=None}")
    with pytest.raises(TypeError):
        hash(a)


def test_logical_values() -> None:
    schema = SchemaBuilder.struct().field("price", Decimal.schema(2)).build()
    s = Struct(schema).put("price", decimal.Decimal("9.99"))
    assert s.get("price") == decimal.Decimal("9.99")
    with pytest.raises(DataError, match="'price': expected Decimal, got float"):
        s.put("price", 9.99)


def test_to_dict() -> None:
    address_schema = USER.field("address")
    assert address_schema is not None
    addr = Struct(address_schema.schema).put("street", "Main")
    s = Struct(USER).put("id", 1).put("address", addr)
    assert s.to_dict() == {
        "id": 1,
        "age": None,
        "country": "NL",
        "address": {"street": "Main", "zip": None},
    }
