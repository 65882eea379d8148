"""Java .properties parsing and connector config files (properties, JSON map, JSON request)."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectrt.errors import ConfigError
from connectrt.runtime.properties import load_connector_file, load_properties, parse_properties

# --- parse_properties -----------------------------------------------------------------------


def test_separators_equals_colon_and_whitespace() -> None:
    text = "a=1\nb:2\nc 3\nd\t4\ne = 5\nf : 6\ng   =   7\nh\t:\t8\n"
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "4",
        "e": "5",
        "f": "6",
        "g": "7",
        "h": "8",
    }


def test_comments_and_blank_lines_are_ignored() -> None:
    text = "# a comment\n! another comment\n\n   \n  # indented comment\nkey=value\n"
    assert parse_properties(text) == {"key": "value"}


def test_comment_marker_inside_value_is_kept() -> None:
    assert parse_properties("k=v # not a comment\nx=a!b") == {
        "k": "v # not a comment",
        "x": "a!b",
    }


def test_only_first_separator_splits() -> None:
    assert parse_properties("url=http://host:8083/a=b") == {"url": "http://host:8083/a=b"}
    assert parse_properties("k:v:w") == {"k": "v:w"}


def test_leading_whitespace_of_line_and_value_is_dropped_trailing_kept() -> None:
    assert parse_properties("   key =   value  ") == {"key": "value  "}


def test_key_without_value() -> None:
    assert parse_properties("lonely\nempty=\nspace ") == {"lonely": "", "empty": "", "space": ""}


def test_later_keys_win() -> None:
    assert parse_properties("k=1\nk=2") == {"k": "2"}


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_line_terminators(eol: str) -> None:
    assert parse_properties(f"a=1{eol}b=2{eol}") == {"a": "1", "b": "2"}


def test_continuation_lines() -> None:
    text = "list=a,\\\n    b,\\\n\tc\nnext=x\n"
    assert parse_properties(text) == {"list": "a,b,c", "next": "x"}


def test_continuation_line_starting_with_hash_is_not_a_comment() -> None:
    assert parse_properties("k=a\\\n  #b\n") == {"k": "a#b"}


def test_trailing_backslash_at_end_of_input_is_dropped() -> None:
    assert parse_properties("k=v\\") == {"k": "v"}


def test_even_number_of_trailing_backslashes_is_not_a_continuation() -> None:
    assert parse_properties("path=C:\\\\dir\\\\\nnext=1") == {"path": "C:\\dir\\", "next": "1"}


def test_escapes_in_values() -> None:
    text = r"k=a\:b\=c\nd\te\\f\u00e9\u0041"
    assert parse_properties(text) == {"k": "a:b=c\nd\te\\féA"}


def test_escaped_separators_and_spaces_in_keys() -> None:
    text = "my\\ key=v1\nwith\\:colon=v2\nwith\\=eq:v3\n"
    assert parse_properties(text) == {"my key": "v1", "with:colon": "v2", "with=eq": "v3"}


def test_unicode_escape_in_key() -> None:
    assert parse_properties("caf\\u00e9=1") == {"café": "1"}


def test_non_ascii_text() -> None:
    assert parse_properties("greeting=héllo wörld") == {"greeting": "héllo wörld"}


def test_escaped_backslash_before_separator_ends_the_key() -> None:
    # Java: `a\\=b` is the key `a\` (an escaped backslash) and the value `b`.
    assert parse_properties("a\\\\=b") == {"a\\": "b"}


@pytest.mark.parametrize("char", ["\x0c", "\u2028"])
def test_only_cr_and_lf_end_a_line(char: str) -> None:
    # Java's Properties.load treats only \n, \r and \r\n as line terminators; other
    # characters (form feed, NEL, U+2028...) are part of the value.
    assert parse_properties(f"a=x{char}y\nb=z") == {"a": f"x{char}y", "b": "z"}


def test_sample_connector_properties() -> None:
    text = (
        "# Licensed to the Apache Software Foundation\n"
        "name=local-file-source\n"
        "connector.class=FileStreamSource\n"
        "tasks.max=1\n"
        "file=test.txt\n"
        "topic=connect-test\n"
    )
    assert parse_properties(text) == {
        "name": "local-file-source",
        "connector.class": "FileStreamSource",
        "tasks.max": "1",
        "file": "test.txt",
        "topic": "connect-test",
    }


# --- load_properties ------------------------------------------------------------------------


def test_load_properties_reads_utf8_file(tmp_path: Path) -> None:
    p = tmp_path / "w.properties"
    p.write_text("bootstrap.servers=localhost:9092\nk=é\n", encoding="utf-8")
    assert load_properties(p) == {"bootstrap.servers": "localhost:9092", "k": "é"}
    assert load_properties(str(p)) == load_properties(p)


def test_load_properties_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.properties"
    with pytest.raises(ConfigError) as ei:
        load_properties(missing)
    assert str(ei.value) == f"Config file not found: {missing}"
    assert "\n" not in str(ei.value)


def test_load_properties_directory_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Cannot read config file") as ei:
        load_properties(tmp_path)
    assert str(tmp_path) in str(ei.value)


# --- load_connector_file --------------------------------------------------------------------


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_connector_properties_file(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        "c.properties",
        "name=local-file-sink\nconnector.class=FileStreamSink\ntopics=connect-test\n",
    )
    name, config, state = load_connector_file(p)
    assert name == "local-file-sink"
    assert config == {
        "name": "local-file-sink",
        "connector.class": "FileStreamSink",
        "topics": "connect-test",
    }
    assert state is None


def test_connector_json_string_map(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        "c.json",
        '{"name": "j", "connector.class": "FileStreamSource", "topic": "t", "file": "f.txt"}',
    )
    name, config, state = load_connector_file(p)
    assert name == "j"
    assert config == {
        "name": "j",
        "connector.class": "FileStreamSource",
        "topic": "t",
        "file": "f.txt",
    }
    assert state is None


def test_connector_json_with_leading_whitespace(tmp_path: Path) -> None:
    p = write(tmp_path, "c.json", '\n   {"name": "j", "connector.class": "X"}\n')
    assert load_connector_file(p)[0] == "j"


def test_connector_json_create_request_with_initial_state(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        "c.json",
        '{"name": "req", "config": {"connector.class": "FileStreamSink", "topics": "t"},'
        ' "initial_state": "PAUSED"}',
    )
    name, config, state = load_connector_file(p)
    assert name == "req"
    assert config == {"connector.class": "FileStreamSink", "topics": "t", "name": "req"}
    assert state == "PAUSED"


def test_connector_json_create_request_without_initial_state(tmp_path: Path) -> None:
    p = write(tmp_path, "c.json", '{"name": "req", "config": {"connector.class": "X"}}')
    name, config, state = load_connector_file(p)
    assert (name, config["name"], state) == ("req", "req", None)


def test_connector_json_create_request_name_only_in_config(tmp_path: Path) -> None:
    p = write(tmp_path, "c.json", '{"config": {"name": "inner", "connector.class": "X"}}')
    name, config, _ = load_connector_file(p)
    assert name == "inner"
    assert config["name"] == "inner"


def test_connector_json_create_request_name_mismatch_is_not_silently_inconsistent(
    tmp_path: Path,
) -> None:
    # Kafka rejects a request whose config "name" differs from "name"; at the very least the
    # returned name and config["name"] must agree.
    p = write(
        tmp_path,
        "c.json",
        '{"name": "outer", "config": {"name": "inner", "connector.class": "X"}}',
    )
    try:
        name, config, _ = load_connector_file(p)
    except ConfigError as e:
        assert "name" in str(e)
    else:
        assert config["name"] == name


def test_non_string_json_values_become_strings(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        "c.json",
        '{"name": "j", "tasks.max": 3, "errors.log.enable": true, "flag": false,'
        ' "ratio": 1.5, "transforms": ["a", "b"], "nothing": null}',
    )
    _, config, _ = load_connector_file(p)
    assert config["tasks.max"] == "3"
    assert config["errors.log.enable"] == "true"
    assert config["flag"] == "false"
    assert config["ratio"] == "1.5"
    assert config["transforms"] == "a,b"
    assert all(isinstance(v, str) for v in config.values())


def test_non_string_values_inside_create_request_config(tmp_path: Path) -> None:
    p = write(tmp_path, "c.json", '{"name": "r", "config": {"tasks.max": 2, "x": true}}')
    _, config, _ = load_connector_file(p)
    assert config["tasks.max"] == "2"
    assert config["x"] == "true"


def test_name_is_stripped(tmp_path: Path) -> None:
    p = write(tmp_path, "c.properties", "name=  spaced  \n")
    name, _, _ = load_connector_file(p)
    assert name == "spaced"


@pytest.mark.parametrize(
    ("filename", "text"),
    [
        ("c.properties", "connector.class=FileStreamSink\n"),
        ("c.properties", "name=\n"),
        ("c.json", '{"connector.class": "FileStreamSink"}'),
        ("c.json", '{"name": "   "}'),
        ("c.json", '{"config": {"connector.class": "FileStreamSink"}}'),
    ],
)
def test_missing_name(tmp_path: Path, filename: str, text: str) -> None:
    p = write(tmp_path, filename, text)
    with pytest.raises(ConfigError) as ei:
        load_connector_file(p)
    assert str(ei.value) == f"Connector config file {p} has no 'name'"
    assert ei.value.name == "name"


def test_invalid_json(tmp_path: Path) -> None:
    p = write(tmp_path, "c.json", '{"name": "x", ')
    with pytest.raises(ConfigError) as ei:
        load_connector_file(p)
    assert str(ei.value).startswith(f"Connector config file {p} is not valid JSON")


def test_missing_connector_file(tmp_path: Path) -> None:
    missing = tmp_path / "gone.json"
    with pytest.raises(ConfigError) as ei:
        load_connector_file(missing)
    assert str(ei.value) == f"Connector config file not found: {missing}"


def test_connector_file_is_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Cannot read connector config file"):
        load_connector_file(tmp_path)
