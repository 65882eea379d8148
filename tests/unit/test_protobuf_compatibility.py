"""Protobuf compatibility in the built-in registry: the evolution cases of Confluent's
schema-evolution documentation (add a field, remove a field, change a type, move fields into a
oneof), at each level, through the REST API with verbose messages."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from connectrt.schema_registry.schema_types import check_compatibility, parse
from connectrt.testing.schema_registry import memory_registry

V1 = """syntax = "proto3";
package acme;
message User {
  string name = 1;
  int32 age = 2;
}
"""
ADD_FIELD = V1.replace("int32 age = 2;", "int32 age = 2;\n  string email = 3;")
REMOVE_FIELD = V1.replace("  int32 age = 2;\n", "  reserved 2;\n")
WIDEN = V1.replace("int32 age = 2;", "int64 age = 2;")
RETYPE = V1.replace("int32 age = 2;", "string age = 2;")
TO_ONEOF = V1.replace(
    "  string name = 1;\n  int32 age = 2;",
    "  oneof who {\n    string name = 1;\n    int32 age = 2;\n  }",
)
RENAMED_PACKAGE = V1.replace("package acme;", "package other;")


def _check(level: str, new: str, *old: str) -> list[str]:
    return check_compatibility(
        "PROTOBUF", level, parse("PROTOBUF", new), [parse("PROTOBUF", o) for o in old]
    )


@pytest.mark.parametrize("level", ["BACKWARD", "FORWARD", "FULL", "FULL_TRANSITIVE"])
def test_adding_and_removing_fields_is_compatible_at_every_level(level: str) -> None:
    assert _check(level, ADD_FIELD, V1) == []
    assert _check(level, REMOVE_FIELD, V1) == []


def test_wire_compatible_scalar_change_passes_and_others_fail() -> None:
    assert _check("FULL", WIDEN, V1) == []
    messages = _check("BACKWARD", RETYPE, V1)
    assert messages == ["BACKWARD: FIELD_SCALAR_KIND_CHANGED at #/User/2: int32 -> string"]


def test_moving_several_fields_into_a_new_oneof_is_incompatible() -> None:
    messages = _check("BACKWARD", TO_ONEOF, V1)
    assert any("MULTIPLE_FIELDS_MOVED_TO_ONEOF" in m for m in messages)


def test_package_change_and_removed_message_are_incompatible() -> None:
    assert any("PACKAGE_CHANGED" in m for m in _check("BACKWARD", RENAMED_PACKAGE, V1))
    two = V1 + "message Extra {\n  string x = 1;\n}\n"
    assert _check("BACKWARD", V1, two) == ["BACKWARD: MESSAGE_REMOVED at #/Extra"]
    assert _check("BACKWARD", two, V1) == []


def test_transitive_levels_check_every_version() -> None:
    # v2 drops age, v3 brings it back as a string: fine against v2, not against v1.
    v3 = REMOVE_FIELD.replace("  reserved 2;\n", "  string age = 2;\n")
    assert _check("BACKWARD", v3, V1, REMOVE_FIELD) == []
    assert any("#/User/2" in m for m in _check("BACKWARD_TRANSITIVE", v3, V1, REMOVE_FIELD))


@pytest.fixture(scope="module")
def registry() -> Iterator[str]:
    with memory_registry() as (_, url):
        yield url


def test_rest_api_registers_references_and_answers_compatibility(registry: str) -> None:
    common = 'syntax = "proto3";\npackage acme.common;\nmessage Money {\n  int64 cents = 1;\n}\n'
    with httpx.Client(base_url=registry) as http:
        ref = http.post(
            "/subjects/money/versions", json={"schema": common, "schemaType": "PROTOBUF"}
        )
        assert ref.status_code == 200, ref.text
        order = (
            'syntax = "proto3";\npackage acme;\nimport "acme/common/money.proto";\n'
            "message Order {\n  acme.common.Money total = 1;\n}\n"
        )
        refs = [{"name": "acme/common/money.proto", "subject": "money", "version": 1}]
        body = {"schema": order, "schemaType": "PROTOBUF", "references": refs}
        created = http.post("/subjects/orders-value/versions", json=body)
        assert created.status_code == 200, created.text
        missing = http.post(
            "/subjects/bad-value/versions", json={"schema": order, "schemaType": "PROTOBUF"}
        )
        assert missing.status_code == 422
        retyped = order.replace("acme.common.Money total = 1;", "string total = 1;")
        check = http.post(
            "/compatibility/subjects/orders-value/versions/latest?verbose=true",
            json={"schema": retyped, "schemaType": "PROTOBUF", "references": refs},
        ).json()
        assert check["is_compatible"] is False
        assert any("FIELD_KIND_CHANGED at #/Order/1" in m for m in check["messages"])
        schema_id = created.json()["id"]
        text = http.get(f"/schemas/ids/{schema_id}").json()
        assert text["references"] == refs and "message Order" in text["schema"]
        serialized = http.get(f"/schemas/ids/{schema_id}?format=serialized").json()["schema"]
        assert "{" not in serialized and serialized.strip()
        assert http.get("/schemas/types").json() == ["JSON", "PROTOBUF", "AVRO"]
