"""Every message, enum and extension a compiled schema can see, by full name.

    symbols = Symbols.of(compiled.files)
    symbols.messages["pkg.Outer.Inner"]       # its DescriptorProto
    symbols.resolve_extension("opt", ["pkg", "Outer"])   # "pkg.opt", protobuf scoping

Full names carry no leading dot. Built once per parsed schema, read-only afterwards.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from google.protobuf import descriptor_pb2

FileProto = descriptor_pb2.FileDescriptorProto
MessageProto = descriptor_pb2.DescriptorProto
EnumProto = descriptor_pb2.EnumDescriptorProto
FieldProto = descriptor_pb2.FieldDescriptorProto

# Read once: class attributes of generated protobuf classes are slow to look up.
_TYPE_MESSAGE = FieldProto.TYPE_MESSAGE
_LABEL_REPEATED = FieldProto.LABEL_REPEATED


@dataclass(frozen=True)
class Symbols:
    messages: Mapping[str, MessageProto]
    enums: Mapping[str, EnumProto]
    extensions: Mapping[str, FieldProto]
    file_of: Mapping[str, str]
    """The name of the file that defines each message and enum."""
    package_of: Mapping[str, str]
    """The package of the file that defines each message and enum ("" for none)."""

    @classmethod
    def of(cls, files: Iterable[FileProto]) -> Symbols:
        messages: dict[str, MessageProto] = {}
        enums: dict[str, EnumProto] = {}
        extensions: dict[str, FieldProto] = {}
        file_of: dict[str, str] = {}
        package_of: dict[str, str] = {}
        for file in files:
            prefix = f"{file.package}." if file.package else ""
            for extension in file.extension:
                extensions[prefix + extension.name] = extension
            # An explicit stack, not recursion: nesting depth is the schema's to choose.
            pending: list[tuple[str, MessageProto]] = [(prefix + m.name, m) for m in file.message_type]
            for enum in file.enum_type:
                enums[prefix + enum.name] = enum
                file_of[prefix + enum.name] = file.name
                package_of[prefix + enum.name] = file.package
            while pending:
                name, message = pending.pop()
                messages[name] = message
                file_of[name] = file.name
                package_of[name] = file.package
                for extension in message.extension:
                    extensions[f"{name}.{extension.name}"] = extension
                for enum in message.enum_type:
                    enums[f"{name}.{enum.name}"] = enum
                    file_of[f"{name}.{enum.name}"] = file.name
                    package_of[f"{name}.{enum.name}"] = file.package
                pending.extend((f"{name}.{nested.name}", nested) for nested in message.nested_type)
        return cls(messages, enums, extensions, file_of, package_of)

    def resolve_extension(self, name: str, scope: Sequence[str]) -> str | None:
        """The full name `name` denotes as an extension seen from `scope` (package parts
        then enclosing type names), searched innermost first, as Confluent's Context does."""
        if name.startswith("."):
            return name[1:] if name[1:] in self.extensions else None
        for end in range(len(scope), -1, -1):
            candidate = ".".join([*scope[:end], name])
            if candidate in self.extensions:
                return candidate
        return None

    def map_entry(self, field: FieldProto) -> MessageProto | None:
        """The synthetic entry message if `field` is a map field, else None."""
        if field.type != _TYPE_MESSAGE or field.label != _LABEL_REPEATED:
            return None
        entry = self.messages.get(field.type_name.lstrip("."))
        if entry is not None and entry.options.map_entry:
            return entry
        return None
