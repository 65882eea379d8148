"""GroupedDefinitions: keys numbered within their group in the order they are defined."""

from __future__ import annotations

import pytest

from connectors.config_groups import GroupedDefinitions
from connectrt.api import ConfigDef, ConfigError, ConfigType, Importance


def test_keys_are_numbered_within_their_group_and_a_returning_group_continues() -> None:
    definitions = (
        GroupedDefinitions()
        .group("A")
        .define("a.one", ConfigType.STRING, "x", None, Importance.HIGH, "First of A.")
        .define("a.two", ConfigType.INT, 2)
        .group("B")
        .define("b.one", ConfigType.BOOLEAN, False)
        .group("A")
        .define("a.three", ConfigType.LONG, 3)
        .build()
    )
    keys = definitions.keys
    assert [(k.name, k.group, k.order_in_group) for k in keys.values()] == [
        ("a.one", "A", 1),
        ("a.two", "A", 2),
        ("b.one", "B", 1),
        ("a.three", "A", 3),
    ]
    assert keys["a.one"].importance is Importance.HIGH
    assert keys["a.one"].documentation == "First of A."
    assert definitions.groups == ["A", "B"]


def test_a_base_comes_first_and_its_groups_go_on_from_their_last_number() -> None:
    base = ConfigDef().define("db.url", ConfigType.STRING, group="Database", order_in_group=1)
    definitions = (
        GroupedDefinitions(base)
        .group("Database")
        .define("db.table", ConfigType.STRING, "")
        .group("Other")
        .define("other", ConfigType.STRING, "")
        .build()
    )
    assert [(k.name, k.order_in_group) for k in definitions.keys.values()] == [
        ("db.url", 1),
        ("db.table", 2),
        ("other", 1),
    ]
    assert list(base.keys) == ["db.url"], "the base ConfigDef is not changed"


def test_a_key_before_any_group_has_none_and_a_key_defined_twice_fails() -> None:
    definitions = GroupedDefinitions().define("plain", ConfigType.STRING, "").build()
    assert definitions.keys["plain"].group is None
    assert definitions.keys["plain"].order_in_group == -1
    with pytest.raises(ConfigError, match="defined twice"):
        GroupedDefinitions().define("k", ConfigType.STRING, "").define("k", ConfigType.INT, 1)
