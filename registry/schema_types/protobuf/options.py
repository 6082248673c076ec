"""Options as written: read from the source text of an option, printed as Confluent prints it.

protoc interprets options into descriptor fields, losing how they were written (the
order, `0x10` versus `16`, `(foo).bar = 1` versus `(foo) = {bar: 1}`). Confluent's stored
text keeps them as written, because it prints from Square Wire's syntax tree. So the
printer reads each option's text (located by protoc's source info) the way Wire's
`OptionReader` does and prints it the way Confluent's `ProtobufSchemaUtils` does.

Hand-written because no Python library reads .proto option syntax into Wire's model;
the input is always text protoc has already accepted, so this reader needs no error
recovery, only to stop cleanly (`OptionSyntaxError`) if it meets something unexpected.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Union


class Kind(enum.Enum):
    STRING = "STRING"
    BOOLEAN = "BOOLEAN"
    NUMBER = "NUMBER"
    ENUM = "ENUM"
    MAP = "MAP"
    LIST = "LIST"
    OPTION = "OPTION"


@dataclass(frozen=True)
class Primitive:
    """A boolean, number or enum value inside a map or list (Wire's OptionPrimitive)."""

    kind: Kind
    value: str


@dataclass(frozen=True)
class Option:
    """One option, `name = value` (Wire's OptionElement).

    `value` is a str for STRING (unescaped), BOOLEAN, NUMBER and ENUM (as written), a
    dict for MAP, a list for LIST and another Option for OPTION (`(a).b = 1`).
    """

    name: str
    kind: Kind
    value: Value
    parenthesized: bool = False


Value = Union[str, Primitive, dict, list, Option]


class OptionSyntaxError(ValueError):
    """The text is not option syntax this reader understands."""


_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


class _Reader:
    """Wire's SyntaxReader, reduced to what option text needs."""

    def __init__(self, text: str) -> None:
        self.data = text
        self.pos = 0

    def skip_space(self) -> None:
        data, pos = self.data, self.pos
        while pos < len(data):
            c = data[pos]
            if c in " \t\r\n\f\v":
                pos += 1
            elif data.startswith("//", pos):
                end = data.find("\n", pos)
                pos = len(data) if end < 0 else end + 1
            elif data.startswith("/*", pos):
                end = data.find("*/", pos + 2)
                pos = len(data) if end < 0 else end + 2
            else:
                break
        self.pos = pos

    def at_end(self) -> bool:
        self.skip_space()
        return self.pos >= len(self.data)

    def peek(self) -> str:
        self.skip_space()
        if self.pos >= len(self.data):
            raise OptionSyntaxError("unexpected end of option text")
        return self.data[self.pos]

    def take(self, c: str) -> bool:
        if self.peek() == c:
            self.pos += 1
            return True
        return False

    def read_char(self) -> str:
        c = self.peek()
        self.pos += 1
        return c

    def expect(self, c: str) -> None:
        if self.read_char() != c:
            raise OptionSyntaxError(f"expected {c!r}")

    def read_word(self, allow_dots: bool = True) -> str:
        self.skip_space()
        start = pos = self.pos
        data = self.data
        while pos < len(data) and (data[pos] in _WORD or (allow_dots and data[pos] == ".")):
            pos += 1
        if pos == start:
            raise OptionSyntaxError("expected a word")
        self.pos = pos
        return data[start:pos]

    def read_name(self, keep_wrap: bool = False, allow_dots: bool = True) -> str:
        c = self.peek()
        if c in "([":
            close = ")" if c == "(" else "]"
            self.pos += 1
            word = self.read_dotted()
            self.expect(close)
            return f"{c}{word}{close}" if keep_wrap else word
        return self.read_word(allow_dots)

    def read_dotted(self) -> str:
        """A possibly dotted name, whitespace between its parts ignored (protoc allows it)."""
        parts = [self.read_word(allow_dots=False) if self.peek() != "." else ""]
        while self.pos < len(self.data) and self.peek() == ".":
            self.pos += 1
            parts.append(self.read_word(allow_dots=False))
        return ".".join(parts)

    def read_string(self) -> str:
        """A quoted string, escapes decoded as Wire decodes them; adjacent strings join."""
        out: list[str] = []
        quote = self.read_char()
        data = self.data
        while True:
            if self.pos >= len(data):
                raise OptionSyntaxError("unterminated string")
            c = data[self.pos]
            self.pos += 1
            if c == quote:
                if self.pos < len(data) and not self.at_end() and self.peek() in "\"'":
                    quote = self.read_char()
                    continue
                return "".join(out)
            if c == "\\" and self.pos < len(data):
                c = data[self.pos]
                self.pos += 1
                simple = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
                if c in simple:
                    c = simple[c]
                elif c in "xX":
                    c = self._numeric_escape(16, 2)
                elif c in "01234567":
                    self.pos -= 1
                    c = self._numeric_escape(8, 3)
            out.append(c)

    def _numeric_escape(self, radix: int, length: int) -> str:
        value = -1
        end = min(self.pos + length, len(self.data))
        while self.pos < end:
            try:
                digit = int(self.data[self.pos], 16)
            except ValueError:
                break
            if digit >= radix:
                break
            value = digit if value < 0 else value * radix + digit
            self.pos += 1
        if value < 0:
            raise OptionSyntaxError("expected a digit after \\x")
        return chr(value)


def read_option_statement(text: str) -> Option:
    """`option name = value;` (or without `option`/`;`) as Wire reads it."""
    reader = _Reader(text)
    reader.skip_space()
    if text.startswith("option", reader.pos) and not (
            len(text) > reader.pos + 6 and text[reader.pos + 6] in _WORD):
        reader.pos += 6
    option = _read_option(reader, "=")
    reader.take(";")
    return option


def read_option_list(text: str) -> list[Option]:
    """`[a = 1, (b) = "x"]`, the options after a field or enum value, as Wire reads them."""
    reader = _Reader(text)
    reader.expect("[")
    options = []
    while True:
        options.append(_read_option(reader, "="))
        if reader.take("]"):
            return options
        if not reader.take(","):
            raise OptionSyntaxError("expected ',' or ']'")


def _read_option(reader: _Reader, separator: str) -> Option:
    first = reader.peek()
    parenthesized = first == "("
    name = reader.read_name()
    if first == "[":
        name = f"[{name}]"
    sub_names = []
    while True:
        c = reader.read_char()
        if c != ".":
            break
        sub_names.append(reader.read_name(keep_wrap=True, allow_dots=False))
    if separator == ":" and c == "{":
        reader.pos -= 1
    elif c != separator:
        raise OptionSyntaxError(f"expected {separator!r} in option")
    kind, value = _read_kind_and_value(reader)
    for sub_name in reversed(sub_names):
        wrapped = sub_name.startswith("(")
        value = Option(sub_name[1:-1] if wrapped else sub_name, kind, value, wrapped)
        kind = Kind.OPTION
    return Option(name, kind, value, parenthesized)


def _read_kind_and_value(reader: _Reader) -> tuple[Kind, Value]:
    peeked = reader.peek()
    if peeked == "{":
        return Kind.MAP, _read_map(reader)
    if peeked == "[":
        return Kind.LIST, _read_list(reader)
    if peeked in "\"'":
        return Kind.STRING, reader.read_string()
    if peeked.isdigit() or peeked == "-":
        return Kind.NUMBER, reader.read_word()
    word = reader.read_word()
    if word in ("true", "false"):
        return Kind.BOOLEAN, word
    return Kind.ENUM, word


def _primitive_or_value(kind: Kind, value: Value) -> Value:
    if kind in (Kind.BOOLEAN, Kind.ENUM, Kind.NUMBER):
        assert isinstance(value, str)
        return Primitive(kind, value)
    return value


def _read_map(reader: _Reader) -> dict:
    reader.expect("{")
    result: dict = {}
    while True:
        if reader.take("}"):
            return result
        option = _read_option(reader, ":")
        value = _primitive_or_value(option.kind, option.value)
        if isinstance(value, Option):
            nested = result.get(option.name)
            if not isinstance(nested, dict):
                nested = {}
                result[option.name] = nested
            nested[value.name] = value.value
        else:
            previous = result.get(option.name)
            if option.name not in result:
                result[option.name] = value
            elif isinstance(previous, list):
                previous.extend(value if isinstance(value, list) else [value])
            else:
                result[option.name] = [previous] + (value if isinstance(value, list) else [value])
        if not reader.take(","):
            reader.take(";")


def _read_list(reader: _Reader) -> list:
    reader.expect("[")
    result: list = []
    while True:
        if reader.take("]"):
            return result
        kind, value = _read_kind_and_value(reader)
        result.append(_primitive_or_value(kind, value))
        if reader.take(","):
            continue
        if reader.peek() != "]":
            raise OptionSyntaxError("expected ',' or ']'")


# --- Printing, as Confluent's ProtobufSchemaUtils prints Wire's model -------------------

_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
            "\v": "\\v", "\\": "\\\\", "'": "\\'", '"': '\\"'}


def escape(text: str) -> str:
    """Confluent's escapeChars: C escapes for control characters and quotes only."""
    return "".join(_ESCAPES.get(c, c) for c in text)


def indented(value: str) -> str:
    """Confluent's appendIndented: each line of `value` indented by two spaces.

    Mirrors Java's String.split("\\n"), which drops trailing empty strings.
    """
    lines = value.split("\n")
    while len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return "".join(f"  {line}\n" for line in lines)


def format_number(value: str) -> str:
    """Confluent's normalized number: Java's DecimalFormat without grouping (at most three
    decimals, half-even), after commons-lang's createNumber; unparseable text (inf, nan)
    is kept as written."""
    text = value.strip()
    try:
        negative = text.startswith("-")
        body = text[1:] if negative or text.startswith("+") else text
        if body[:2].lower() == "0x":
            number = Decimal(int(body[2:], 16))
        elif len(body) > 1 and body.startswith("0") and body.isdigit():
            number = Decimal(int(body, 8))
        else:
            number = Decimal(body.rstrip("fFdDlL") if not body.lower().startswith("0x") else body)
        if negative:
            number = -number
    except (InvalidOperation, ValueError, IndexError):
        return value
    if not number.is_finite():
        return value
    rounded = number.quantize(Decimal("0.001"), rounding=ROUND_HALF_EVEN)
    text = f"{rounded:f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    if text in ("-0",) and not negative:
        text = "0"
    return text


class OptionPrinter:
    """Prints options as Confluent does; `normalize` selects its normalized form."""

    def __init__(self, normalize: bool) -> None:
        self.normalize = normalize

    def option(self, option: Option) -> str:
        name = f"({option.name})" if option.parenthesized else option.name
        value = option.value
        kind = option.kind
        if kind is Kind.STRING:
            return f'{name} = "{escape(str(value))}"'
        if kind in (Kind.BOOLEAN, Kind.ENUM):
            return f"{name} = {value}"
        if kind is Kind.NUMBER:
            return f"{name} = {self.number(str(value))}"
        if kind is Kind.OPTION:
            assert isinstance(value, Option)
            return f"{name}.{self.option(value)}"
        if kind is Kind.MAP:
            assert isinstance(value, dict)
            return f"{name} = {{\n{self.map_entries(value)}}}"
        assert isinstance(value, list)
        return f"{name} = {self.option_list(value)}"

    def statement(self, option: Option) -> str:
        return f"option {self.option(option)};\n"

    def option_list(self, values: list) -> str:
        """Confluent's appendOptions: `[x]` for one value, else one per line."""
        if len(values) == 1:
            return f"[{self.value(values[0])}]"
        body = "".join(indented(self.value(v) + ("," if i < len(values) - 1 else ""))
                       for i, v in enumerate(values))
        return f"[\n{body}]"

    def map_entries(self, entries: dict) -> str:
        last = len(entries) - 1
        return "".join(indented(f"{key}: {self.value(value)}{',' if i != last else ''}")
                       for i, (key, value) in enumerate(entries.items()))

    def value(self, value: Value) -> str:
        if isinstance(value, str):
            return f'"{escape(value)}"'
        if isinstance(value, dict):
            return f"{{\n{self.map_entries(value)}}}"
        if isinstance(value, list):
            if self.normalize and len(value) == 1:
                return self.value(value[0])
            last = len(value) - 1
            body = "".join(indented(self.value(item) + ("," if i != last else ""))
                           for i, item in enumerate(value))
            return f"[\n{body}]"
        if isinstance(value, Primitive):
            if value.kind is Kind.NUMBER:
                return self.number(value.value)
            return value.value
        return self.option(value)

    def number(self, value: str) -> str:
        return format_number(value) if self.normalize else value


def transform(option: Option) -> Option:
    """Confluent's ProtobufSchema.transform: `(a).b.c = 1` becomes `(a) = {b: {c: 1}}`."""
    if option.kind is not Kind.OPTION:
        return option
    return Option(option.name, Kind.MAP, _as_map(option), option.parenthesized)


def _as_map(option: Option) -> dict:
    inner = option.value
    assert isinstance(inner, Option)
    value: Value = inner.value
    if inner.kind in (Kind.BOOLEAN, Kind.ENUM, Kind.NUMBER):
        assert isinstance(value, str)
        value = Primitive(inner.kind, value)
    elif inner.kind is Kind.OPTION:
        value = _as_map(inner)
    return {inner.name: value}


def merge_maps(existing: dict, replacement: dict) -> dict:
    """Two settings of one option message merged: nested messages deep-merged, any other
    key set twice (a repeated field) accumulates its distinct values in a list."""
    merged = dict(existing)
    for key, value in replacement.items():
        if key not in merged:
            merged[key] = value
        elif isinstance(merged[key], dict) and isinstance(value, dict):
            merged[key] = merge_maps(merged[key], value)
        else:
            items: list = []
            for part in (merged[key], value):
                for item in (part if isinstance(part, list) else [part]):
                    if item not in items:
                        items.append(item)
            merged[key] = items
    return merged
