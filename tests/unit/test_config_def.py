"""ConfigDef: define/parse/validate/merge, every ConfigType, validators and secrets."""

from __future__ import annotations

from typing import Any

import pytest

from connectrt.api.config import (
    NO_DEFAULT,
    CompositeValidator,
    ConfigDef,
    ConfigType,
    ConfigValue,
    Importance,
    NonEmptyString,
    Password,
    Range,
    ValidList,
    ValidRegex,
    ValidString,
    Width,
    with_prefix,
)
from connectrt.errors import ConfigError

SECRET = "s3cr3t-Value-42"
NULL_MSG = "Null value can not be supplied as the configuration value."


def one(type_: ConfigType, value: Any, **kw: Any) -> Any:
    """Parse a single key ``k`` of ``type_`` with ``value``."""
    return ConfigDef().define("k", type_, **kw).parse({"k": value})["k"]


# --- define -------------------------------------------------------------------------------


def test_define_chains_and_records_key_attributes() -> None:
    d = ConfigDef().define(
        "a.b",
        ConfigType.INT,
        5,
        Range.at_least(0),
        Importance.HIGH,
        "Some doc.",
        group="G",
        order_in_group=2,
        width=Width.SHORT,
        display_name="A B",
        dependents=["c"],
    )
    key = d.keys["a.b"]
    assert key.type is ConfigType.INT
    assert key.default == 5
    assert key.importance is Importance.HIGH
    assert key.documentation == "Some doc."
    assert (key.group, key.order_in_group, key.width) == ("G", 2, Width.SHORT)
    assert key.display_name == "A B"
    assert key.dependents == ("c",)
    assert not key.required
    assert d.names() == ["a.b"]


def test_define_without_default_is_required_and_display_name_defaults_to_name() -> None:
    d = ConfigDef().define("x", ConfigType.STRING)
    assert d.keys["x"].required
    assert d.keys["x"].default is NO_DEFAULT
    assert d.keys["x"].display_name == "x"


def test_define_parses_string_default_to_its_type() -> None:
    d = ConfigDef().define("n", ConfigType.LONG, "42").define("l", ConfigType.LIST, "a, b")
    assert d.keys["n"].default == 42
    assert d.keys["l"].default == ["a", "b"]


def test_define_none_default_is_optional_and_parses_to_none() -> None:
    d = ConfigDef().define("x", ConfigType.INT, None)
    assert not d.keys["x"].required
    assert d.parse({})["x"] is None


def test_define_twice_is_rejected() -> None:
    d = ConfigDef().define("x", ConfigType.STRING, "")
    with pytest.raises(ConfigError, match=r"^Configuration x is defined twice\.$"):
        d.define("x", ConfigType.INT, 1)


def test_define_rejects_default_failing_its_validator() -> None:
    with pytest.raises(ConfigError, match="at least 1"):
        ConfigDef().define("x", ConfigType.INT, 0, Range.at_least(1))


def test_define_rejects_default_of_wrong_type() -> None:
    with pytest.raises(ConfigError, match="x"):
        ConfigDef().define("x", ConfigType.INT, "nope")


# --- ConfigType parsing -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("true", True),
        ("TRUE", True),
        ("True", True),
        (" true ", True),
        ("false", False),
        ("FaLsE", False),
        (True, True),
        (False, False),
    ],
)
def test_boolean_is_case_insensitive(raw: Any, expected: bool) -> None:
    assert one(ConfigType.BOOLEAN, raw) is expected


@pytest.mark.parametrize("raw", ["yes", "1", "0", "", "t", 1])
def test_boolean_rejects_other_values(raw: Any) -> None:
    with pytest.raises(ConfigError, match="Expected value to be either true or false") as ei:
        one(ConfigType.BOOLEAN, raw)
    assert ei.value.name == "k"


@pytest.mark.parametrize(
    ("type_", "lo", "hi"),
    [
        (ConfigType.SHORT, -(2**15), 2**15 - 1),
        (ConfigType.INT, -(2**31), 2**31 - 1),
        (ConfigType.LONG, -(2**63), 2**63 - 1),
    ],
)
def test_integer_types_accept_their_full_range(type_: ConfigType, lo: int, hi: int) -> None:
    assert one(type_, str(lo)) == lo
    assert one(type_, str(hi)) == hi
    assert one(type_, hi) == hi
    assert one(type_, f"  {hi} ") == hi


@pytest.mark.parametrize(
    ("type_", "lo", "hi"),
    [
        (ConfigType.SHORT, -(2**15), 2**15 - 1),
        (ConfigType.INT, -(2**31), 2**31 - 1),
        (ConfigType.LONG, -(2**63), 2**63 - 1),
    ],
)
def test_integer_types_reject_out_of_range(type_: ConfigType, lo: int, hi: int) -> None:
    for bad in (str(hi + 1), str(lo - 1), hi + 1):
        with pytest.raises(ConfigError) as ei:
            one(type_, bad)
        assert "k" in str(ei.value)
        assert str(bad) in str(ei.value)


@pytest.mark.parametrize("type_", [ConfigType.SHORT, ConfigType.INT, ConfigType.LONG])
@pytest.mark.parametrize("raw", ["abc", "1.5", "", "0x10", True])
def test_integer_types_reject_non_integers(type_: ConfigType, raw: Any) -> None:
    with pytest.raises(ConfigError, match=r"for configuration k") as ei:
        one(type_, raw)
    assert ei.value.name == "k"


def test_int_error_message_names_value_and_key() -> None:
    with pytest.raises(ConfigError) as ei:
        one(ConfigType.INT, "abc")
    assert "Invalid value abc for configuration k" in str(ei.value)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1.5", 1.5), (" -2.25 ", -2.25), ("3", 3.0), (7, 7.0), (0.1, 0.1), ("1e3", 1000.0)],
)
def test_double(raw: Any, expected: float) -> None:
    value = one(ConfigType.DOUBLE, raw)
    assert isinstance(value, float)
    assert value == expected


@pytest.mark.parametrize("raw", ["abc", "", True])
def test_double_rejects_non_numbers(raw: Any) -> None:
    with pytest.raises(ConfigError, match="for configuration k"):
        one(ConfigType.DOUBLE, raw)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a,b,c", ["a", "b", "c"]),
        (" a , b ,c ", ["a", "b", "c"]),
        ("single", ["single"]),
        ("", []),
        ("   ", []),
        (["x ", " y"], ["x", "y"]),
        (("p", "q"), ["p", "q"]),
        ([], []),
    ],
)
def test_list(raw: Any, expected: list[str]) -> None:
    assert one(ConfigType.LIST, raw) == expected


def test_string_is_kept_verbatim() -> None:
    assert one(ConfigType.STRING, "  spaced  ") == "  spaced  "
    assert one(ConfigType.STRING, "") == ""
    assert one(ConfigType.STRING, 12) == "12"


def test_class_is_stripped_and_accepts_type_objects() -> None:
    assert one(ConfigType.CLASS, "  a.b.C ") == "a.b.C"
    assert one(ConfigType.CLASS, Password) == "connectrt.api.config_types.Password"


def test_password_parses_to_password_object() -> None:
    value = one(ConfigType.PASSWORD, SECRET)
    assert isinstance(value, Password)
    assert value.value == SECRET
    assert value == Password(SECRET)
    assert value != Password("other")
    assert hash(value) == hash(Password(SECRET))


def test_password_object_is_kept_as_is() -> None:
    p = Password(SECRET)
    assert one(ConfigType.PASSWORD, p) is p


def test_password_str_and_repr_never_reveal_the_value() -> None:
    p = Password(SECRET)
    assert str(p) == "[hidden]"
    assert f"{p}" == "[hidden]"
    assert "[hidden]" in repr(p)
    assert SECRET not in repr(p)
    assert SECRET not in repr({"k": p})
    assert SECRET not in repr([p])


def test_password_not_revealed_in_parse_errors() -> None:
    d = (
        ConfigDef()
        .define("pw", ConfigType.PASSWORD, validator=ValidString.of("x"))
        .define("n", ConfigType.INT)
    )
    with pytest.raises(ConfigError) as ei:
        d.parse({"pw": SECRET, "n": "bad"})
    assert SECRET not in str(ei.value)
    assert SECRET not in repr(ei.value)
    assert SECRET not in repr(ei.value.value)


def test_password_kept_wrapped_by_validate() -> None:
    d = ConfigDef().define("pw", ConfigType.PASSWORD).define("n", ConfigType.INT)
    values = d.validate({"pw": SECRET, "n": "oops"})
    assert isinstance(values["pw"].value, Password)
    assert SECRET not in repr(values)


def test_password_not_revealed_by_validate_when_its_validator_fails() -> None:
    """A password rejected by its validator must still not come back in clear: the
    validate endpoint shows passwords as ``[hidden]``."""

    def min_length(name: str, value: Any) -> None:
        if value is not None and len(value.value) < 32:
            raise ConfigError("Password is too short", name)

    d = ConfigDef().define("pw", ConfigType.PASSWORD, validator=min_length)
    cv = d.validate({"pw": SECRET})["pw"]
    assert cv.errors == ["Password is too short"]
    assert cv.value != SECRET
    assert SECRET not in repr(cv)


def test_non_empty_string_rejects_empty_password() -> None:
    d = ConfigDef().define("pw", ConfigType.PASSWORD, validator=NonEmptyString())
    with pytest.raises(ConfigError, match="String must be non-empty"):
        d.parse({"pw": ""})


# --- required, null, defaults, passthrough -------------------------------------------------


def test_missing_required_key_message_is_kafkas() -> None:
    d = ConfigDef().define("x", ConfigType.STRING)
    with pytest.raises(ConfigError) as ei:
        d.parse({})
    assert str(ei.value) == 'Missing required configuration "x" which has no default value.'
    assert ei.value.name == "x"


@pytest.mark.parametrize("has_default", [True, False])
def test_null_value_is_rejected(has_default: bool) -> None:
    d = ConfigDef().define("x", ConfigType.STRING, "d" if has_default else NO_DEFAULT)
    with pytest.raises(ConfigError) as ei:
        d.parse({"x": None})
    assert NULL_MSG in str(ei.value)
    assert ei.value.name == "x"


def test_defaults_fill_missing_keys() -> None:
    d = (
        ConfigDef()
        .define("i", ConfigType.INT, 3)
        .define("b", ConfigType.BOOLEAN, False)
        .define("l", ConfigType.LIST, "")
    )
    assert d.parse({}) == {"i": 3, "b": False, "l": []}


def test_parse_passes_unknown_keys_through_unchanged() -> None:
    d = ConfigDef().define("i", ConfigType.INT, 3)
    out = d.parse({"i": "4", "extra.key": "v", "typed": 5})
    assert out == {"i": 4, "extra.key": "v", "typed": 5}


def test_validator_runs_on_default_values_too() -> None:
    seen: list[tuple[str, Any]] = []

    def spy(name: str, value: Any) -> None:
        seen.append((name, value))

    ConfigDef().define("x", ConfigType.INT, 2, spy).parse({})
    assert ("x", 2) in seen


def test_parse_lists_every_error_at_once() -> None:
    d = (
        ConfigDef()
        .define("req", ConfigType.STRING)
        .define("num", ConfigType.INT, 1)
        .define("flag", ConfigType.BOOLEAN, False)
        .define("ok", ConfigType.STRING, "fine")
    )
    with pytest.raises(ConfigError) as ei:
        d.parse({"num": "x", "flag": "maybe"})
    msg = str(ei.value)
    assert msg.startswith("3 configuration errors:")
    assert 'Missing required configuration "req" which has no default value.' in msg
    assert "num" in msg
    assert "flag" in msg and "Expected value to be either true or false" in msg
    assert "ok" not in msg.replace("configuration", "")
    assert ei.value.name == "req"  # the first failing key


def test_parse_single_error_is_not_wrapped_in_a_count() -> None:
    d = ConfigDef().define("a", ConfigType.INT, 1).define("b", ConfigType.INT, 2)
    with pytest.raises(ConfigError) as ei:
        d.parse({"b": "zz"})
    assert "configuration errors" not in str(ei.value)
    assert "zz" in str(ei.value)
    assert ei.value.name == "b"


# --- validators ------------------------------------------------------------------------------


def test_range_at_least() -> None:
    r = Range.at_least(1)
    r("x", 1)
    r("x", 10**12)
    r("x", None)
    with pytest.raises(ConfigError, match=r"^Value must be at least 1$") as ei:
        r("x", 0)
    assert ei.value.name == "x"
    assert ei.value.value == 0


def test_range_between() -> None:
    r = Range.between(1, 5)
    r("x", 1)
    r("x", 5)
    with pytest.raises(ConfigError, match=r"^Value must be no more than 5$"):
        r("x", 6)
    with pytest.raises(ConfigError, match=r"^Value must be at least 1$"):
        r("x", 0)


def test_range_with_fractional_bound_in_message() -> None:
    with pytest.raises(ConfigError, match=r"at least 0\.5"):
        Range.at_least(0.5)("x", 0.25)


def test_range_applies_to_parsed_value_in_config_def() -> None:
    d = ConfigDef().define("t", ConfigType.INT, 1, Range.at_least(1))
    assert d.parse({"t": "7"})["t"] == 7
    with pytest.raises(ConfigError, match="Value must be at least 1") as ei:
        d.parse({"t": "0"})
    assert "t" in str(ei.value)


def test_valid_string() -> None:
    v = ValidString.of("none", "all")
    v("x", "all")
    v("x", None)
    with pytest.raises(ConfigError, match=r"^String must be one of: none, all$"):
        v("x", "ALL")
    assert str(v) == "[none, all]"


def test_valid_string_case_insensitive() -> None:
    v = ValidString.of("none", "restart", case_insensitive=True)
    v("x", "RESTART")
    v("x", "None")
    with pytest.raises(ConfigError, match="String must be one of: none, restart"):
        v("x", "reload")


def test_valid_list() -> None:
    v = ValidList(("a", "b"))
    v("x", ["a", "b", "a"])
    v("x", [])
    v("x", None)
    with pytest.raises(ConfigError) as ei:
        v("x", ["a", "c"])
    assert str(ei.value) == "Invalid value c for configuration x: String must be one of: a, b"


def test_valid_list_through_config_def() -> None:
    d = ConfigDef().define("l", ConfigType.LIST, "", ValidList(("x", "y")))
    assert d.parse({"l": "x, y"})["l"] == ["x", "y"]
    with pytest.raises(ConfigError, match="Invalid value z for configuration l"):
        d.parse({"l": "x,z"})


@pytest.mark.parametrize("bad", ["", "   ", "\t"])
def test_non_empty_string_rejects_blank(bad: str) -> None:
    with pytest.raises(ConfigError, match=r"^String must be non-empty$"):
        NonEmptyString()("x", bad)


def test_non_empty_string_accepts_text_and_none() -> None:
    NonEmptyString()("x", "a")
    NonEmptyString()("x", None)
    d = ConfigDef().define("t", ConfigType.STRING, validator=NonEmptyString())
    assert d.parse({"t": "topic"})["t"] == "topic"
    with pytest.raises(ConfigError, match="String must be non-empty"):
        d.parse({"t": ""})


def test_valid_regex() -> None:
    v = ValidRegex()
    v("x", "topic-.*")
    v("x", "")
    v("x", None)
    with pytest.raises(ConfigError, match=r"^Invalid regular expression: ") as ei:
        v("x", "(unclosed")
    assert ei.value.name == "x"


def test_composite_validator_runs_all_in_order_and_stops_at_first_failure() -> None:
    calls: list[str] = []

    def first(name: str, value: Any) -> None:
        calls.append("first")

    def fails(name: str, value: Any) -> None:
        calls.append("fails")
        raise ConfigError("boom", name, value)

    def never(name: str, value: Any) -> None:
        calls.append("never")

    c = CompositeValidator((first, fails, never))
    with pytest.raises(ConfigError, match=r"^boom$"):
        c("x", "v")
    assert calls == ["first", "fails"]


def test_composite_validator_combines_builtin_messages() -> None:
    c = CompositeValidator((NonEmptyString(), ValidString.of("a", "b")))
    c("x", "a")
    with pytest.raises(ConfigError, match="String must be non-empty"):
        c("x", " ")
    with pytest.raises(ConfigError, match="String must be one of: a, b"):
        c("x", "c")
    assert str(c) == "non-empty string, [a, b]"


# --- validate ------------------------------------------------------------------------------


def test_validate_returns_one_config_value_per_key_without_raising() -> None:
    d = (
        ConfigDef()
        .define("req", ConfigType.STRING)
        .define("num", ConfigType.INT, 1, Range.at_least(1))
        .define("ok", ConfigType.BOOLEAN, False)
        .define("nul", ConfigType.STRING, "d")
    )
    values = d.validate({"num": "0", "ok": "TRUE", "nul": None, "unknown": "x"})
    assert list(values) == ["req", "num", "ok", "nul"]
    assert all(isinstance(v, ConfigValue) for v in values.values())
    assert values["req"].errors == [
        'Missing required configuration "req" which has no default value.'
    ]
    assert values["num"].errors == ["Value must be at least 1"]
    assert values["ok"].errors == []
    assert values["ok"].value is True
    assert values["nul"].errors == [NULL_MSG]
    for v in values.values():
        assert v.visible
        assert v.recommended_values == []


def test_validate_fills_defaults_and_keeps_raw_on_error() -> None:
    d = ConfigDef().define("a", ConfigType.INT, 5).define("b", ConfigType.INT, 5)
    values = d.validate({"b": "nope"})
    assert values["a"].value == 5
    assert values["a"].name == "a"
    assert values["b"].value == "nope"
    assert len(values["b"].errors) == 1


def test_validate_all_valid_has_no_errors() -> None:
    d = ConfigDef().define("a", ConfigType.LIST, "").define("b", ConfigType.DOUBLE, 1.0)
    values = d.validate({"a": "x,y", "b": "2.5"})
    assert values["a"].value == ["x", "y"]
    assert values["b"].value == 2.5
    assert not any(v.errors for v in values.values())


# --- groups, merge, with_prefix -------------------------------------------------------------


def test_groups_keep_first_definition_order() -> None:
    d = (
        ConfigDef()
        .define("a", ConfigType.STRING, "", group="Common")
        .define("b", ConfigType.STRING, "", group="Transforms")
        .define("c", ConfigType.STRING, "", group="Common")
        .define("d", ConfigType.STRING, "")
        .define("e", ConfigType.STRING, "", group="Error Handling")
    )
    assert d.groups == ["Common", "Transforms", "Error Handling"]
    d.groups.append("mutated")
    assert d.groups == ["Common", "Transforms", "Error Handling"]


def test_merge_other_wins_and_originals_are_unchanged() -> None:
    a = (
        ConfigDef()
        .define("x", ConfigType.INT, 1, group="A")
        .define("y", ConfigType.STRING, "y", group="A")
    )
    b = ConfigDef().define("x", ConfigType.INT, 2, group="B").define("z", ConfigType.BOOLEAN, True)
    m = a.merge(b)
    assert m is not a and m is not b
    assert m.names() == ["x", "y", "z"]
    assert m.keys["x"].default == 2
    assert m.parse({}) == {"x": 2, "y": "y", "z": True}
    assert "B" in m.groups and m.groups.index("A") < m.groups.index("B")
    assert a.names() == ["x", "y"] and a.keys["x"].default == 1
    assert b.names() == ["x", "z"]


def test_config_def_from_keys() -> None:
    a = ConfigDef().define("x", ConfigType.INT, 1, group="G")
    copy = ConfigDef(a.keys.values())
    assert copy.names() == ["x"]
    assert copy.groups == ["G"]


def test_with_prefix_strips_by_default() -> None:
    props = {"producer.acks": "all", "producer.linger.ms": "5", "consumer.x": "1", "producer": "p"}
    assert with_prefix(props, "producer.") == {"acks": "all", "linger.ms": "5"}
    assert with_prefix(props, "producer.", strip=False) == {
        "producer.acks": "all",
        "producer.linger.ms": "5",
    }
    assert with_prefix(props, "nothing.") == {}
