"""Header text -> a Connect value with an inferred schema: Kafka's ``Values.parseString``.

A recursive-descent reader of Kafka's ``Values`` syntax: ``null``, ``true``/``false``, numbers,
dates and times (:mod:`connectrt.converters.headers.scalars`), ``[...]`` lists and ``{...}``
maps whose entries get a common schema (:mod:`connectrt.converters.headers.schema_merging`);
any other text, or text that does not parse completely, is a STRING.
"""

from __future__ import annotations

from typing import Any, Final

from connectrt.api.converter import SchemaAndValue
from connectrt.converters.headers.scalars import (
    FALSE,
    NULL,
    TEMPORAL_PREFIX,
    TRUE,
    parse_scalar,
    parse_temporal,
)
from connectrt.converters.headers.schema_merging import Merger, align
from connectrt.data.schema import Schema
from connectrt.data.schema_builder import SchemaBuilder

__all__ = ["parse_string"]

_DELIMITERS: Final = frozenset(':,{}[]"')
_LITERALS: Final = {"null": NULL, "true": TRUE, "false": FALSE}
"""The unquoted words that are values of their own."""


class _Fail(Exception):
    """The text is not a value of the kind being parsed."""


class _Parser:
    """Recursive-descent reader of Kafka's ``Values`` text syntax."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip_ws(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos].isspace():
            pos += 1
        self.pos = pos

    def peek(self) -> str:
        self.skip_ws()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def at_end(self) -> bool:
        return self.peek() == ""

    def token(self) -> str:
        """The text up to the next unescaped delimiter (or the end), trimmed."""
        text, start, pos = self.text, self.pos, self.pos
        escaped = False
        while pos < len(text):
            c = text[pos]
            if c == "\\":
                escaped = not escaped
            elif c in _DELIMITERS and not escaped:
                break
            else:
                escaped = False
            pos += 1
        self.pos = pos
        return text[start:pos].strip()

    def value(self) -> SchemaAndValue:
        """One embedded value (inside a list or map)."""
        c = self.peek()
        if c == '"':
            return self.quoted()
        if c == "[":
            return self.array()
        if c == "{":
            return self.map()
        if c and (c.isdigit() and c.isascii()):
            # Times and timestamps contain ':' (a delimiter), so match them first.
            m = TEMPORAL_PREFIX.match(self.text, self.pos)
            if m is not None:
                end = m.end()
                rest = self.text[end:].lstrip()
                if not rest or rest[0] in ",]}:":
                    temporal = parse_temporal(m.group())
                    if temporal is not None:
                        self.pos = end
                        return temporal
        token = self.token()
        literal = _LITERALS.get(token)
        if literal is not None:
            return literal
        result = parse_scalar(token)
        if result is None:
            raise _Fail(f"unquoted text {token!r} inside a list or map")
        return result

    def quoted(self) -> SchemaAndValue:
        text = self.text
        pos = self.pos + 1  # after the opening quote
        chars: list[str] = []
        while pos < len(text):
            c = text[pos]
            if c == "\\" and pos + 1 < len(text):
                nxt = text[pos + 1]
                # \" and \\ are the escapes the writer makes; keep any other backslash.
                chars.append(nxt if nxt in '"\\' else c + nxt)
                pos += 2
                continue
            if c == '"':
                self.pos = pos + 1
                content = "".join(chars)
                temporal = parse_temporal(content)
                return temporal or SchemaAndValue(Schema.STRING_SCHEMA, content)
            chars.append(c)
            pos += 1
        raise _Fail("unterminated quoted string")

    def closes(self, close: str, what: str, empty: str) -> bool:
        """Whether the array or map (``what``) ends here, at ``close`` (then read); before an
        element, a _Fail at the end of the text or at a comma (the ``empty`` message)."""
        c = self.peek()
        if c == close:
            self.pos += 1
            return True
        if c == "":
            raise _Fail(f"{what} is missing its terminating '{close}'")
        if c == ",":
            raise _Fail(empty)
        return False

    def array(self) -> SchemaAndValue:
        self.pos += 1  # [
        values: list[Any] = []
        merger = Merger()
        while not self.closes("]", "array", "empty array element"):
            item = self.value()
            merger.merge(item)
            values.append(item.value)
            c = self.peek()
            if c == ",":
                self.pos += 1  # a trailing comma before ']' is accepted, as in Kafka
            elif c != "]":
                raise _Fail("array elements missing ',' delimiter")
        element = merger.schema()
        if element is None:
            return SchemaAndValue(None, values)
        return SchemaAndValue(
            SchemaBuilder.array(element).build(), [align(element, v) for v in values]
        )

    def map(self) -> SchemaAndValue:
        self.pos += 1  # {
        entries: list[tuple[Any, Any]] = []
        keys, values = Merger(), Merger()
        while not self.closes("}", "map", "map entry with no key or value"):
            key = self.value()
            if key.value is None:
                raise _Fail("map entry may not have a null key")
            if self.peek() != ":":
                raise _Fail("map entry is missing ':'")
            self.pos += 1
            item = self.value()
            entries.append((key.value, item.value))
            keys.merge(key)
            values.merge(item)
            if self.peek() == ",":
                self.pos += 1
        key_schema, value_schema = keys.schema(), values.schema()
        try:
            if key_schema is None or value_schema is None:
                return SchemaAndValue(None, dict(entries))
            result = {align(key_schema, k): align(value_schema, v) for k, v in entries}
        except TypeError as e:  # an unhashable key (a list or map)
            raise _Fail(str(e)) from None
        schema = SchemaBuilder.map(key_schema, value_schema).build()
        return SchemaAndValue(schema, result)


def parse_string(text: str | None) -> SchemaAndValue:
    """Kafka's ``Values.parseString``: infer a schema and value from text (see the package doc
    of :mod:`connectrt.converters.headers`)."""
    if text is None:
        return NULL
    if text == "":
        return SchemaAndValue(Schema.STRING_SCHEMA, text)
    stripped = text.strip()
    literal = _LITERALS.get(stripped)
    if literal is not None:
        return literal
    if stripped[:1] in ("[", "{"):
        parser = _Parser(text)
        parser.skip_ws()
        try:
            result = parser.array() if stripped[0] == "[" else parser.map()
            if parser.at_end():
                return result
        except (_Fail, RecursionError):
            pass
        return SchemaAndValue(Schema.STRING_SCHEMA, text)
    return parse_scalar(stripped) or SchemaAndValue(Schema.STRING_SCHEMA, text)
