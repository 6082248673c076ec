"""Protobuf serializer and deserializer for confluent-kafka, in Confluent's wire format.

Drop-ins for `confluent_kafka.schema_registry.protobuf.ProtobufSerializer` and
`ProtobufDeserializer`: the same constructors, configuration keys and callables::

    serializer = ProtobufSerializer(Order, client, {"use.deprecated.format": False})
    deserializer = ProtobufDeserializer(Order, {"use.deprecated.format": False})

Messages are framed as Confluent frames them (`protobuf_wire`): header, message-index
list, then the message's own bytes, so either side may be confluent-kafka's.

Registration: the message's .proto file is registered as .proto text (printed from
the generated class's descriptor, `descriptor_text`), and each file it imports first,
as a reference named by its import path, under the subject
``reference.subject.name.strategy`` gives (the import path by default);
google/protobuf/*, google/type/* and confluent/* are skipped (``skip.known.types``).

Where the time goes: the serializer builds the header and index bytes once per
subject, so a message is one dict lookup, `SerializeToString` and one concatenation.
The deserializer keys the common `[0]` framing by its first 6 bytes, so a message is
one dict lookup, a slice and `FromString`.

Without a message class (`message_type=None`, our extension) the deserializer builds
the writer's message class from the registry (the schema and its references compiled
by `registry.schema_types.protobuf`), once per schema id and message.

Not supported: data-contract rules, `use.latest.with.metadata`, schema GUIDs.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import schema_registry as confluent
from confluent_kafka.schema_registry import Schema, SchemaReference
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import SerializationContext, SerializationError
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FileDescriptor
from google.protobuf.message import DecodeError, Message

from registry.client.lookup import BadReference, SchemaLookup
from registry.schema_types.base import InvalidSchema
from registry.schema_types.protobuf import PROTOBUF
from registry.schema_types.protobuf.descriptor_text import proto_text
from registry.serde import naming, protobuf_wire, wire
from registry.serde.avro import _check_no_rules, _flag, _take_unsupported
from registry.serde.subject_routes import SubjectRoutes
from registry.serde.wire import HEADER_SIZE, UnknownSchemaId

_KNOWN_PREFIXES = ("confluent/", "google/protobuf/", "google/type/")


def is_known_type_file(name: str) -> bool:
    """Files every registry and client has, which `skip.known.types` does not register."""
    return name.startswith(_KNOWN_PREFIXES)


def _deprecated_format(conf: dict[str, Any]) -> bool:
    value = conf.pop("use.deprecated.format")
    if not isinstance(value, bool):
        raise ValueError("use.deprecated.format must be a boolean value")
    return value


class ProtobufSerializer:
    """Serializes instances of one generated Protobuf message class to Confluent-framed
    bytes.

    Configuration (`conf`), as confluent-kafka's: ``auto.register.schemas`` (True),
    ``normalize.schemas`` (False), ``use.schema.id``, ``use.latest.version`` (False),
    ``skip.known.types`` (True), ``subject.name.strategy`` / ``.type``,
    ``reference.subject.name.strategy`` (callable `(ctx, FileDescriptor) -> subject`),
    ``use.deprecated.format`` (False: zig-zag message indexes; True: the plain varints
    of confluent-kafka < 1.8, which confluent-kafka 2.x no longer accepts).

    A call blocks on the registry only the first time a subject is seen (with
    ``use.latest.version``, whenever the client's latest-version cache expires). Raises
    ValueError for a message of another class, SchemaRegistryError when registration or
    lookup fails. Thread-safe.
    """

    _default_conf: dict[str, Any] = {
        "auto.register.schemas": True,
        "normalize.schemas": False,
        "use.schema.id": None,
        "use.latest.version": False,
        "skip.known.types": True,
        "subject.name.strategy": None,
        "subject.name.strategy.type": None,
        "reference.subject.name.strategy": confluent.reference_subject_name_strategy,
        "use.deprecated.format": False,
    }

    def __init__(self, msg_type: type[Message], schema_registry_client: Any,
                 conf: dict[str, Any] | None = None, rule_conf: dict[str, Any] | None = None,
                 rule_registry: Any = None) -> None:
        _check_no_rules(rule_conf, rule_registry)
        conf_copy = dict(self._default_conf)
        conf_copy.update(conf or {})
        self._auto_register = _flag(conf_copy, "auto.register.schemas")
        self._normalize = _flag(conf_copy, "normalize.schemas")
        self._use_latest = _flag(conf_copy, "use.latest.version")
        self._skip_known = _flag(conf_copy, "skip.known.types")
        self._use_schema_id: int | None = conf_copy.pop("use.schema.id")
        if self._use_schema_id is not None and (not isinstance(self._use_schema_id, int)
                                                 or isinstance(self._use_schema_id, bool)):
            raise ValueError("use.schema.id must be an int value")
        if self._use_latest and self._auto_register:
            raise ValueError("cannot enable both use.latest.version and auto.register.schemas")
        strategy = naming.strategy_from_conf(conf_copy.pop("subject.name.strategy"),
                                             conf_copy.pop("subject.name.strategy.type"))
        self._reference_subject = conf_copy.pop("reference.subject.name.strategy")
        if not callable(self._reference_subject):
            raise ValueError("reference.subject.name.strategy must be callable")
        zigzag = not _deprecated_format(conf_copy)
        _take_unsupported(conf_copy)
        if conf_copy:
            raise ValueError(f"Unrecognized properties: {', '.join(conf_copy)}")

        self._client = schema_registry_client
        self._msg_type = msg_type
        descriptor: Descriptor = msg_type.DESCRIPTOR
        self._indexes = protobuf_wire.encode_indexes(protobuf_wire.indexes_of(descriptor), zigzag)
        self._schema = Schema(proto_text(descriptor.file), "PROTOBUF")
        self._refs_lock = threading.Lock()
        self._routes: SubjectRoutes[bytes] = SubjectRoutes(
            strategy, descriptor.full_name, self._prefix_for, cacheable=not self._use_latest)

    def __call__(self, message: Message | None, ctx: SerializationContext | None = None) -> bytes | None:
        """`message` framed: header, message indexes, its bytes; None for None."""
        if message is None:
            return None
        if type(message) is not self._msg_type and not isinstance(message, self._msg_type):
            raise ValueError(f"message must be of type {self._msg_type} not {type(message)}")
        routes = self._routes
        prefix = routes.constant
        if prefix is None:
            by_topic = routes.by_field.get(ctx.field) if ctx is not None else None
            prefix = by_topic.get(ctx.topic) if by_topic is not None else None  # type: ignore[union-attr]
            if prefix is None:
                prefix = routes.get(ctx)
        return prefix + message.SerializeToString()

    def serialize_batch(self, messages: Iterable[Message | None],
                        ctx: SerializationContext | None = None) -> list[bytes | None]:
        """Each of `messages` serialized as `__call__` would, the subject resolved once
        for the batch (a message is then one type check and `SerializeToString`)."""
        prefix = self._routes.get(ctx)
        cls = self._msg_type
        out: list[bytes | None] = []
        for message in messages:
            if message is None:
                out.append(None)
                continue
            if type(message) is not cls and not isinstance(message, cls):
                raise ValueError(f"message must be of type {cls} not {type(message)}")
            out.append(prefix + message.SerializeToString())
        return out

    # ---- once per subject ----------------------------------------------------------------

    def _prefix_for(self, subject: str) -> bytes:
        if self._use_schema_id is not None:
            schema_id = self._use_schema_id
        elif self._use_latest:
            schema_id = self._client.get_latest_version(subject).schema_id
        else:
            with self._refs_lock:
                references = self._references(self._msg_type.DESCRIPTOR.file, None)
            schema = Schema(self._schema.schema_str, "PROTOBUF", references)
            if self._auto_register:
                registered = self._client.register_schema_full_response(
                    subject, schema, normalize_schemas=self._normalize)
            else:
                registered = self._client.lookup_schema(subject, schema, normalize_schemas=self._normalize)
            schema_id = registered.schema_id
        if schema_id is None:
            raise SerializationError("the registry answered without a schema id")
        return wire.header(schema_id) + self._indexes

    def _references(self, file: FileDescriptor, ctx: SerializationContext | None) -> list[SchemaReference]:
        return file_references(self._client, file, ctx, auto_register=self._auto_register,
                               normalize=self._normalize, skip_known_types=self._skip_known,
                               reference_subject=self._reference_subject)


def file_references(client: Any, file: FileDescriptor, ctx: SerializationContext | None = None, *,
                    auto_register: bool = True, normalize: bool = False, skip_known_types: bool = True,
                    reference_subject: Callable[[Any, FileDescriptor], str] =
                    confluent.reference_subject_name_strategy) -> list[SchemaReference]:
    """The references of `file`'s schema: each file it imports registered (or, without
    `auto_register`, looked up) under `reference_subject(ctx, imported file)`, the files
    those import first. Blocks on the registry; raises SchemaRegistryError. Recursion is
    bounded by the import depth of generated code, which protoc checked."""
    out = []
    for dependency in file.dependencies:
        if skip_known_types and is_known_type_file(dependency.name):
            continue
        nested = file_references(client, dependency, ctx, auto_register=auto_register, normalize=normalize,
                                 skip_known_types=skip_known_types, reference_subject=reference_subject)
        schema = Schema(proto_text(dependency), "PROTOBUF", nested)
        subject = reference_subject(ctx, dependency)
        version = None
        if auto_register:
            version = client.register_schema_full_response(subject, schema, normalize_schemas=normalize).version
        if version is None:
            version = client.lookup_schema(subject, schema, normalize_schemas=normalize).version
        out.append(SchemaReference(dependency.name, subject, version))
    return out


def register_message_type(client: Any, subject: str, msg_type: type[Message], *, normalize: bool = False,
                          skip_known_types: bool = True,
                          reference_subject: Callable[[Any, FileDescriptor], str] =
                          confluent.reference_subject_name_strategy) -> Any:
    """Registers the .proto file of generated class `msg_type` under `subject`, each file it
    imports first as a reference (see `file_references`); the RegisteredSchema answer.
    What `ProtobufSerializer` does on its first message, for deployment scripts. Blocks
    on the registry; raises SchemaRegistryError (e.g. an incompatible change)."""
    file = msg_type.DESCRIPTOR.file
    references = file_references(client, file, None, normalize=normalize, skip_known_types=skip_known_types,
                                 reference_subject=reference_subject)
    return client.register_schema_full_response(subject, Schema(proto_text(file), "PROTOBUF", references),
                                                normalize_schemas=normalize)


class WriterDescriptors:
    """Message descriptors of the registry's Protobuf schemas, by schema id and message
    indexes: each schema compiled once (with its references) into its own descriptor
    pool. Blocks on the registry and the compiler the first time an id is seen. Raises
    UnknownSchemaId, SerializationError for a schema that does not compile, and
    BadMessageIndexes. Thread-safe."""

    def __init__(self, lookup: SchemaLookup) -> None:
        self._lookup = lookup
        self._files: dict[int, FileDescriptor] = {}
        self._classes: dict[tuple[int, tuple[int, ...]], type[Message]] = {}
        self._lock = threading.Lock()

    def file(self, schema_id: int, schema: Schema | None = None) -> FileDescriptor:
        found = self._files.get(schema_id)
        if found is None:
            if schema is None:
                schema = _by_id(self._lookup, schema_id)
            found = compile_file(self._lookup, schema)
            with self._lock:
                self._files[schema_id] = found
        return found

    def message_class(self, schema_id: int, indexes: tuple[int, ...]) -> type[Message]:
        found = self._classes.get((schema_id, indexes))
        if found is None:
            descriptor = protobuf_wire.message_at(self.file(schema_id), indexes)
            found = message_factory.GetMessageClass(descriptor)
            with self._lock:
                self._classes[(schema_id, indexes)] = found
        return found


def _by_id(lookup: SchemaLookup, schema_id: int) -> Schema:
    try:
        return lookup.by_id(schema_id)
    except SchemaRegistryError as exc:
        if exc.http_status_code == 404:
            raise UnknownSchemaId(f"schema id {schema_id} is not in the schema registry "
                                  f"({exc.error_message})") from exc
        raise


def descriptor_set(lookup: SchemaLookup, schema: Schema) -> descriptor_pb2.FileDescriptorSet:
    """`schema` (PROTOBUF) and its references compiled: every file, dependencies first,
    the schema's own last. Blocks on the registry (references) and the compiler."""
    try:
        references = {ref.name: ref.schema.schema_str for ref in lookup.referenced(schema)}
        parsed = PROTOBUF.parse(schema.schema_str or "", references, lenient=True)
    except (BadReference, InvalidSchema) as exc:
        raise SerializationError(f"cannot compile the writer's Protobuf schema: {exc}") from exc
    return parsed.file_descriptor_set()


def compile_file(lookup: SchemaLookup, schema: Schema) -> FileDescriptor:
    """`schema` (PROTOBUF) and its references compiled into a new descriptor pool; its file."""
    files = descriptor_set(lookup, schema).file
    pool = descriptor_pool.DescriptorPool()
    for file in files:
        pool.Add(file)
    return pool.FindFileByName(files[-1].name)


class ProtobufDeserializer:
    """Deserializes Confluent-framed Protobuf into instances of `message_type`.

    As confluent-kafka's, the payload is parsed with `message_type` whatever the
    writer's schema (Protobuf data is self-describing enough; evolution is Protobuf's
    own), so no registry is needed. With `message_type=None` (our extension) and a
    `schema_registry_client`, each message is parsed with the writer's own message
    class, built from the registry.

    Configuration (`conf`): ``use.deprecated.format`` (False; True reads the plain
    varint indexes of confluent-kafka < 1.8), and confluent-kafka's
    ``use.latest.version`` / ``subject.name.strategy`` / ``.type``, accepted and
    unused (they only choose migration rules there, which this registry has not).

    Raises `wire.UnknownMagicByte`, `wire.TruncatedPayload`,
    `protobuf_wire.BadMessageIndexes` and SerializationError for bytes that do not
    parse. Thread-safe.
    """

    _default_conf: dict[str, Any] = {
        "use.latest.version": False,
        "subject.name.strategy": None,
        "subject.name.strategy.type": None,
        "use.deprecated.format": False,
    }

    def __init__(self, message_type: type[Message] | None, conf: dict[str, Any] | None = None,
                 schema_registry_client: Any = None, rule_conf: dict[str, Any] | None = None,
                 rule_registry: Any = None) -> None:
        _check_no_rules(rule_conf, rule_registry)
        conf_copy = dict(self._default_conf)
        conf_copy.update(conf or {})
        _flag(conf_copy, "use.latest.version")
        naming.strategy_from_conf(conf_copy.pop("subject.name.strategy"),
                                  conf_copy.pop("subject.name.strategy.type"))
        self._zigzag = not _deprecated_format(conf_copy)
        _take_unsupported(conf_copy)
        if conf_copy:
            raise ValueError(f"Unrecognized properties: {', '.join(conf_copy)}")
        if message_type is None and schema_registry_client is None:
            raise ValueError("without a message_type, a schema_registry_client is needed "
                             "to learn the writer's message type")
        self._parse = message_type.FromString if message_type is not None else None
        self._writers = (WriterDescriptors(SchemaLookup(schema_registry_client))
                         if schema_registry_client is not None else None)
        # The first 6 bytes (header and the `[0]` byte) -> the parse function, for the
        # framings seen before; with a message_type, one for every schema id.
        self._by_prefix: dict[bytes, Any] = {}

    def __call__(self, data: bytes | None, ctx: SerializationContext | None = None) -> Message | None:
        """The message `data` frames; None for None."""
        if data is None:
            return None
        try:
            parse = self._by_prefix.get(data[:6])
        except TypeError:  # bytearray or memoryview: their slices are unhashable
            data = bytes(data)
            parse = self._by_prefix.get(data[:6])
        if parse is not None:
            payload = data[6:]
        else:
            parse, payload = self._slow(data)
        try:
            return parse(payload)
        except DecodeError as exc:
            raise SerializationError(f"cannot parse the Protobuf message (schema id "
                                     f"{int.from_bytes(data[1:HEADER_SIZE], 'big')}): {exc}") from exc

    def deserialize_batch(self, datas: Iterable[bytes | None],
                          ctx: SerializationContext | None = None) -> list[Message | None]:
        """Each of `datas` deserialized as `__call__` would, without a call per message
        for framings seen before."""
        by_prefix = self._by_prefix
        out: list[Message | None] = []
        for data in datas:
            parse = by_prefix.get(data[:6]) if type(data) is bytes else None
            if parse is None:
                out.append(self(data, ctx))
                continue
            try:
                out.append(parse(data[6:]))
            except DecodeError:
                out.append(self(data, ctx))  # raises, saying why
        return out

    def framing(self, data: bytes) -> tuple[int, tuple[int, ...], int]:
        """(schema id, message indexes, payload offset) of `data`."""
        schema_id = wire.parse_header(data)
        indexes, offset = protobuf_wire.read_indexes(data, self._zigzag)
        return schema_id, indexes, offset

    def _slow(self, data: bytes) -> tuple[Any, bytes]:
        schema_id, indexes, offset = self.framing(data)
        if self._parse is not None:
            parse = self._parse
        else:
            assert self._writers is not None
            parse = self._writers.message_class(schema_id, indexes).FromString
        if offset == 6 and indexes == (0,):
            self._by_prefix[bytes(data[:6])] = parse
        return parse, data[offset:]
