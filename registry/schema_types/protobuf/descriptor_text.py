"""A FileDescriptorProto back to .proto text, for schemas that exist only as descriptors.

    text = proto_text(message_class.DESCRIPTOR.file)   # or a FileDescriptorProto
    PROTOBUF.parse(text, references)                    # compiles to the same descriptor

Two callers need it: the Protobuf serializer registers a generated message class's
file (which carries no source text), and the registry accepts the base64
FileDescriptorProto that confluent-kafka's serializers register, as Confluent's
registry does (it prints such a descriptor to text through Wire; we print it here).
Written by hand because neither the protobuf runtime nor protoc (from Python)
prints descriptors as .proto text (C++'s `FileDescriptor::DebugString` is not
exposed), and `printer.py` prints from source info, which a descriptor may lack.

Types are printed fully qualified (`.pkg.Msg`), so the text needs no scope
resolution to compile to the same descriptor. Custom options (extensions of
google.protobuf.*Options) and proto2 groups are not printed: `DescriptorText`
raises for groups, and custom options are dropped (they change no wire format).
Editions files are refused. Work and output are linear in the descriptor's size;
nesting is walked with Python recursion, bounded by protoc's own limit of 32 levels.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from google.protobuf import descriptor_pb2, text_format
from google.protobuf.descriptor import FieldDescriptor, FileDescriptor

FileProto = descriptor_pb2.FileDescriptorProto
MessageProto = descriptor_pb2.DescriptorProto
FieldProto = descriptor_pb2.FieldDescriptorProto
EnumProto = descriptor_pb2.EnumDescriptorProto

_MAX_FIELD: Final = 536_870_911
_MAX_NESTING: Final = 100

_SCALARS: Final = {
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
# Options with syntax of their own, printed elsewhere or implied.
_IMPLIED_OPTIONS: Final = frozenset({"map_entry"})


class DescriptorText(ValueError):
    """The descriptor uses something this printer cannot express (groups, editions)."""


def proto_text(file: FileProto | FileDescriptor) -> str:
    """`file` as .proto text that protoc compiles back to an equivalent descriptor.

    Raises DescriptorText for an editions file or a proto2 group.
    """
    if isinstance(file, FileDescriptor):
        proto = FileProto()
        file.CopyToProto(proto)
        file = proto
    return _Printer(file).file()


def _quote(value: str | bytes) -> str:
    raw = value.encode("utf-8") if isinstance(value, str) else value
    out = []
    for byte in raw:
        char = chr(byte)
        if char in "\"\\":
            out.append("\\" + char)
        elif 0x20 <= byte < 0x7F:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _option_value(field: Any, value: Any) -> str:
    if field.type == FieldDescriptor.TYPE_BOOL:
        return "true" if value else "false"
    if field.type == FieldDescriptor.TYPE_ENUM:
        return field.enum_type.values_by_number[value].name
    if field.type in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES):
        return _quote(value)
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return "{ " + text_format.MessageToString(value, as_one_line=True) + " }"
    return repr(value) if isinstance(value, float) else str(value)


def _options(options: Any) -> list[tuple[str, str]]:
    """(name, value) of each standard option set; custom options (extensions) dropped."""
    out = []
    for field, value in options.ListFields():
        if field.is_extension or field.name in _IMPLIED_OPTIONS:
            continue
        if field.name in ("uninterpreted_option", "features"):
            continue  # protoc's own bookkeeping, and editions features (editions are refused)
        for item in value if field.is_repeated else (value,):
            out.append((field.name, _option_value(field, item)))
    return out


def _camel(name: str) -> str:
    """protoc's default json_name for a field name."""
    out, upper = [], False
    for char in name:
        if char == "_":
            upper = True
        elif upper:
            out.append(char.upper())
            upper = False
        else:
            out.append(char)
    return "".join(out)


class _Printer:
    def __init__(self, file: FileProto) -> None:
        if file.syntax == "editions":
            raise DescriptorText("editions files are not supported")
        self.file_proto = file
        self.proto3 = file.syntax == "proto3"
        self.entries: dict[str, MessageProto] = {}
        package = f".{file.package}" if file.package else ""
        self._collect_entries(file.message_type, package)

    def _collect_entries(self, messages: Iterable[MessageProto], scope: str) -> None:
        pending = [(m, scope) for m in messages]
        while pending:
            message, outer = pending.pop()
            name = f"{outer}.{message.name}"
            if message.options.map_entry:
                self.entries[name] = message
            pending.extend((nested, name) for nested in message.nested_type)

    def file(self) -> str:
        file = self.file_proto
        out = [f'syntax = "{file.syntax or "proto2"}";\n']
        if file.package:
            out.append(f"package {file.package};\n")
        public, weak = set(file.public_dependency), set(file.weak_dependency)
        for index, name in enumerate(file.dependency):
            kind = "public " if index in public else "weak " if index in weak else ""
            out.append(f"import {kind}{_quote(name)};\n")
        out += [f"option {name} = {value};\n" for name, value in _options(file.options)]
        out += [self.message(m, 0) for m in file.message_type]
        out += [self.enum(e) for e in file.enum_type]
        out += self.extends(file.extension, 0)
        out += [self.service(s) for s in file.service]
        return "".join(out)

    def message(self, message: MessageProto, depth: int) -> str:
        if depth > _MAX_NESTING:
            raise DescriptorText("messages nested too deeply")
        out = [f"message {message.name} {{\n"]
        out += [f"option {name} = {value};\n" for name, value in _options(message.options)]
        printed_oneofs: set[int] = set()
        for field in message.field:
            if field.HasField("oneof_index") and not field.proto3_optional:
                index = field.oneof_index
                if index in printed_oneofs:
                    continue
                printed_oneofs.add(index)
                members = [f for f in message.field
                           if f.HasField("oneof_index") and f.oneof_index == index]
                decl = message.oneof_decl[index]
                body = [f"option {n} = {v};\n" for n, v in _options(decl.options)]
                body += [self.field(f, in_oneof=True) for f in members]
                out.append(f"oneof {decl.name} {{\n{''.join(body)}}}\n")
            else:
                out.append(self.field(field))
        out += [self.message(m, depth + 1) for m in message.nested_type if not m.options.map_entry]
        out += [self.enum(e) for e in message.enum_type]
        out += self.extends(message.extension, depth + 1)
        for extension_range in message.extension_range:
            out.append(f"extensions {self.range(extension_range.start, extension_range.end - 1)};\n")
        for reserved in message.reserved_range:
            out.append(f"reserved {self.range(reserved.start, reserved.end - 1)};\n")
        if message.reserved_name:
            out.append(f"reserved {', '.join(_quote(n) for n in message.reserved_name)};\n")
        out.append("}\n")
        return "".join(out)

    @staticmethod
    def range(first: int, last: int) -> str:
        if first == last:
            return str(first)
        return f"{first} to {'max' if last >= _MAX_FIELD else last}"

    def field(self, field: FieldProto, in_oneof: bool = False, in_extend: bool = False) -> str:
        if field.type == FieldProto.TYPE_GROUP:
            raise DescriptorText(f"field {field.name} is a group, which is not supported")
        entry = self.entries.get(field.type_name) if field.label == FieldProto.LABEL_REPEATED else None
        if entry is not None:
            key, value = entry.field[0], entry.field[1]
            text = f"map<{self.type_of(key)}, {self.type_of(value)}> {field.name} = {field.number}"
        else:
            if in_oneof:
                label = ""
            elif field.label == FieldProto.LABEL_REPEATED:
                label = "repeated "
            elif self.proto3:
                label = "optional " if field.proto3_optional else ""
            else:
                label = _LABELS[field.label] + " "
            text = f"{label}{self.type_of(field)} {field.name} = {field.number}"
        options = []
        if field.HasField("default_value"):
            options.append(("default", self.default(field)))
        if field.HasField("json_name") and field.json_name != _camel(field.name):
            options.append(("json_name", _quote(field.json_name)))
        options += _options(field.options)
        if options:
            text += " [" + ", ".join(f"{name} = {value}" for name, value in options) + "]"
        return text + ";\n"

    @staticmethod
    def type_of(field: FieldProto) -> str:
        if field.type in (FieldProto.TYPE_MESSAGE, FieldProto.TYPE_ENUM) or not field.HasField("type"):
            return field.type_name
        return _SCALARS[field.type]

    @staticmethod
    def default(field: FieldProto) -> str:
        value = field.default_value
        if field.type == FieldProto.TYPE_STRING:
            return _quote(value)
        if field.type == FieldProto.TYPE_BYTES:
            return f'"{value}"'  # protoc keeps bytes defaults C-escaped already
        return value

    def enum(self, enum: EnumProto) -> str:
        out = [f"enum {enum.name} {{\n"]
        out += [f"option {name} = {value};\n" for name, value in _options(enum.options)]
        for value in enum.value:
            options = _options(value.options)
            suffix = " [" + ", ".join(f"{n} = {v}" for n, v in options) + "]" if options else ""
            out.append(f"{value.name} = {value.number}{suffix};\n")
        for reserved in enum.reserved_range:  # enum ranges are inclusive
            out.append(f"reserved {reserved.start if reserved.start == reserved.end else f'{reserved.start} to {reserved.end}'};\n")
        if enum.reserved_name:
            out.append(f"reserved {', '.join(_quote(n) for n in enum.reserved_name)};\n")
        out.append("}\n")
        return "".join(out)

    def extends(self, fields: Iterable[FieldProto], depth: int) -> list[str]:
        by_extendee: dict[str, list[str]] = {}
        for field in fields:
            by_extendee.setdefault(field.extendee, []).append(self.field(field, in_extend=True))
        return [f"extend {extendee} {{\n{''.join(body)}}}\n" for extendee, body in by_extendee.items()]

    def service(self, service: descriptor_pb2.ServiceDescriptorProto) -> str:
        out = [f"service {service.name} {{\n"]
        out += [f"option {name} = {value};\n" for name, value in _options(service.options)]
        for method in service.method:
            request = ("stream " if method.client_streaming else "") + method.input_type
            response = ("stream " if method.server_streaming else "") + method.output_type
            options = _options(method.options)
            body = " {\n" + "".join(f"option {n} = {v};\n" for n, v in options) + "}" if options else ";"
            out.append(f"rpc {method.name} ({request}) returns ({response}){body}\n")
        out.append("}\n")
        return "".join(out)
