"""Custom options no file defines, accepted and kept as Confluent keeps them.

    compiled = compile_without_unknown_options(files, sources, compile)   # or None

Confluent accepts `option (my.unknown) = true;` whatever defines `my.unknown`: its
validation (`ProtobufSchema.validate`, non-strict by default) normalises the schema,
which resolves option names where it can and keeps the others as written
(`FormatContext.filterOptions`), and its descriptors (`toDynamicSchema`) drop them. Its
own tests register undefined options on a message, a oneof and an enum
(RestApiTest.testCustomOption). protoc refuses them ("Option ... unknown").

So when protoc's only complaints are unknown options, the option statements
(`option (x) = ...;`, in a file, message, oneof, enum, service or method) whose name no
compiled file defines are blanked out, the files compiled again, and each blanked
statement put back into the source info where protoc would have recorded it, so the
stored text prints it as written (printer.py) while the descriptors leave it out, as
Confluent's do. Which options are undefined is decided on a compile with every custom
option statement blanked, by the names that compile defines (Symbols), not by protoc's
complaints: protoc names one unknown option per options block per run. That is three
compiles at most, only for schemas protoc refused. Options in brackets (`[(x) = 1]` on
fields and enum values) are not handled: those schemas are still refused.

Blanking replaces each character by spaces of its UTF-8 length (tabs and newlines kept),
so every position protoc reports for the blanked text is a position in the original.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from google.protobuf import descriptor_pb2

from registry.schema_types.protobuf.source import Span
from registry.schema_types.protobuf.symbols import FileProto, Symbols

_DIAGNOSTIC: Final = re.compile(r"^[^:\n]+:\d+:\d+: (?P<message>.*)$")
_UNKNOWN: Final = re.compile(r'Option "\([^"]*" unknown\.')

# Option statements, with comments and strings matched whole so that their contents are
# never taken for one. The alternatives are disjoint: one pass, linear in the text.
_STATEMENT_START: Final = re.compile(
    r"""
      //[^\n]*
    | /\*.*?(?:\*/|\Z)
    | "(?:[^"\\\n]|\\.)*"?
    | '(?:[^'\\\n]|\\.)*'?
    | (?<![\w.])option\s*\((?P<name>[^()"';{}]*)\)
    """,
    re.VERBOSE | re.DOTALL,
)
_STATEMENT_PART: Final = re.compile(
    r"""
      //[^\n]*
    | /\*.*?(?:\*/|\Z)
    | "(?:[^"\\\n]|\\.)*"?
    | '(?:[^'\\\n]|\\.)*'?
    | [{}\[\];]
    """,
    re.VERBOSE | re.DOTALL,
)
_SPACE: Final = re.compile(r"\s+|//[^\n]*|/\*.*?\*/", re.DOTALL)

# Where each kind of declaration keeps its options (descriptor.proto field numbers), and
# the declarations a SourceCodeInfo path passes through: (kind, field) -> (kind, attribute).
_OPTIONS_FIELD: Final = {"file": 8, "message": 7, "oneof": 2, "enum": 3, "service": 3, "method": 4}
_CHILDREN: Final = {
    ("file", 4): ("message", "message_type"), ("file", 5): ("enum", "enum_type"),
    ("file", 6): ("service", "service"), ("message", 3): ("message", "nested_type"),
    ("message", 4): ("enum", "enum_type"), ("message", 8): ("oneof", "oneof_decl"),
    ("service", 2): ("method", "method"),
}
_SCOPES: Final = frozenset({"message", "enum"})
"""Declarations whose name is part of the scope of the names inside them."""
_TAB: Final = 8


@dataclass(frozen=True)
class _Statement:
    """One `option (name)... ;` statement: character offsets, end exclusive."""

    start: int
    end: int
    name: str


def only_unknown_options(diagnostics: str) -> bool:
    """Whether every error protoc reported is an unknown option (warnings aside)."""
    errors = [match["message"] for line in diagnostics.splitlines()
              if (match := _DIAGNOSTIC.match(line)) and not match["message"].startswith("warning:")]
    return bool(errors) and all(_UNKNOWN.match(message) for message in errors)


def compile_without_unknown_options(
        files: Sequence[tuple[str, bytes]], sources: Mapping[str, str],
        compile: Callable[[list[tuple[str, bytes]]], descriptor_pb2.FileDescriptorSet | None],
) -> descriptor_pb2.FileDescriptorSet | None:
    """`files` compiled with the option statements no file defines left out of the
    descriptors but kept in the source info (see above); None if that does not compile
    either. `sources` is the text of each file that has options to look at (the schema
    and its references); `compile` answers None where protoc refuses.
    """
    statements = {name: found for name, text in sources.items() if (found := _statements(text))}
    if not statements:
        return None
    bare = compile(_blanked(files, sources, statements))
    if bare is None:
        return None  # something else is wrong too: protoc's first answer stands
    symbols = Symbols.of(bare.file)
    unknown: dict[str, list[_Statement]] = {}
    for file in bare.file:
        if file.name not in statements:
            continue
        text = sources[file.name]
        placed = _containers(file, text, statements[file.name])
        for statement, (path, scope) in zip(statements[file.name], placed):
            if symbols.resolve_extension(_compact(statement.name), scope) is None:
                unknown.setdefault(file.name, []).append(statement)
    if not unknown:
        return None
    compiled = compile(_blanked(files, sources, unknown))
    if compiled is None:
        return None
    for file in compiled.file:
        if file.name not in unknown:
            continue
        text = sources[file.name]
        positions = _Positions(text)
        for statement, (path, _) in zip(unknown[file.name], _containers(file, text, unknown[file.name])):
            location = file.source_code_info.location.add()
            location.path.extend([*path, _OPTIONS_FIELD[_kind(path) or "file"]])
            start, end = positions.at(statement.start), positions.at(statement.end)
            location.span.extend([*start, end[1]] if start[0] == end[0] else [*start, *end])
    return compiled


def _statements(text: str) -> list[_Statement]:
    """Every custom option statement in `text`, in order."""
    found = []
    for match in _STATEMENT_START.finditer(text):
        if match["name"] is None:
            continue
        end = _statement_end(text, match.end())
        if end is not None:
            found.append(_Statement(match.start(), end, match["name"]))
    return found


def _statement_end(text: str, position: int) -> int | None:
    """Just past the `;` that ends the statement going on at `position`."""
    depth = 0
    for match in _STATEMENT_PART.finditer(text, position):
        token = match.group()
        if token in "{[":
            depth += 1
        elif token in "}]":
            depth -= 1
            if depth < 0:
                return None
        elif token == ";" and depth == 0:
            return match.end()
    return None


def _compact(name: str) -> str:
    return _SPACE.sub("", name)


def _blanked(files: Sequence[tuple[str, bytes]], sources: Mapping[str, str],
             statements: Mapping[str, list[_Statement]]) -> list[tuple[str, bytes]]:
    out = []
    for name, data in files:
        if name in statements:
            text = sources[name]
            parts, at = [], 0
            for statement in statements[name]:
                parts.append(text[at:statement.start])
                parts.append("".join(c if c in "\n\t" else " " * len(c.encode("utf-8"))
                                     for c in text[statement.start:statement.end]))
                at = statement.end
            parts.append(text[at:])
            data = "".join(parts).encode("utf-8")
        out.append((name, data))
    return out


class _Positions:
    """protoc's (line, column) of character offsets asked for in increasing order: columns
    count UTF-8 bytes, a tab advancing to the next multiple of 8. Each character is read
    once however many offsets are asked for."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._offset = self._line = self._column = 0

    def at(self, offset: int) -> tuple[int, int]:
        text, column = self._text, self._column
        newline = text.rfind("\n", self._offset, offset)
        if newline >= 0:
            self._line += text.count("\n", self._offset, offset)
            start, column = newline + 1, 0
        else:
            start = self._offset
        for c in text[start:offset]:
            column += _TAB - column % _TAB if c == "\t" else len(c.encode("utf-8"))
        self._offset, self._column = offset, column
        return self._line, column


def _declarations(file: FileProto) -> Iterator[tuple[Span, tuple[int, ...]]]:
    """Span and path of every declaration that can hold option statements."""
    for location in file.source_code_info.location:
        path = tuple(location.path)
        if len(path) % 2 or _kind(path) is None:
            continue
        span = tuple(location.span)
        yield ((span[0], span[1], span[0], span[2]) if len(span) == 3 else span), path  # type: ignore[misc]


def _kind(path: Sequence[int]) -> str | None:
    kind = "file"
    for index in range(0, len(path), 2):
        child = _CHILDREN.get((kind, path[index]))
        if child is None:
            return None
        kind = child[0]
    return kind


def _containers(file: FileProto, text: str, statements: list[_Statement]
                ) -> list[tuple[tuple[int, ...], list[str]]]:
    """For each statement (in source order), the path of the innermost declaration around
    it and its name scope (package, then enclosing messages and enums). One sweep over
    the declarations sorted by where they start: they nest, so a stack holds the ones
    around the current position."""
    declarations = sorted(_declarations(file), key=lambda item: (item[0][:2], -item[0][2], -item[0][3]))
    stack: list[tuple[Span, tuple[int, ...]]] = []
    placed = []
    index = 0
    positions = _Positions(text)
    for statement in statements:
        where = positions.at(statement.start)
        while index < len(declarations) and declarations[index][0][:2] <= where:
            span, path = declarations[index]
            while stack and stack[-1][0][2:] < span[:2]:
                stack.pop()
            stack.append((span, path))
            index += 1
        while stack and stack[-1][0][2:] < where:
            stack.pop()
        path = stack[-1][1] if stack else ()
        placed.append((path, _scope(file, path)))
    return placed


def _scope(file: FileProto, path: tuple[int, ...]) -> list[str]:
    scope = file.package.split(".") if file.package else []
    kind, node = "file", file
    for index in range(0, len(path), 2):
        kind, attribute = _CHILDREN[(kind, path[index])]
        node = getattr(node, attribute)[path[index + 1]]
        if kind in _SCOPES:
            scope.append(node.name)
    return scope
