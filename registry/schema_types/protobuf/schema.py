"""The PROTOBUF schema type: parsed schemas, their stored text, descriptors, compatibility.

    schema = PROTOBUF.parse('syntax = "proto3"; message M { int32 a = 1; }', {})
    schema.canonical()                 # the text stored and returned, as Confluent prints it
    schema.serialized()                # base64 FileDescriptorProto, ?format=serialized
    schema.file_descriptor_set()       # with every dependency, to build message classes
    schema.read_errors(older)          # [] when `schema` can read data written with `older`
"""
from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from functools import cached_property
from typing import Final

from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError

from registry.schema_types.base import CheckTooCostly, InvalidSchema, ParsedSchema
from registry.schema_types.protobuf import compatibility
from registry.schema_types.protobuf.compiler import CompiledSchema, ProtocPool, compile_schema
from registry.schema_types.protobuf.descriptor_text import DescriptorText, proto_text
from registry.schema_types.protobuf.printer import print_schema
from registry.schema_types.protobuf.source import Path, Source
from registry.schema_types.protobuf.symbols import FileProto, MessageProto, Symbols

_JSON_NAME: Final = 10  # FieldDescriptorProto.json_name, in SourceCodeInfo paths

WORK_PER_ELEMENT: Final = 10
"""Compatibility steps allowed per element (message, field, enum, enum value) of the two
schemas and what they import. Each pair of message types is compared once, so a check
of two schemas takes about one step per element; more means types of one local name
in many packages paired every way, which is refused rather than compared."""
MIN_WORK: Final = 50_000
"""Steps every check may take, however small its schemas (as JSON Schema's MIN_WORK)."""


class ProtobufSchema:
    """A compiled Protobuf schema (see `ParsedSchema`). Immutable; safe to share.

    Create through `PROTOBUF.parse`.
    """

    def __init__(self, compiled: CompiledSchema) -> None:
        self._compiled = compiled
        self.symbols = Symbols.of(compiled.files)
        self.compat_tables: dict = {}  # filled by compatibility.py, per message
        self._sources = {file.name: Source(compiled.sources.get(file.name, ""), file.source_code_info)
                         for file in compiled.files}
        source = self._sources[self.main.name]
        # Printed now, so that a failure is an InvalidSchema from parse, not a later error.
        self._canonical = print_schema(self.main, source, self.symbols, normalize=False)
        self._normalized = print_schema(self.main, source, self.symbols, normalize=True)

    @property
    def schema_type(self) -> str:
        return "PROTOBUF"

    @property
    def main(self) -> FileProto:
        """The schema's own FileDescriptorProto as protoc made it (with source info)."""
        return self._compiled.main

    @property
    def source_texts(self) -> Mapping[str, str]:
        """Source text of the schema and its references, by file name."""
        return self._compiled.sources

    def canonical(self) -> str:
        """The schema as Confluent's `canonicalString()` prints it (see printer.py)."""
        return self._canonical

    def normalized(self) -> str:
        """The schema as Confluent's `normalize=true` prints it (see printer.py)."""
        return self._normalized

    def file_descriptor_proto(self) -> FileProto:
        """The schema's FileDescriptorProto as Confluent serializes it: named "default",
        no source info, `json_name` only where the schema sets one. A new copy."""
        return self._descriptors[-1]

    def serialized(self) -> str:
        """`GET /schemas/ids/{id}?format=serialized`: the FileDescriptorProto, base64."""
        return base64.b64encode(self._descriptors[-1].SerializeToString()).decode("ascii")

    def file_descriptor_set(self) -> descriptor_pb2.FileDescriptorSet:
        """The schema's file and every file it imports (references, bundled files, and the
        stand-ins for imports no reference is named for, see imports.py),
        dependencies first, each as in `file_descriptor_proto`: enough for
        `descriptor_pool.DescriptorPool.Add` to build message classes. A new copy."""
        return descriptor_pb2.FileDescriptorSet(file=self._descriptors)

    def message_names(self) -> list[str]:
        """Full names of the schema's top-level messages, in declaration order (the first
        is what Confluent's serializers use when no message is named)."""
        prefix = f"{self.main.package}." if self.main.package else ""
        return [prefix + message.name for message in self.main.message_type]

    @cached_property
    def _descriptors(self) -> list[FileProto]:
        return [_as_confluent_serializes(file, self._sources[file.name])
                for file in self._compiled.files]

    def read_errors(self, writer: ParsedSchema) -> list[str]:
        """Why this schema, as the reader, cannot read data written with `writer`, by
        Confluent's Protobuf rules (see compatibility.py); empty means it can."""
        if not isinstance(writer, ProtobufSchema):
            return [f"#/: a Protobuf reader cannot read data written with a "
                    f"{writer.schema_type} schema"]
        budget = WORK_PER_ELEMENT * (self._size + writer._size) + MIN_WORK
        try:
            differences = compatibility.compare(writer, self, budget)
        except compatibility.TooMuchWork:
            raise CheckTooCostly(f"deciding compatibility would take more than {budget} comparison steps "
                                 "(the limit for schemas of this size)") from None
        return [difference.message() for difference in differences if not difference.compatible]

    @cached_property
    def _size(self) -> int:
        """Messages, fields, enums and enum values of every file: what a comparison may visit."""
        symbols = self.symbols
        return (sum(1 + len(m.field) for m in symbols.messages.values())
                + sum(1 + len(e.value) for e in symbols.enums.values()))

    def __repr__(self) -> str:
        return f"ProtobufSchema({self._canonical!r})"


def _as_confluent_serializes(file: FileProto, source: Source) -> FileProto:
    copy = FileProto()
    copy.CopyFrom(file)
    copy.ClearField("source_code_info")
    # protoc fills json_name in for every field; Confluent's descriptors carry it only
    # where the schema sets it (the source then has a location for it).
    pending: list[tuple[MessageProto, Path]] = [(m, (4, i)) for i, m in enumerate(copy.message_type)]
    for index, extension in enumerate(copy.extension):
        if not source.has((7, index, _JSON_NAME)):
            extension.ClearField("json_name")
    while pending:
        message, path = pending.pop()
        for index, field in enumerate(message.field):
            if not source.has((*path, 2, index, _JSON_NAME)):
                field.ClearField("json_name")
        for index, extension in enumerate(message.extension):
            if not source.has((*path, 6, index, _JSON_NAME)):
                extension.ClearField("json_name")
        pending.extend((nested, (*path, 3, i)) for i, nested in enumerate(message.nested_type))
    return copy


class ProtobufType:
    """The Protobuf `SchemaType`: parses .proto text into `ProtobufSchema`."""

    name: str = "PROTOBUF"

    def __init__(self, pool: ProtocPool | None = None) -> None:
        self._pool = pool

    def parse(self, text: str, references: Mapping[str, str], *, lenient: bool = False
              ) -> ProtobufSchema:
        """Compile `text` (proto2 or proto3; see `SchemaType.parse`).

        `text` may also be a FileDescriptorProto, base64-encoded, as confluent-kafka's
        serializers register it: it is printed to .proto text (descriptor_text.py) and
        compiled like any other, as Confluent's registry does.
        Each reference name is an import path: `import "other.proto"` is resolved by the
        reference named "other.proto"; google/protobuf/*.proto and the google/type/*.proto
        Confluent bundles need no reference (includes.py); an import no reference is
        named for resolves across all the references, as in Confluent (imports.py).
        Custom option statements whose name nothing defines are kept in the text and
        left out of the descriptors, as in Confluent (custom_options.py).
        `lenient` (for schemas already in the log) changes nothing for Protobuf: every
        check is protoc's or a bound that protects it (compiler.py), and those hold for
        every compile; a refusal is remembered, so a lenient parse after a strict one
        refuses without compiling again.
        Raises InvalidSchema with the compiler's reasons; blocks while it compiles.
        """
        try:
            text = _text_of_descriptor(text)
            references = {name: _text_of_descriptor(ref) for name, ref in references.items()}
            compiled = compile_schema(text, references, pool=self._pool)
            return ProtobufSchema(compiled)
        except InvalidSchema:
            raise
        except RecursionError:
            raise InvalidSchema("the schema is nested too deeply") from None
        except Exception as error:  # noqa: BLE001 - a parse must end in InvalidSchema
            raise InvalidSchema(f"cannot read the schema: {type(error).__name__}: {error}") from None


_BASE64: Final = re.compile(r"[A-Za-z0-9+/]+={0,2}")


def _text_of_descriptor(text: str) -> str:
    """.proto text for a base64 FileDescriptorProto; any other text unchanged. .proto text
    is never valid base64: every schema has a space or a semicolon."""
    stripped = text.strip()
    if not _BASE64.fullmatch(stripped) or len(stripped) % 4:
        return text
    try:
        raw = base64.b64decode(stripped, validate=True)
    except ValueError:
        return text
    try:
        file = descriptor_pb2.FileDescriptorProto.FromString(raw)
    except DecodeError as error:
        raise InvalidSchema(f"the schema is neither .proto text nor a base64 FileDescriptorProto: "
                            f"{error}") from None
    try:
        return proto_text(file)
    except DescriptorText as error:
        raise InvalidSchema(f"cannot read the serialized descriptor: {error}") from None


PROTOBUF: Final = ProtobufType()
