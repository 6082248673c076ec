"""Descriptors to text: the canonical and normalized forms Confluent stores.

    canonical = print_schema(compiled.main, source, symbols, normalize=False)

Confluent stores `ProtobufSchema.canonicalString()`: the schema re-printed from Square
Wire's syntax tree by `ProtobufSchemaUtils.toString`. Comments and layout go; names,
option values and numbers stay as written; declarations are grouped by kind (a
message prints its reserved ranges, options, fields, oneofs, groups, extension ranges,
extends, nested messages, nested enums, in that order). We print the same text from
protoc's descriptors, taking what descriptors do not keep (a type written `Foo` or
`.pkg.Foo`, an option's spelling, whether a label was written) from the source text
through protoc's source info. `normalize=True` gives Confluent's `normalize=true` form
(`toNormalizedString`): type names fully qualified, fields ordered by number, imports,
options, reserved ranges and enum constants sorted, proto2's syntax line dropped.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from google.protobuf import descriptor_pb2

from registry.schema_types.protobuf.options import (
    Kind,
    Option,
    OptionPrinter,
    OptionSyntaxError,
    indented,
    merge_maps,
    read_option_list,
    read_option_statement,
    transform,
)
from registry.schema_types.protobuf.source import Path, Source, Span, contains
from registry.schema_types.protobuf.symbols import FieldProto, FileProto, MessageProto, Symbols

EnumProto = descriptor_pb2.EnumDescriptorProto

MAX_TAG_VALUE: Final = 536_870_911

SCALAR_NAMES: Final = {
    FieldProto.TYPE_DOUBLE: "double", FieldProto.TYPE_FLOAT: "float",
    FieldProto.TYPE_INT64: "int64", FieldProto.TYPE_UINT64: "uint64",
    FieldProto.TYPE_INT32: "int32", FieldProto.TYPE_FIXED64: "fixed64",
    FieldProto.TYPE_FIXED32: "fixed32", FieldProto.TYPE_BOOL: "bool",
    FieldProto.TYPE_STRING: "string", FieldProto.TYPE_BYTES: "bytes",
    FieldProto.TYPE_UINT32: "uint32", FieldProto.TYPE_SFIXED32: "sfixed32",
    FieldProto.TYPE_SFIXED64: "sfixed64", FieldProto.TYPE_SINT32: "sint32",
    FieldProto.TYPE_SINT64: "sint64",
}
_LABELS: Final = {FieldProto.LABEL_OPTIONAL: "optional", FieldProto.LABEL_REQUIRED: "required",
                  FieldProto.LABEL_REPEATED: "repeated"}
_NUMBER_TYPES: Final = frozenset(
    {"bytes", "double", "float", "fixed32", "fixed64", "int32", "int64", "sfixed32",
     "sfixed64", "sint32", "sint64", "uint32", "uint64"})
_SPACE: Final = re.compile(r"\s+|//[^\n]*|/\*.*?\*/", re.DOTALL)

# SourceCodeInfo field numbers (descriptor.proto).
_FILE_PACKAGE, _FILE_MESSAGES, _FILE_ENUMS, _FILE_SERVICES, _FILE_EXTENSIONS = 2, 4, 5, 6, 7
_FILE_OPTIONS, _FILE_SYNTAX = 8, 12
_MSG_FIELDS, _MSG_NESTED, _MSG_ENUMS, _MSG_EXT_RANGES, _MSG_EXTENSIONS = 2, 3, 4, 5, 6
_MSG_OPTIONS, _MSG_ONEOFS, _MSG_RESERVED, _MSG_RESERVED_NAMES = 7, 8, 9, 10
_FIELD_LABEL, _FIELD_TYPE, _FIELD_TYPE_NAME, _FIELD_EXTENDEE, _FIELD_OPTIONS = 4, 5, 6, 2, 8
_ENUM_VALUES, _ENUM_OPTIONS, _ENUM_RESERVED, _ENUM_RESERVED_NAMES = 2, 3, 4, 5
_VALUE_OPTIONS, _ONEOF_OPTIONS, _SERVICE_METHODS, _SERVICE_OPTIONS = 3, 2, 2, 3
_METHOD_INPUT, _METHOD_OUTPUT, _METHOD_OPTIONS = 2, 3, 4


def print_schema(file: FileProto, source: Source, symbols: Symbols, *, normalize: bool) -> str:
    """The text Confluent stores for `file` (canonical or normalized)."""
    return _Printer(file, source, symbols, normalize).file()


def _compact(text: str) -> str:
    """A type name as Wire reads it: whitespace and comments between its parts dropped."""
    return _SPACE.sub("", text)


class _Reserved:
    """One reserved (or extensions) value: a number, a range, or a name."""

    __slots__ = ("start", "end", "name", "single")

    def __init__(self, start: int = 0, end: int = 0, name: str | None = None, single: bool = False):
        self.start, self.end, self.name, self.single = start, end, name, single

    def sort_key(self) -> tuple[int, str]:
        if self.name is not None:
            return (2**31 - 1, self.name)
        return (self.start, str(self.start) if self.single else f"{self.start}..{self.end}")

    def text(self, normalize: bool) -> str:
        if self.name is not None:
            return f'"{self.name}"'
        if self.single or (normalize and self.start == self.end):
            return str(self.start)
        end = str(self.end) if self.end < MAX_TAG_VALUE else "max"
        return f"{self.start} to {end}"


class _Printer:
    def __init__(self, file: FileProto, source: Source, symbols: Symbols, normalize: bool) -> None:
        self.file_proto = file
        self.source = source
        self.symbols = symbols
        self.normalize = normalize
        self.options = OptionPrinter(normalize)
        self.package = file.package.split(".") if file.package else []

    # --- file --------------------------------------------------------------------------

    def file(self) -> str:
        file, out = self.file_proto, []
        if self.source.has((_FILE_SYNTAX,)) or file.syntax == "editions":
            if file.syntax == "editions":
                edition = descriptor_pb2.Edition.Name(file.edition).removeprefix("EDITION_")
                out.append(f'edition = "{edition}";\n')
            elif not self.normalize or file.syntax == "proto3":
                out.append(f'syntax = "{file.syntax or "proto2"}";\n')
        if file.HasField("package"):
            out.append(f"package {file.package};\n")
        public = set(file.public_dependency)
        imports = [d for i, d in enumerate(file.dependency) if i not in public]
        publics = [d for i, d in enumerate(file.dependency) if i in public]
        if imports or publics:
            if self.normalize:
                imports, publics = sorted(set(imports)), sorted(set(publics))
            out.append("\n")
            out += [f'import "{name}";\n' for name in imports]
            out += [f'import public "{name}";\n' for name in publics]
        options = self.statement_options((_FILE_OPTIONS,), self.package)
        if options:
            out.append("\n")
            out += [self.options.statement(option) for option in options]
        if file.message_type or file.enum_type:
            out.append("\n")
            out += [self.message(m, (_FILE_MESSAGES, i), self.package)
                    for i, m in enumerate(file.message_type)]
            out += [self.enum(e, (_FILE_ENUMS, i), self.package) for i, e in enumerate(file.enum_type)]
        if file.extension:
            out.append("\n")
            out += self.extends(file.extension, (_FILE_EXTENSIONS,), self.package)
        if file.service:
            out.append("\n")
            out += [self.service(s, (_FILE_SERVICES, i)) for i, s in enumerate(file.service)]
        return "".join(out)

    # --- options -----------------------------------------------------------------------

    def statement_options(self, path: Path, scope: Sequence[str]) -> list[Option]:
        """The `option x = y;` statements at `path`, read as Wire reads them."""
        options = []
        for _, text in self.source.texts(path):
            try:
                options.append(read_option_statement(text))
            except OptionSyntaxError:
                options.append(_raw_option(text))
        return self.filter_options(options, scope)

    def list_options(self, path: Path) -> list[Option]:
        """The `[a = 1, ...]` options of a field or enum value at `path`."""
        text = self.source.text(path)
        if text is None:
            return []
        try:
            return read_option_list(text)
        except OptionSyntaxError:
            return [_raw_option(text.strip()[1:-1])]

    def filter_options(self, options: list[Option], scope: Sequence[str]) -> list[Option]:
        """Confluent's FormatContext.filterOptions: in normalized form, custom option names
        fully qualified, options sorted by name, settings of one message option merged."""
        if not self.normalize or not options:
            return options
        qualified = []
        for option in options:
            if option.parenthesized:
                resolved = self.symbols.resolve_extension(option.name, scope)
                if resolved is not None:
                    option = transform(Option(resolved, option.kind, option.value, True))
            qualified.append(option)
        qualified.sort(key=lambda o: o.name)
        merged: list[Option] = []
        for option in qualified:
            extension = self.symbols.extensions.get(option.name)
            if (merged and merged[-1].name == option.name and extension is not None
                    and extension.label != FieldProto.LABEL_REPEATED):
                previous, option = merged.pop(), transform(option)
                if previous.kind is Kind.MAP and option.kind is Kind.MAP:
                    assert isinstance(previous.value, dict) and isinstance(option.value, dict)
                    option = Option(option.name, Kind.MAP, merge_maps(previous.value, option.value),
                                    option.parenthesized)
            merged.append(option)
        return [self.normalized_maps(option, scope) for option in merged]

    def normalized_maps(self, option: Option, scope: Sequence[str]) -> Option:
        """Map values in normalized form: keys sorted, empty lists dropped, extension keys
        ([name]) fully qualified."""
        if option.kind is not Kind.MAP:
            return option
        assert isinstance(option.value, dict)
        return Option(option.name, option.kind, self.normalized_map(option.value, scope),
                      option.parenthesized)

    def normalized_map(self, entries: dict, scope: Sequence[str]) -> dict:
        out = {}
        for key, value in entries.items():
            if isinstance(value, list) and not value:
                continue
            if key.startswith("[") and key.endswith("]"):
                resolved = self.symbols.resolve_extension(key[1:-1], scope)
                if resolved is not None:
                    key = f"[{resolved}]"
            if isinstance(value, dict):
                value = self.normalized_map(value, scope)
            elif isinstance(value, list):
                value = [self.normalized_map(v, scope) if isinstance(v, dict) else v for v in value]
            out.setdefault(key, value)
        return dict(sorted(out.items()))

    def appended_options(self, options: list[Option]) -> str:
        return f" {self.options.option_list(options)}" if options else ""

    # --- messages ----------------------------------------------------------------------

    def message(self, message: MessageProto, path: Path, scope: Sequence[str]) -> str:
        scope = [*scope, message.name]
        out = [f"message {message.name} {{"]
        reserved = self.reserved(path, (_MSG_RESERVED,), (_MSG_RESERVED_NAMES,),
                                 [(r.start, r.end - 1) for r in message.reserved_range],
                                 list(message.reserved_name))
        if reserved:
            out.append("\n")
            out += [indented(line) for line in reserved]
        options = self.statement_options((*path, _MSG_OPTIONS), scope)
        if options:
            out.append("\n")
            out += [indented(self.options.statement(option)) for option in options]
        real_oneofs = {i for i, f in enumerate(message.field)
                       if f.HasField("oneof_index") and not f.proto3_optional}
        group_types = {f.type_name.rsplit(".", 1)[-1] for f in message.field
                       if f.type == FieldProto.TYPE_GROUP}
        plain, groups = [], []
        for index, field in enumerate(message.field):
            if index in real_oneofs:
                continue
            (groups if field.type == FieldProto.TYPE_GROUP else plain).append((index, field))
        if plain:
            if self.normalize:
                plain.sort(key=lambda item: item[1].number)
            out.append("\n")
            out += [indented(self.field(f, (*path, _MSG_FIELDS, i), scope)) for i, f in plain]
        oneofs = self.oneofs(message, path, scope, real_oneofs)
        if oneofs:
            out.append("\n")
            out += [indented(text) for text in oneofs]
        if groups:
            if self.normalize:
                groups.sort(key=lambda item: item[1].number)
            out.append("\n")
            out += [indented(self.group(message, f, (*path, _MSG_FIELDS, i), path, scope))
                    for i, f in groups]
        extensions = self.reserved(path, (_MSG_EXT_RANGES,), None,
                                   [(r.start, r.end - 1) for r in message.extension_range], [],
                                   keyword="extensions")
        if extensions:
            out.append("\n")
            out += [indented(line) for line in extensions]
        if message.extension:
            out.append("\n")
            out += [indented(text) for text in
                    self.extends(message.extension, (*path, _MSG_EXTENSIONS), scope)]
        nested = [(i, m) for i, m in enumerate(message.nested_type)
                  if not m.options.map_entry and m.name not in group_types]
        if nested or message.enum_type:
            out.append("\n")
            out += [indented(self.message(m, (*path, _MSG_NESTED, i), scope)) for i, m in nested]
            out += [indented(self.enum(e, (*path, _MSG_ENUMS, i), scope))
                    for i, e in enumerate(message.enum_type)]
        out.append("}\n")
        return "".join(out)

    def oneofs(self, message: MessageProto, path: Path, scope: Sequence[str],
               members: set[int]) -> list[str]:
        by_oneof: dict[int, list[tuple[int, FieldProto]]] = {}
        for index in sorted(members):
            field = message.field[index]
            by_oneof.setdefault(field.oneof_index, []).append((index, field))
        entries = []
        for oneof_index, oneof in enumerate(message.oneof_decl):
            fields = by_oneof.get(oneof_index, [])
            if not fields:
                continue  # the synthetic oneof of a proto3 `optional` field (protoc has no empty oneofs)
            if self.normalize:
                fields = sorted(fields, key=lambda item: item[1].number)
            entries.append((fields[0][1].number, oneof_index, oneof, fields))
        if self.normalize:
            entries.sort(key=lambda entry: entry[0])
        texts = []
        for _, oneof_index, oneof, fields in entries:
            oneof_path = (*path, _MSG_ONEOFS, oneof_index)
            out = [f"oneof {oneof.name} {{"]
            options = self.statement_options((*oneof_path, _ONEOF_OPTIONS), scope)
            if options:
                out.append("\n")
                out += [indented(self.options.statement(option)) for option in options]
            plain = [(i, f) for i, f in fields if f.type != FieldProto.TYPE_GROUP]
            groups = [(i, f) for i, f in fields if f.type == FieldProto.TYPE_GROUP]
            if plain:
                out.append("\n")
                out += [indented(self.field(f, (*path, _MSG_FIELDS, i), scope)) for i, f in plain]
            if groups:
                out.append("\n")
                out += [indented(self.group(message, f, (*path, _MSG_FIELDS, i), path, scope))
                        for i, f in groups]
            out.append("}\n")
            texts.append("".join(out))
        return texts

    def group(self, message: MessageProto, field: FieldProto, field_path: Path,
              message_path: Path, scope: Sequence[str]) -> str:
        name = field.type_name.rsplit(".", 1)[-1]
        label = self.written_label(field, field_path)
        out = [f"{label + ' ' if label else ''}group {name} = {field.number} {{"]
        for index, nested in enumerate(message.nested_type):
            if nested.name != name:
                continue
            nested_path = (*message_path, _MSG_NESTED, index)
            fields = list(enumerate(nested.field))
            if self.normalize:
                fields.sort(key=lambda item: item[1].number)
            if fields:
                out.append("\n")
                out += [indented(self.field(f, (*nested_path, _MSG_FIELDS, i), [*scope, name]))
                        for i, f in fields]
            break
        out.append("}\n")
        return "".join(out)

    def written_label(self, field: FieldProto, path: Path) -> str | None:
        if not self.source.has((*path, _FIELD_LABEL)):
            return None
        return _LABELS[field.label]

    def field(self, field: FieldProto, path: Path, scope: Sequence[str]) -> str:
        entry = self.symbols.map_entry(field)
        label = self.written_label(field, path)
        if self.normalize:
            field_type = self.normalized_type(field, entry)
            if entry is not None:
                label = None
        else:
            field_type = self.written_type(field, path, entry)
        options = self.list_options((*path, _FIELD_OPTIONS))
        special: list[Option] = []
        plain: list[Option] = []
        default = json_name = None
        for option in options:
            if option.name == "default" and not option.parenthesized:
                default = option
            elif option.name == "json_name" and not option.parenthesized:
                json_name = option
            else:
                plain.append(option)
        if default is not None:
            special.append(Option("default", _default_kind(field_type), _plain_value(default)))
        if json_name is not None:
            special.append(Option("json_name", Kind.STRING, _plain_value(json_name)))
        all_options = self.filter_options(plain + special, scope)
        prefix = f"{label} " if label else ""
        return (f"{prefix}{field_type} {field.name} = {field.number}"
                f"{self.appended_options(all_options)};\n")

    def written_type(self, field: FieldProto, path: Path, entry: MessageProto | None) -> str:
        written = self.source.text((*path, _FIELD_TYPE_NAME)) or self.source.text((*path, _FIELD_TYPE))
        if written is None:
            return self.normalized_type(field, entry)
        written = _compact(written)
        if entry is not None and written.startswith("map<") and "," in written:
            key, value = written[4:-1].split(",", 1)
            return f"map<{key}, {value}>"
        return written

    def normalized_type(self, field: FieldProto, entry: MessageProto | None) -> str:
        if entry is not None:
            key, value = entry.field[0], entry.field[1]
            return f"map<{self.normalized_type(key, None)}, {self.normalized_type(value, None)}>"
        if field.type in SCALAR_NAMES:
            return SCALAR_NAMES[field.type]
        return field.type_name

    # --- enums, extends, services, reserved ----------------------------------------------

    def enum(self, enum: EnumProto, path: Path, scope: Sequence[str]) -> str:
        scope = [*scope, enum.name]
        out = [f"enum {enum.name} {{"]
        reserved = self.reserved(path, (_ENUM_RESERVED,), (_ENUM_RESERVED_NAMES,),
                                 [(r.start, r.end) for r in enum.reserved_range],
                                 list(enum.reserved_name))
        if reserved:
            out.append("\n")
            out += [indented(line) for line in reserved]
        options = self.statement_options((*path, _ENUM_OPTIONS), scope)
        if not reserved and (options or enum.value):
            out.append("\n")
        out += [indented(self.options.statement(option)) for option in options]
        values = list(enumerate(enum.value))
        if self.normalize:
            values.sort(key=lambda item: (item[1].number, item[1].name))
        for index, value in values:
            value_options = self.filter_options(
                self.list_options((*path, _ENUM_VALUES, index, _VALUE_OPTIONS)), scope)
            out.append(indented(f"{value.name} = {value.number}"
                                f"{self.appended_options(value_options)};\n"))
        out.append("}\n")
        return "".join(out)

    def extends(self, fields: Sequence[FieldProto], path: Path, scope: Sequence[str]) -> list[str]:
        """`extend X { ... }` blocks: as written (one per block), or in normalized form one
        per extended type, in order of first appearance."""
        blocks: list[tuple[str, list[tuple[int, FieldProto]]]] = []
        statements = [span for span, _ in self.source.texts(path)]
        by_block: dict[object, int] = {}
        for index, field in enumerate(fields):
            field_path = (*path, index)
            if self.normalize:
                key: object = field.extendee
                name = field.extendee
            else:
                spans = self.source.spans(field_path)
                key = next((s for s in statements if spans and contains(s, spans[0])), index)
                name = _compact(self.source.text((*field_path, _FIELD_EXTENDEE)) or field.extendee)
            if key not in by_block:
                by_block[key] = len(blocks)
                blocks.append((name, []))
            blocks[by_block[key]][1].append((index, field))
        texts = []
        for name, members in blocks:
            if self.normalize:
                members.sort(key=lambda item: item[1].number)
            body = "".join(indented(self.field(f, (*path, i), scope)) for i, f in members)
            texts.append(f"extend {name} {{\n{body}}}\n")
        return texts

    def service(self, service: descriptor_pb2.ServiceDescriptorProto, path: Path) -> str:
        out = [f"service {service.name} {{"]
        options = self.statement_options((*path, _SERVICE_OPTIONS), self.package)
        if options:
            out.append("\n")
            out += [indented(self.options.statement(option)) for option in options]
        if service.method:
            out.append("\n")
        for index, method in enumerate(service.method):
            method_path = (*path, _SERVICE_METHODS, index)
            if self.normalize:
                request, response = method.input_type, method.output_type
            else:
                request = _compact(self.source.text((*method_path, _METHOD_INPUT)) or method.input_type)
                response = _compact(self.source.text((*method_path, _METHOD_OUTPUT)) or method.output_type)
            text = (f"rpc {method.name} ({'stream ' if method.client_streaming else ''}{request}) "
                    f"returns ({'stream ' if method.server_streaming else ''}{response})")
            method_options = self.statement_options((*method_path, _METHOD_OPTIONS), self.package)
            if method_options:
                text += " {\n" + "".join(indented(self.options.statement(o)) for o in method_options) + "}"
            out.append(indented(text + ";\n"))
        out.append("}\n")
        return "".join(out)

    def reserved(self, path: Path, ranges_at: Path, names_at: Path | None,
                 ranges: list[tuple[int, int]], names: list[str], keyword: str = "reserved"
                 ) -> list[str]:
        """`reserved`/`extensions` statements: as written, or in normalized form one value
        per statement, sorted. `ranges` are (first, last) inclusive."""
        statements: list[tuple[Span, list[_Reserved]]] = [
            (span, []) for span, _ in self.source.texts((*path, *ranges_at))]
        if names_at is not None:
            statements += [(span, []) for span, _ in self.source.texts((*path, *names_at))]
        statements.sort(key=lambda item: item[0])
        loose: list[_Reserved] = []

        def place(value: _Reserved, value_path: Path) -> None:
            spans = self.source.spans(value_path)
            for span, members in statements:
                if spans and contains(span, spans[0]):
                    members.append(value)
                    return
            loose.append(value)

        for index, (first, last) in enumerate(ranges):
            value_path = (*path, *ranges_at, index)
            written = self.source.text(value_path) or ""
            place(_Reserved(first, last, single=" to " not in f" {_SPACE.sub(' ', written)} "),
                  value_path)
        if names_at is not None:
            for index, name in enumerate(names):
                place(_Reserved(name=name), (*path, *names_at, index))
        groups = [members for _, members in statements if members] + ([loose] if loose else [])
        if self.normalize:
            values = sorted((v for group in groups for v in group), key=_Reserved.sort_key)
            return [f"{keyword} {value.text(True)};\n" for value in values]
        return [f"{keyword} {', '.join(v.text(False) for v in group)};\n" for group in groups]


def _raw_option(text: str) -> Option:
    """An option this reader could not read: kept as written, whitespace collapsed."""
    body = " ".join(text.split()).removeprefix("option ").removesuffix(";").strip()
    name, _, value = body.partition("=")
    return Option(name.strip(), Kind.ENUM, value.strip())


def _plain_value(option: Option) -> str:
    value = option.value
    return value if isinstance(value, str) else str(value)


def _default_kind(field_type: str) -> Kind:
    """Confluent's toKind: how a field's default is printed, by the field's type name."""
    simple = field_type.rsplit(".", 1)[-1]
    if simple == "bool":
        return Kind.BOOLEAN
    if simple == "string":
        return Kind.STRING
    if simple in _NUMBER_TYPES:
        return Kind.NUMBER
    return Kind.ENUM
