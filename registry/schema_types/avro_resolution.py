"""Avro schema resolution: whether a reader schema can read what a writer schema wrote
(the Avro specification's "Schema Resolution", as Avro Java's `SchemaCompatibility`
decides it), the check behind every compatibility level."""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Final

from registry.schema_types.avro_tree import (
    NAMED_TYPES,
    NO_DEFAULT,
    ArraySchema,
    EnumSchema,
    Field,
    FixedSchema,
    MapSchema,
    NamedSchema,
    Node,
    PrimitiveSchema,
    RecordSchema,
    UnionSchema,
)


def read_problems(reader: Node, writer: Node) -> list[tuple[str, str]]:
    """Why `reader` cannot read data written with `writer`: (path in the reader, reason)
    pairs; empty means it can."""
    return _Resolution().check(reader, writer)


# Writer type -> reader types that can read it (Avro spec, "Schema Resolution").
_PROMOTIONS: Final = frozenset(
    {("int", "long"), ("int", "float"), ("int", "double"), ("long", "float"),
     ("long", "double"), ("float", "double"), ("string", "bytes"), ("bytes", "string")}
)


def _describe(node: Node) -> str:
    fullname = getattr(node, "fullname", None)
    return f"{node.kind} {fullname!r}" if fullname else repr(node.kind)


def _names_match(reader: NamedSchema, writer: NamedSchema) -> bool:
    """Avro Java's SchemaCompatibility.schemaNameEquals: unqualified names are equal,
    or a reader alias is the writer's full name."""
    return reader.name == writer.name or writer.fullname in reader.aliases


Problems = list[tuple[str, str]]
"""(path relative to the node checked, reason) pairs."""

# Writer type -> the reader types it can be promoted to.
_PROMOTED_TO: Final[Mapping[str, tuple[str, ...]]] = {
    writer: tuple(reader for w, reader in sorted(_PROMOTIONS) if w == writer)
    for writer in {w for w, _ in _PROMOTIONS}
}


class _BranchIndex:
    """A reader union's branches by what resolution would try them for (same type,
    same name for named types, or a promotion), so finding
    the candidates for one writer type is a few dict lookups, not a scan: a union
    checked against a union stays linear in their sizes."""

    def __init__(self, union: UnionSchema) -> None:
        self.by_kind: dict[str, list[tuple[int, Node]]] = {}
        self.by_name: dict[tuple[str, str], list[tuple[int, Node]]] = {}
        for position, branch in enumerate(union.branches):
            if isinstance(branch, NAMED_TYPES):
                self.by_name.setdefault((branch.kind, branch.name), []).append((position, branch))
                for alias in branch.aliases:
                    self.by_name.setdefault((branch.kind, alias), []).append((position, branch))
            else:
                self.by_kind.setdefault(branch.kind, []).append((position, branch))

    def candidates(self, writer: Node) -> list[tuple[int, Node]]:
        """Branches resolution would try for `writer`, in branch order."""
        if isinstance(writer, NAMED_TYPES):
            found = self.by_name.get((writer.kind, writer.name), []) + \
                self.by_name.get((writer.kind, writer.fullname), [])
        else:
            found = list(self.by_kind.get(writer.kind, ()))
            for reader_kind in _PROMOTED_TO.get(writer.kind, ()):
                found += self.by_kind.get(reader_kind, ())
        if len(found) < 2:
            return found
        unique = {position: branch for position, branch in found}
        return sorted(unique.items(), key=lambda item: item[0])


class _Resolution:
    """Checks whether a reader tree can read data written with a writer tree.

    Hand-written: fastavro resolves schemas only while decoding data and has no
    compatibility checker. Rules are the Avro spec's "Schema Resolution", checked the
    way Avro Java's SchemaCompatibility checks them. Paths are locations in the
    reader schema.

    Recursive types: a (reader record, writer record) pair already being checked
    further up is assumed compatible (its own check reports any problem). Results
    for record pairs are memoized, so a type used many times is checked once: a
    problem found is always real, while "no problems" is memoized only if it did
    not lean on such an assumption about a pair further up.
    """

    def __init__(self) -> None:
        self.memo: dict[tuple[int, int], Problems] = {}
        self.branch_indexes: dict[int, _BranchIndex] = {}  # id(reader union) -> its index
        self.active: dict[tuple[int, int], int] = {}  # pair -> depth on the check stack
        self.leaned_on = math.inf  # shallowest active depth assumed compatible

    def check(self, reader: Node, writer: Node) -> Problems:
        if reader is writer:
            return []
        if isinstance(writer, UnionSchema):
            return self.writer_union(reader, writer)
        if isinstance(reader, UnionSchema):
            return self.reader_union(reader, writer)
        if reader.kind != writer.kind:
            if (writer.kind, reader.kind) in _PROMOTIONS:
                return []
            return [("", f"reader type {_describe(reader)} cannot read writer type {_describe(writer)}")]
        # From here on both sides are of the same kind.
        if isinstance(reader, PrimitiveSchema):
            return []
        if isinstance(reader, ArraySchema) and isinstance(writer, ArraySchema):
            return _under("/items", self.check(reader.items, writer.items))
        if isinstance(reader, MapSchema) and isinstance(writer, MapSchema):
            return _under("/values", self.check(reader.values, writer.values))
        assert isinstance(reader, NAMED_TYPES) and isinstance(writer, NAMED_TYPES)
        if not _names_match(reader, writer):
            return [("", f"reader {reader.kind} {reader.fullname!r} does not match writer "
                         f"{writer.kind} {writer.fullname!r}: names differ and no reader "
                         f"alias names the writer type")]
        if isinstance(reader, FixedSchema) and isinstance(writer, FixedSchema):
            if reader.size != writer.size:
                return [("", f"reader fixed {reader.fullname!r} has size {reader.size} "
                             f"but writer fixed has size {writer.size}")]
            return []
        if isinstance(reader, EnumSchema) and isinstance(writer, EnumSchema):
            return _enum_problems(reader, writer)
        assert isinstance(reader, RecordSchema) and isinstance(writer, RecordSchema)
        return self.record(reader, writer)

    def writer_union(self, reader: Node, writer: UnionSchema) -> Problems:
        """Every writer branch may have been written, so each must be readable."""
        problems: Problems = []
        for index, branch in enumerate(writer.branches):
            for path, reason in self.check(reader, branch):
                problems.append((path, f"writer union branch {index}: {reason}"))
        return problems

    def reader_union(self, reader: UnionSchema, writer: Node) -> Problems:
        """Some reader branch must be able to read the (non-union) writer."""
        index = self.branch_indexes.get(id(reader))
        if index is None:
            index = self.branch_indexes[id(reader)] = _BranchIndex(reader)
        candidates = index.candidates(writer)
        for _, branch in candidates:
            if not self.check(branch, writer):
                return []
        if candidates:  # explain why the closest branch fails (results are memoized)
            position, branch = candidates[0]
            return _under(f"/{position}", self.check(branch, writer))
        return [("", f"no branch of the reader union can read writer type {_describe(writer)}")]

    def record(self, reader: RecordSchema, writer: RecordSchema) -> Problems:
        pair = (id(reader), id(writer))
        known = self.memo.get(pair)
        if known is not None:
            return known
        depth = self.active.get(pair)
        if depth is not None:
            self.leaned_on = min(self.leaned_on, depth)
            return []
        depth = len(self.active)
        self.active[pair] = depth
        outer_leaned_on, self.leaned_on = self.leaned_on, math.inf
        problems: Problems = []
        for index, reader_field in enumerate(reader.fields):
            writer_field = _writer_field(reader_field, writer)
            if writer_field is not None:
                found = self.check(reader_field.type, writer_field.type)
                problems += _under(f"/fields/{index}/type", found)
            elif reader_field.default is NO_DEFAULT:
                problems.append((f"/fields/{index}", f"reader field {reader_field.name!r} is "
                                 f"missing from the writer record and has no default"))
        del self.active[pair]
        if problems or self.leaned_on >= depth:
            self.memo[pair] = problems
        self.leaned_on = min(outer_leaned_on, self.leaned_on)
        return problems


def _writer_field(reader_field: Field, writer: RecordSchema) -> Field | None:
    """The writer field a reader field reads: same name, else one of its aliases."""
    found = writer.fields_by_name.get(reader_field.name)
    if found is None:
        for alias in reader_field.aliases:
            found = writer.fields_by_name.get(alias)
            if found is not None:
                break
    return found


def _enum_problems(reader: EnumSchema, writer: EnumSchema) -> Problems:
    missing = [symbol for symbol in writer.symbols if symbol not in reader.symbol_set]
    if not missing or reader.default is not None:
        return []  # a reader default stands in for unknown symbols
    return [("", f"writer enum symbols {missing} are missing from reader enum "
                 f"{reader.fullname!r}, which has no default")]


def _under(prefix: str, problems: Problems) -> Problems:
    return [(prefix + path, reason) for path, reason in problems] if problems else problems
