# Why one module over 450 lines: one recursive-descent parser over one token stream; its
# methods call each other and split apart they would share the parser state anyway.
"""A parser of ``.proto`` source text (proto3 and proto2) into a ``FileDescriptorProto``.

What a schema registry needs: ``syntax``, ``package``, ``import`` (``public``/``weak``),
messages with nested messages and enums, fields with labels (``repeated``, ``optional``
(proto3 optional: a synthetic oneof), ``required``), ``map<K, V>`` fields (a ``...Entry``
nested type as protoc makes it), ``oneof``, ``reserved`` numbers, ranges and names, enum
values, field ``default`` and ``packed``/``deprecated`` options and the
``(confluent.field_meta)`` option with its ``params``. Other options are parsed and dropped;
``service`` and ``extend`` blocks are skipped. Type names are kept as written: building the
descriptor pool resolves them.

Thread-safety: pure functions.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Final

from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError

from connectrt.converters.protobuf.descriptors import set_field_meta
from connectrt.errors import DataError

__all__ = ["SCALARS", "ProtoSyntaxError", "parse_proto", "schema_file"]

F = descriptor_pb2.FieldDescriptorProto

SCALARS: Final[dict[str, int]] = {
    "double": F.TYPE_DOUBLE,
    "float": F.TYPE_FLOAT,
    "int64": F.TYPE_INT64,
    "uint64": F.TYPE_UINT64,
    "int32": F.TYPE_INT32,
    "fixed64": F.TYPE_FIXED64,
    "fixed32": F.TYPE_FIXED32,
    "bool": F.TYPE_BOOL,
    "string": F.TYPE_STRING,
    "bytes": F.TYPE_BYTES,
    "uint32": F.TYPE_UINT32,
    "sfixed32": F.TYPE_SFIXED32,
    "sfixed64": F.TYPE_SFIXED64,
    "sint32": F.TYPE_SINT32,
    "sint64": F.TYPE_SINT64,
}

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<num>[-+]?(?:0[xX][0-9a-fA-F]+|\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?))
  | (?P<ident>\.?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<sym>[{}\[\]()<>;,=:.\-])
    """,
    re.VERBOSE | re.DOTALL,
)
_MAX_FIELD: Final = 536_870_911


class ProtoSyntaxError(DataError):
    """The text is not valid ``.proto`` source."""


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    pos = 0
    line = 1
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise ProtoSyntaxError(f"Invalid character {text[pos]!r} at line {line}")
        kind = match.lastgroup or ""
        value = match.group()
        if kind != "ws":
            out.append((kind, value, line))
        line += value.count("\n")
        pos = match.end()
    return out


def _unquote(token: str) -> str:
    body = token[1:-1]
    return body.encode("latin-1", "backslashreplace").decode("unicode_escape")


def _camel(name: str) -> str:
    out, upper = [], True
    for ch in name:
        if ch == "_":
            upper = True
        elif upper:
            out.append(ch.upper())
            upper = False
        else:
            out.append(ch)
    return "".join(out)


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.pos = 0
        self.syntax = "proto2"

    # -- token helpers ------------------------------------------------------------------
    def peek(self, ahead: int = 0) -> str:
        index = self.pos + ahead
        return self.toks[index][1] if index < len(self.toks) else ""

    def next(self) -> str:
        if self.pos >= len(self.toks):
            raise ProtoSyntaxError("Unexpected end of .proto text")
        self.pos += 1
        return self.toks[self.pos - 1][1]

    def kind(self) -> str:
        return self.toks[self.pos][0] if self.pos < len(self.toks) else ""

    def expect(self, value: str) -> None:
        got = self.next()
        if got != value:
            line = self.toks[self.pos - 1][2]
            raise ProtoSyntaxError(f"Expected {value!r} but found {got!r} at line {line}")

    def accept(self, value: str) -> bool:
        if self.peek() == value:
            self.pos += 1
            return True
        return False

    def ident(self) -> str:
        if self.kind() != "ident":
            line = self.toks[self.pos][2] if self.pos < len(self.toks) else "end"
            raise ProtoSyntaxError(f"Expected a name but found {self.peek()!r} at line {line}")
        return self.next()

    def string(self) -> str:
        if self.kind() != "str":
            raise ProtoSyntaxError(f"Expected a string but found {self.peek()!r}")
        out = _unquote(self.next())
        while self.kind() == "str":  # adjacent literals concatenate
            out += _unquote(self.next())
        return out

    def integer(self) -> int:
        text = self.next()
        sign = -1 if self.toks[self.pos - 1][1] == "-" else 1
        if sign < 0:
            text = self.next()
        try:
            return sign * int(text, 0)
        except ValueError:
            try:
                return sign * int(text, 8 if text.startswith("0") else 10)
            except ValueError:
                raise ProtoSyntaxError(f"Expected an integer but found {text!r}") from None

    def skip_block(self) -> None:
        depth = 0
        while True:
            tok = self.next()
            if tok == "{":
                depth += 1
            elif tok == "}":
                depth -= 1
                if depth == 0:
                    return

    # -- constants and options ------------------------------------------------------------
    def constant(self) -> Any:
        if self.peek() == "{":
            return self.aggregate()
        if self.kind() == "str":
            return self.string()
        if self.peek() == "-" and self.toks[self.pos + 1][0] in ("num", "ident"):
            self.next()
            value = self.constant()
            return -value if isinstance(value, int | float) else f"-{value}"
        tok = self.next()
        if self.toks[self.pos - 1][0] == "num":
            try:
                return int(tok, 0)
            except ValueError:
                return float(tok)
        return tok

    def aggregate(self) -> dict[str, Any]:
        self.expect("{")
        out: dict[str, Any] = {}
        while not self.accept("}"):
            name = self.ident()
            self.accept(":")
            if self.peek() == "[":
                self.next()
                values = []
                while not self.accept("]"):
                    values.append(self.constant())
                    self.accept(",")
                value: Any = values
            else:
                value = self.constant()
            if name in out:
                prev = out[name]
                out[name] = (prev if isinstance(prev, list) else [prev]) + (
                    value if isinstance(value, list) else [value]
                )
            else:
                out[name] = value
            if not self.accept(","):
                self.accept(";")
        return out

    def option_name(self) -> str:
        parts = []
        while True:
            if self.accept("("):
                parts.append("(" + self.ident().lstrip(".") + ")")
                self.expect(")")
            else:
                parts.append(self.ident())
            if self.peek().startswith(".") and self.kind() == "ident":
                parts.append(self.next().lstrip("."))
                continue
            if not self.accept("."):
                return ".".join(parts)

    def option_body(self) -> tuple[str, Any]:
        name = self.option_name()
        self.expect("=")
        return name, self.constant()

    # -- file -----------------------------------------------------------------------------
    def file(self) -> descriptor_pb2.FileDescriptorProto:
        proto = descriptor_pb2.FileDescriptorProto()
        while self.pos < len(self.toks):
            tok = self.next()
            if tok == ";":
                continue
            if tok == "syntax" or tok == "edition":
                self.expect("=")
                self.syntax = self.string()
                if tok == "edition" or self.syntax not in ("proto2", "proto3"):
                    raise ProtoSyntaxError(f"Unsupported syntax {self.syntax!r}")
                self.expect(";")
            elif tok == "package":
                proto.package = self.ident().lstrip(".")
                self.expect(";")
            elif tok == "import":
                kind = self.peek() if self.peek() in ("public", "weak") else ""
                if kind:
                    self.next()
                index = len(proto.dependency)
                proto.dependency.append(self.string())
                if kind == "public":
                    proto.public_dependency.append(index)
                elif kind == "weak":
                    proto.weak_dependency.append(index)
                self.expect(";")
            elif tok == "option":
                name, value = self.option_body()
                self.expect(";")
                if name in (
                    "java_package",
                    "go_package",
                    "java_outer_classname",
                    "csharp_namespace",
                ):
                    setattr(proto.options, name, str(value))
                elif name == "java_multiple_files":
                    proto.options.java_multiple_files = value is True or value == "true"
            elif tok == "message":
                self.message(proto.message_type.add())
            elif tok == "enum":
                self.enum(proto.enum_type.add())
            elif tok in ("service", "extend"):
                self.skip_block_from_brace()
            else:
                line = self.toks[self.pos - 1][2]
                raise ProtoSyntaxError(f"Unexpected {tok!r} at line {line}")
        if self.syntax == "proto3":
            proto.syntax = "proto3"
        return proto

    def skip_block_from_brace(self) -> None:
        while self.peek() != "{":
            self.next()
        self.skip_block()

    # -- messages -------------------------------------------------------------------------
    def message(self, msg: descriptor_pb2.DescriptorProto) -> None:
        msg.name = self.ident()
        self.expect("{")
        synthetic: list[descriptor_pb2.FieldDescriptorProto] = []
        while not self.accept("}"):
            tok = self.peek()
            if tok == ";":
                self.next()
            elif tok == "message":
                self.next()
                self.message(msg.nested_type.add())
            elif tok == "enum":
                self.next()
                self.enum(msg.enum_type.add())
            elif tok == "option":
                self.next()
                self.option_body()
                self.expect(";")
            elif tok == "reserved":
                self.next()
                self.reserved(msg.reserved_range, msg.reserved_name, exclusive_end=True)
            elif tok == "extensions":
                self.next()
                while not self.accept(";"):
                    self.next()
            elif tok == "extend":
                self.next()
                self.skip_block_from_brace()
            elif tok == "oneof":
                self.next()
                index = len(msg.oneof_decl)
                msg.oneof_decl.add(name=self.ident())
                self.expect("{")
                while not self.accept("}"):
                    if self.accept("option"):
                        self.option_body()
                        self.expect(";")
                    elif not self.accept(";"):
                        field = self.field(msg, None)
                        field.oneof_index = index
            elif tok == "map" and self.peek(1) == "<":
                self.map_field(msg)
            else:
                label = None
                if tok in ("repeated", "optional", "required"):
                    label = self.next()
                field = self.field(msg, label)
                if label == "optional" and self.syntax == "proto3":
                    field.proto3_optional = True
                    synthetic.append(field)
        for field in synthetic:  # synthetic oneofs follow the real ones, as protoc orders them
            field.oneof_index = len(msg.oneof_decl)
            msg.oneof_decl.add(name=_synthetic_name(msg, field.name))

    def field(
        self, msg: descriptor_pb2.DescriptorProto, label: str | None
    ) -> descriptor_pb2.FieldDescriptorProto:
        type_name = self.ident()
        if type_name == "group":
            raise ProtoSyntaxError("Protobuf groups are not supported")
        field = msg.field.add()
        field.name = self.ident()
        self.expect("=")
        field.number = self.integer()
        if not 0 < field.number <= _MAX_FIELD:
            raise ProtoSyntaxError(f"Invalid field number {field.number} for {field.name}")
        field.label = {"repeated": F.LABEL_REPEATED, "required": F.LABEL_REQUIRED}.get(
            label or "", F.LABEL_OPTIONAL
        )
        if type_name in SCALARS:
            field.type = SCALARS[type_name]
        else:
            field.type_name = type_name
        self.field_options(field)
        self.expect(";")
        return field

    def field_options(self, field: descriptor_pb2.FieldDescriptorProto) -> None:
        if not self.accept("["):
            return
        while True:
            name, value = self.option_body()
            if name == "default":
                field.default_value = str(value).lower() if isinstance(value, bool) else str(value)
            elif name == "packed":
                field.options.packed = value is True or value == "true"
            elif name == "deprecated":
                field.options.deprecated = value is True or value == "true"
            elif name == "json_name":
                field.json_name = str(value)
            elif name.startswith("(confluent.field_meta)"):
                set_field_meta(field.options, _meta_params(name, value))
            if not self.accept(","):
                break
        self.expect("]")

    def map_field(self, msg: descriptor_pb2.DescriptorProto) -> None:
        self.expect("map")
        self.expect("<")
        key_type = self.ident()
        self.expect(",")
        value_type = self.ident()
        self.expect(">")
        field = msg.field.add()
        field.name = self.ident()
        self.expect("=")
        field.number = self.integer()
        field.label = F.LABEL_REPEATED
        entry = msg.nested_type.add(name=_camel(field.name) + "Entry")
        entry.options.map_entry = True
        for name, number, type_name in (("key", 1, key_type), ("value", 2, value_type)):
            sub = entry.field.add(name=name, number=number, label=F.LABEL_OPTIONAL)
            if type_name in SCALARS:
                sub.type = SCALARS[type_name]
            else:
                sub.type_name = type_name
        field.type_name = entry.name
        field.type = F.TYPE_MESSAGE
        self.field_options(field)
        self.expect(";")

    def reserved(self, ranges: Any, names: Any, exclusive_end: bool) -> None:
        while True:
            if self.kind() == "str":
                names.append(self.string())
            else:
                start = self.integer()
                end = start
                if self.accept("to"):
                    end = _MAX_FIELD if self.accept("max") else self.integer()
                ranges.add(start=start, end=end + 1 if exclusive_end else end)
            if not self.accept(","):
                break
        self.expect(";")

    def enum(self, enum: descriptor_pb2.EnumDescriptorProto) -> None:
        enum.name = self.ident()
        self.expect("{")
        while not self.accept("}"):
            tok = self.peek()
            if tok == ";":
                self.next()
            elif tok == "option":
                self.next()
                name, value = self.option_body()
                if name == "allow_alias":
                    enum.options.allow_alias = value is True or value == "true"
                self.expect(";")
            elif tok == "reserved":
                self.next()
                self.reserved(enum.reserved_range, enum.reserved_name, exclusive_end=False)
            else:
                value = enum.value.add(name=self.ident())
                self.expect("=")
                value.number = self.integer()
                if self.accept("["):
                    while True:
                        self.option_body()
                        if not self.accept(","):
                            break
                    self.expect("]")
                self.expect(";")


def _synthetic_name(msg: descriptor_pb2.DescriptorProto, field: str) -> str:
    taken = {o.name for o in msg.oneof_decl} | {f.name for f in msg.field}
    name = "_" + field
    while name in taken:
        name = "X" + name
    return name


def _meta_params(name: str, value: Any) -> dict[str, str]:
    """The ``params`` of a ``(confluent.field_meta)`` option, written either as
    ``(confluent.field_meta) = { params: [{key: "k", value: "v"}] }`` or
    ``(confluent.field_meta).params = {key: "k", value: "v"}``."""
    if name.endswith(".params"):
        value = {"params": value}
    params = value.get("params", []) if isinstance(value, dict) else []
    if isinstance(params, dict):
        params = [params]
    return {str(p.get("key", "")): str(p.get("value", "")) for p in params if isinstance(p, dict)}


def parse_proto(text: str, name: str = "default.proto") -> descriptor_pb2.FileDescriptorProto:
    """``text`` parsed into a FileDescriptorProto named ``name`` (ProtoSyntaxError when it is
    not valid ``.proto`` source)."""
    proto = _Parser(text).file()
    proto.name = name
    return proto


def schema_file(text: str, name: str) -> descriptor_pb2.FileDescriptorProto:
    """A registry schema as a FileDescriptorProto named ``name``: ``.proto`` source, or the
    base64 serialized descriptor that Confluent's clients register."""
    stripped = text.strip()
    if stripped and not any(c in stripped for c in "{;"):
        try:
            proto = descriptor_pb2.FileDescriptorProto.FromString(
                base64.b64decode(stripped, validate=True)
            )
        except (binascii.Error, ValueError, DecodeError) as exc:
            raise ProtoSyntaxError(
                f"Invalid Protobuf schema: neither .proto text nor base64 ({exc})"
            ) from None
        proto.name = name
        return proto
    return parse_proto(text, name)
