"""Protobuf compatibility: Confluent's rules (package `...protobuf.diff`) on descriptors.

    differences = compare(writer, reader)      # every Difference found
    [d for d in differences if not d.compatible]

Confluent compares an "original" schema with an "update": `new.isBackwardCompatible(old)`
diffs original=old against update=new, i.e. can the update read what the original
wrote. So in our reader/writer terms the original is the writer and the update the
reader, and `compare(writer, reader)` answers `reader.read_errors(writer)`.

The rules, as in Confluent's SchemaDiff/MessageSchemaDiff/FieldSchemaDiff/EnumSchemaDiff:
- the package must not change; a top-level or nested message must not disappear;
  moving one (a new index) is allowed, since a message index names a type only
  within its own schema id;
- fields are matched by number across the whole message, oneofs included: a field
  removed or added is fine unless it is `required`; a rename is fine;
- a field's kind (scalar, message, map) must not change; a scalar may change only
  within its wire-compatible group (int32/int64/uint32/uint64/bool/enum; sint32/sint64;
  string/bytes; fixed32/sfixed32; fixed64/sfixed64; float; double); a message field
  must keep its type's name (without package) and that type must itself be compatible;
- a numeric field may not switch between singular and repeated (string and bytes may);
- a oneof member must not disappear (unless the whole oneof goes), and fields that
  were independent must not become mutually exclusive in one oneof; leaving a oneof
  is fine; enum constants may be added, removed or renamed.

Deliberate differences from Confluent, each on the side of refusing data loss:
- Labels: Confluent compares labels as written, so proto3's unlabelled singular field
  turning `repeated` passes there; here a proto3 field without a label counts as
  optional, so a numeric field that turns repeated (packed on the wire, which a
  singular reader drops) is FIELD_NUMERIC_LABEL_CHANGED.
- Groups: Confluent's parser keeps proto2 groups apart from fields and never compares
  them; here a group is a message-typed field whose type is compared like any other,
  and a group turning into a message field (or back) is FIELD_KIND_CHANGED, as their
  wire types differ.

Bounded work: a (writer type, reader type) pair is compared once per check; met again,
only its verdict (whether it found anything incompatible) is reused. A pair met again
while it is being compared (recursive types) adds nothing there, since its own
comparison reports its differences. Every difference goes, once, into one ordered set
for the whole check: a pair's differences name paths under its own type, so they are
the same wherever the pair is met, and copying them into each field that reaches the
type (what this module did before) multiplied them by every path to it, k**d for d
levels of k fields each. Each step (a field, a oneof, a declared type) is counted
against a budget proportional to the schemas' sizes; past it, `TooMuchWork`.
"""
from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, NamedTuple, Protocol

from google.protobuf import descriptor_pb2

from registry.schema_types.protobuf.symbols import FieldProto, FileProto, MessageProto, Symbols

EnumProto = descriptor_pb2.EnumDescriptorProto


class DifferenceType(enum.Enum):
    """Confluent's Difference.Type, each marked compatible or not as in SchemaDiff."""

    PACKAGE_CHANGED = (False, "the package changed")
    MESSAGE_ADDED = (True, "the reader has a message type the writer does not")
    MESSAGE_REMOVED = (False, "the reader is missing a message type the writer has")
    MESSAGE_MOVED = (True, "the message type is at another position")
    ENUM_ADDED = (True, "the reader has an enum type the writer does not")
    ENUM_REMOVED = (True, "the reader is missing an enum type the writer has")
    ENUM_CONST_ADDED = (True, "the reader has an enum constant the writer does not")
    ENUM_CONST_CHANGED = (True, "the enum constant with this number has another name")
    ENUM_CONST_REMOVED = (True, "the reader is missing an enum constant the writer has")
    FIELD_ADDED = (True, "the reader has a field the writer does not")
    FIELD_REMOVED = (True, "the reader is missing a field the writer has")
    FIELD_NAME_CHANGED = (True, "the field with this number has another name")
    FIELD_KIND_CHANGED = (False, "the field's kind (scalar, message, map or group) differs "
                                 "between reader and writer")
    FIELD_SCALAR_KIND_CHANGED = (False, "the field's scalar type is not wire-compatible "
                                        "between reader and writer")
    FIELD_NAMED_TYPE_CHANGED = (False, "the field's message type differs, or is incompatible, "
                                       "between reader and writer")
    FIELD_NUMERIC_LABEL_CHANGED = (False, "the numeric field is repeated on one side and "
                                          "singular on the other")
    FIELD_STRING_OR_BYTES_LABEL_CHANGED = (True, "the string or bytes field is repeated on one "
                                                 "side and singular on the other")
    REQUIRED_FIELD_ADDED = (False, "the reader requires a field the writer does not have")
    REQUIRED_FIELD_REMOVED = (False, "the reader is missing a field the writer requires")
    ONEOF_ADDED = (True, "the reader has a oneof the writer does not")
    ONEOF_REMOVED = (True, "the reader is missing a oneof the writer has")
    ONEOF_FIELD_ADDED = (True, "the reader's oneof has a field the writer does not")
    ONEOF_FIELD_REMOVED = (False, "the reader is missing a field of the writer's oneof")
    ONEOF_FIELD_MOVED_TO_TOP_LEVEL = (True, "the writer's oneof field is outside any oneof "
                                            "in the reader")
    MULTIPLE_FIELDS_MOVED_TO_ONEOF = (False, "several fields that are independent in the "
                                             "writer share this oneof in the reader")
    FIELD_MOVED_TO_EXISTING_ONEOF = (False, "a field that is independent in the writer joined "
                                            "an existing oneof in the reader")

    def __init__(self, compatible: bool, description: str) -> None:
        self.compatible = compatible
        self.description = description


@dataclass(frozen=True)
class Difference:
    type: DifferenceType
    path: str
    """Confluent's path: '#/' then type names, oneof names and field numbers."""

    @property
    def compatible(self) -> bool:
        return self.type.compatible

    def message(self) -> str:
        """In Confluent's shape, `{errorType:"...", description:"..."}`."""
        return (f'{{errorType:"{self.type.name}", description:"At \'{self.path}\': '
                f'{self.type.description}"}}')


class Side(Protocol):
    """What the comparison needs from a parsed schema (ProtobufSchema provides it)."""

    @property
    def main(self) -> FileProto: ...

    @property
    def symbols(self) -> Symbols: ...

    @property
    def source_texts(self) -> Mapping[str, str]: ...

    @property
    def compat_tables(self) -> dict[str, _Table]:
        """A cache this module fills with each message's `_Table` (a plain dict, so
        concurrent checks at worst build a table twice)."""


# --- Field kinds -------------------------------------------------------------------------

_REQUIRED: Final = FieldProto.LABEL_REQUIRED
_KINDS: Final[Mapping[int, str]] = {FieldProto.TYPE_MESSAGE: "MESSAGE", FieldProto.TYPE_GROUP: "GROUP"}

_SCALAR_GROUPS: Final[Mapping[int, str]] = {
    FieldProto.TYPE_INT32: "GENERAL_NUMBER", FieldProto.TYPE_INT64: "GENERAL_NUMBER",
    FieldProto.TYPE_UINT32: "GENERAL_NUMBER", FieldProto.TYPE_UINT64: "GENERAL_NUMBER",
    FieldProto.TYPE_BOOL: "GENERAL_NUMBER", FieldProto.TYPE_ENUM: "GENERAL_NUMBER",
    FieldProto.TYPE_SINT32: "SIGNED_NUMBER", FieldProto.TYPE_SINT64: "SIGNED_NUMBER",
    FieldProto.TYPE_STRING: "STRING_OR_BYTES", FieldProto.TYPE_BYTES: "STRING_OR_BYTES",
    FieldProto.TYPE_FIXED32: "FIXED32", FieldProto.TYPE_SFIXED32: "FIXED32",
    FieldProto.TYPE_FIXED64: "FIXED64", FieldProto.TYPE_SFIXED64: "FIXED64",
    FieldProto.TYPE_FLOAT: "FLOAT", FieldProto.TYPE_DOUBLE: "DOUBLE",
}


class _Field(NamedTuple):
    """What the rules look at in a field (or a map's key or value), read once from its
    descriptor: plain attributes are much cheaper to compare than protobuf messages
    (a NamedTuple, as it is also much cheaper to build than a frozen dataclass)."""

    number: int
    name: str
    kind: str  # SCALAR, MAP, MESSAGE or GROUP
    scalar_group: str | None
    label: int | None  # FieldProto.LABEL_*, None where no label applies
    type_name: str  # full name without the leading dot; "" for scalars
    key: _Field | None = None
    value: _Field | None = None


@dataclass(frozen=True, slots=True)
class _Table:
    """A message's fields by number, the oneof of each member, each oneof's members.
    The synthetic oneof of a proto3 `optional` field is not a oneof."""

    by_tag: dict[int, _Field]
    oneof_of: dict[int, str]
    oneofs: dict[str, list[int]]


def _field(proto: FieldProto, symbols: Symbols, label: int | None) -> _Field:
    entry = symbols.map_entry(proto)
    if entry is not None:
        key, value = (_field(f, symbols, None) for f in entry.field[:2])
        return _Field(proto.number, proto.name, "MAP", None, label, "", key, value)
    field_type = proto.type
    return _Field(proto.number, proto.name, _KINDS.get(field_type, "SCALAR"),
                  _SCALAR_GROUPS.get(field_type), label, proto.type_name.lstrip("."))


def _table(side: Side, name: str) -> _Table:
    table = side.compat_tables.get(name)
    if table is not None:
        return table
    message = side.symbols.messages[name]
    by_tag: dict[int, _Field] = {}
    oneof_of: dict[int, str] = {}
    oneofs: dict[str, list[int]] = {}
    for proto in message.field:
        oneof = None
        if proto.HasField("oneof_index") and not proto.proto3_optional:
            oneof = message.oneof_decl[proto.oneof_index].name
            oneof_of[proto.number] = oneof
            oneofs.setdefault(oneof, []).append(proto.number)
        # No label inside a oneof (none can be written there); elsewhere the field's
        # label, proto3's implicit one counting as optional (see the module's notes).
        by_tag[proto.number] = _field(proto, side.symbols, None if oneof else proto.label)
    table = _Table(by_tag, oneof_of, oneofs)
    side.compat_tables[name] = table
    return table


# --- The comparison -----------------------------------------------------------------------


class TooMuchWork(Exception):
    """The comparison needed more steps than its budget allows."""


_UNLIMITED: Final = 1 << 62


class _Comparison:
    def __init__(self, writer: Side, reader: Side, budget: int) -> None:
        self.writer = writer
        self.reader = reader
        # Every difference once, in the order first found (a dict keeps insertion order):
        # the order Confluent's walk reports them in, duplicates dropped.
        self.found: dict[Difference, None] = {}
        self.verdicts: dict[tuple[str, str], bool] = {}
        """Per compared pair: whether it, or a type it reaches, is incompatible."""
        self.active: set[tuple[str, str]] = set()
        self.budget = budget
        self.spent = 0

    def spend(self, steps: int) -> None:
        self.spent += steps
        if self.spent > self.budget:
            raise TooMuchWork(self.budget)

    def add(self, kind: DifferenceType, path: str) -> bool:
        """Record a difference; True if it is incompatible."""
        self.found[Difference(kind, path)] = None
        return not kind.compatible

    def run(self) -> list[Difference]:
        writer_file, reader_file = self.writer.main, self.reader.main
        if writer_file.package != reader_file.package:
            self.add(DifferenceType.PACKAGE_CHANGED, "#/")
        self.types(writer_file.package, reader_file.package,
                   _declared(writer_file.message_type, ()), writer_file.enum_type,
                   _declared(reader_file.message_type, ()), reader_file.enum_type, [])
        return list(self.found)

    def types(self, writer_scope: str, reader_scope: str,
              writer_messages: Iterable[MessageProto], writer_enums: Iterable[EnumProto],
              reader_messages: Iterable[MessageProto], reader_enums: Iterable[EnumProto],
              path: list[str]) -> None:
        """Confluent's compareTypeElements: messages and enums matched by name."""
        old_messages = {m.name: (i, m) for i, m in enumerate(writer_messages)}
        new_messages = {m.name: (i, m) for i, m in enumerate(reader_messages)}
        names = sorted(old_messages.keys() | new_messages.keys())
        self.spend(len(names))
        for name in names:
            here = _path(*path, name)
            if name not in new_messages:
                self.add(DifferenceType.MESSAGE_REMOVED, here)
            elif name not in old_messages:
                self.add(DifferenceType.MESSAGE_ADDED, here)
            else:
                (old_index, old), (new_index, new) = old_messages[name], new_messages[name]
                writer_name, reader_name = _join(writer_scope, name), _join(reader_scope, name)
                self.message(writer_name, reader_name, [*path, name])
                self.types(writer_name, reader_name, _declared(old.nested_type, old.field),
                           old.enum_type, _declared(new.nested_type, new.field), new.enum_type,
                           [*path, name])
                if old_index != new_index:
                    self.add(DifferenceType.MESSAGE_MOVED, here)
        old_enums = {e.name: e for e in writer_enums}
        new_enums = {e.name: e for e in reader_enums}
        for name in sorted(old_enums.keys() | new_enums.keys()):
            here = [*path, name]
            if name not in new_enums:
                self.add(DifferenceType.ENUM_REMOVED, _path(*here))
            elif name not in old_enums:
                self.add(DifferenceType.ENUM_ADDED, _path(*here))
            else:
                old_enum, new_enum = old_enums[name], new_enums[name]
                self.spend(len(old_enum.value) + len(new_enum.value))
                for difference in _enum(old_enum, new_enum, here):
                    self.found[difference] = None

    def message(self, writer_name: str, reader_name: str, path: list[str]) -> bool:
        """Confluent's MessageSchemaDiff.compare of two messages' fields (not their nested
        types), with paths rooted at `path`; True if it found anything incompatible.
        Each pair is compared once per check: met again, its verdict is reused (its
        differences are in `found` already)."""
        pair = (writer_name, reader_name)
        known = self.verdicts.get(pair)
        if known is not None:
            return known
        if pair in self.active:
            return False  # recursive type: this pair's own comparison reports its differences
        self.active.add(pair)
        try:
            verdict = self._message(_table(self.writer, writer_name),
                                    _table(self.reader, reader_name), path)
        finally:
            self.active.discard(pair)
        self.verdicts[pair] = verdict
        return verdict

    def _message(self, old: _Table, new: _Table, path: list[str]) -> bool:
        add = self.add
        broken = False
        old_by_tag, old_oneof_of, old_oneofs = old.by_tag, old.oneof_of, old.oneofs
        new_by_tag, new_oneof_of, new_oneofs = new.by_tag, new.oneof_of, new.oneofs
        tags = sorted(old_by_tag.keys() | new_by_tag.keys())
        self.spend(1 + len(tags) + len(old_oneofs) + len(new_oneofs))

        deleted_oneofs = {name for name, members in old_oneofs.items()
                          if name not in new_oneofs and not any(t in new_by_tag for t in members)}
        for name, members in new_oneofs.items():
            origins: set[str] = set()
            moved_in = 0
            for tag in members:
                if tag in old_oneof_of:
                    origins.add("oneof:" + old_oneof_of[tag])
                elif tag in old_by_tag:
                    origins.add(f"field:{tag}")
                    moved_in += 1
            if len(origins) > 1:
                kind = (DifferenceType.MULTIPLE_FIELDS_MOVED_TO_ONEOF if moved_in > 1
                        else DifferenceType.FIELD_MOVED_TO_EXISTING_ONEOF)
                broken |= add(kind, _path(*path, name))
        for name in sorted(old_oneofs.keys() | new_oneofs.keys()):
            if name not in new_oneofs:
                broken |= add(DifferenceType.ONEOF_REMOVED, _path(*path, name))
            elif name not in old_oneofs:
                broken |= add(DifferenceType.ONEOF_ADDED, _path(*path, name))

        for tag in tags:
            old_field, new_field = old_by_tag.get(tag), new_by_tag.get(tag)
            old_oneof, new_oneof = old_oneof_of.get(tag), new_oneof_of.get(tag)
            if new_field is None:
                assert old_field is not None
                if old_oneof is not None:
                    if old_oneof not in deleted_oneofs:
                        broken |= add(DifferenceType.ONEOF_FIELD_REMOVED,
                                      _path(*path, old_oneof, str(tag)))
                else:
                    required = old_field.label == _REQUIRED
                    broken |= add(DifferenceType.REQUIRED_FIELD_REMOVED if required
                                  else DifferenceType.FIELD_REMOVED, _path(*path, str(tag)))
            elif old_field is None:
                if new_oneof is not None:
                    broken |= add(DifferenceType.ONEOF_FIELD_ADDED,
                                  _path(*path, new_oneof, str(tag)))
                else:
                    required = new_field.label == _REQUIRED
                    broken |= add(DifferenceType.REQUIRED_FIELD_ADDED if required
                                  else DifferenceType.FIELD_ADDED, _path(*path, str(tag)))
            else:
                if old_oneof is not None and new_oneof is None:
                    broken |= add(DifferenceType.ONEOF_FIELD_MOVED_TO_TOP_LEVEL,
                                  _path(*path, str(tag)))
                field_path = [*path, new_oneof, str(tag)] if new_oneof else [*path, str(tag)]
                if old_field.name != new_field.name:
                    broken |= add(DifferenceType.FIELD_NAME_CHANGED, _path(*field_path))
                broken |= self.typed(old_field, new_field, field_path)
        return broken

    def typed(self, old: _Field, new: _Field, path: list[str]) -> bool:
        """Confluent's compareLabelsAndTypes; True if it found anything incompatible."""
        if old.kind != new.kind:
            return self.add(DifferenceType.FIELD_KIND_CHANGED, _path(*path))
        if old.kind == "SCALAR":
            if old.scalar_group != new.scalar_group:
                return self.add(DifferenceType.FIELD_SCALAR_KIND_CHANGED, _path(*path))
            if old.label is not None and new.label is not None and old.label != new.label:
                kind = (DifferenceType.FIELD_STRING_OR_BYTES_LABEL_CHANGED
                        if old.scalar_group == "STRING_OR_BYTES"
                        else DifferenceType.FIELD_NUMERIC_LABEL_CHANGED)
                return self.add(kind, _path(*path))
            return False
        if old.kind == "MAP":
            assert old.key and old.value and new.key and new.value
            key_broken = self.typed(old.key, new.key, path)
            return self.typed(old.value, new.value, path) or key_broken
        return self.named(old, new, path)

    def named(self, old: _Field, new: _Field, path: list[str]) -> bool:
        """Confluent's compareMessageTypes: same name without package, compatible content."""
        old_name, new_name = old.type_name, new.type_name
        old_local = _local(old_name, self.writer.symbols.package_of.get(old_name, ""))
        new_local = _local(new_name, self.reader.symbols.package_of.get(new_name, ""))
        if old_local != new_local:
            return self.add(DifferenceType.FIELD_NAMED_TYPE_CHANGED, _path(*path))
        if _same_definition(self.writer, self.reader, old_name, new_name):
            return False  # one referenced file on both sides (Confluent: same subject and version)
        if self.message(old_name, new_name, old_local.split(".")):
            return self.add(DifferenceType.FIELD_NAMED_TYPE_CHANGED, _path(*path))
        return False


def compare(writer: Side, reader: Side, budget: int = _UNLIMITED) -> list[Difference]:
    """Every difference between `writer` (Confluent's original) and `reader` (its update),
    compatible ones included, each once, in the order Confluent's walk finds them.

    Each pair of message types is compared once, so time is linear in the fields of
    the pairs compared; raises TooMuchWork once more than `budget` steps (fields,
    oneofs, enum values, declared types) were needed."""
    return _Comparison(writer, reader, budget).run()


def _path(*parts: str) -> str:
    return "#/" + "/".join(parts)


def _join(scope: str, name: str) -> str:
    return f"{scope}.{name}" if scope else name


def _local(full_name: str, package: str) -> str:
    return full_name[len(package) + 1:] if package and full_name.startswith(package + ".") else full_name


def _declared(messages: Iterable[MessageProto], fields: Iterable[FieldProto]) -> list[MessageProto]:
    """The message types declared as such: not the synthetic entry types of map fields
    nor the types of groups among `fields` (Confluent's parser never sees those), so
    that indexes count as Confluent counts them."""
    groups = {f.type_name.rsplit(".", 1)[-1] for f in fields if f.type == FieldProto.TYPE_GROUP}
    return [m for m in messages if not m.options.map_entry and m.name not in groups]


def _enum(old: EnumProto, new: EnumProto, path: list[str]) -> list[Difference]:
    old_by_number = {value.number: value.name for value in old.value}
    new_by_number = {value.number: value.name for value in new.value}
    out = []
    for number in sorted(old_by_number.keys() | new_by_number.keys()):
        here = _path(*path, str(number))
        if number not in new_by_number:
            out.append(Difference(DifferenceType.ENUM_CONST_REMOVED, here))
        elif number not in old_by_number:
            out.append(Difference(DifferenceType.ENUM_CONST_ADDED, here))
        elif old_by_number[number] != new_by_number[number]:
            out.append(Difference(DifferenceType.ENUM_CONST_CHANGED, here))
    return out


def _same_definition(writer: Side, reader: Side, writer_name: str, reader_name: str) -> bool:
    """Whether both types come from one referenced file, byte for byte the same on both
    sides: Confluent then skips the comparison (same subject and version)."""
    writer_file = writer.symbols.file_of.get(writer_name)
    reader_file = reader.symbols.file_of.get(reader_name)
    if writer_file is None or writer_file != reader_file or writer_file == writer.main.name:
        return False
    # A file without source text on both sides is a well-known one, the same everywhere.
    return writer.source_texts.get(writer_file) == reader.source_texts.get(reader_file)
