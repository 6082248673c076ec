"""Confluent-framed Protobuf values in PySpark, batch and Structured Streaming.

    decoder = ProtobufDecoder.for_subject(client, "orders-value")      # reader: latest version
    orders = decoder.decode(kafka_df, "value", into="order")           # + struct column "order"
    encoder = ProtobufEncoder.for_subject(client, "orders-value")
    out = orders.select(encoder.encode("order").alias("value"))

How it runs. The reader's message (the subject version's first message, or the one
named) gives the struct's Spark type (`spark_type_of`, spark-protobuf's mapping). Each
record's header and message indexes are checked against the writer schemas the decoder
knows, and the payload parsed with the reader's message class: Protobuf fields match
by number, so every compatible writer version reads into the reader's shape, as
confluent-kafka's deserializer reads them. The parse runs in a Python UDF with the
protobuf runtime (upb, C; pyspark's Arrow UDFs would need pandas and pyarrow, which
this project does not install): the descriptors travel to the workers
as serialized FileDescriptorSets, compiled from the registered schema and its
references on the driver, once per schema id.

Why not spark-protobuf's `from_protobuf`: its connector jar (spark-protobuf_2.13) is
not on the Maven Central this project fetches from (infra/spark-pom.xml), so it
cannot be on the class path; the type mapping here follows its SchemaConverters so
that the JVM path can replace the UDF without changing the output type.

Protobuf to Spark: int32/sint32/sfixed32 int; uint32, int64/sint64/sfixed64 bigint;
uint64/fixed64 decimal(20,0); float, double, bool, string, bytes as such; an enum its
value's name (a string); a message a struct; `repeated` an array; a map a map;
google.protobuf.Timestamp a timestamp. Scalars without presence read as their value
(0, "", false when unset, as spark-protobuf's ``emit.default.values``); message
fields and fields with presence are null when unset. A recursive message type is
refused (as spark-protobuf does by default).

Bad records (FAILFAST fails the job naming the reason; PERMISSIVE gives a null struct
and the reason in an error column): ``truncated``, ``unknown magic byte``, ``unknown
schema id N``, ``bad message indexes``, ``message type X is not the reader's Y`` (a
topic carrying several types), ``truncated or corrupt payload``.
"""
from __future__ import annotations

import datetime
import decimal
import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from confluent_kafka.schema_registry import Schema
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from registry.client.lookup import SchemaLookup, Version
from registry.serde import protobuf_wire, wire
from registry.serde.protobuf import descriptor_set
from registry.serde.wire import HEADER_SIZE
from registry.spark.decode import BatchDecoding, DecodeMode

__all__ = ["ProtobufDecoder", "ProtobufEncoder", "SchemaNotProtobuf", "spark_type_of"]

_TIMESTAMP: Final = "google.protobuf.Timestamp"
_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_FD = FieldDescriptor
_INT: Final = frozenset({_FD.TYPE_INT32, _FD.TYPE_SINT32, _FD.TYPE_SFIXED32})
_LONG: Final = frozenset({_FD.TYPE_UINT32, _FD.TYPE_INT64, _FD.TYPE_SINT64, _FD.TYPE_SFIXED64})
_UNSIGNED_LONG: Final = frozenset({_FD.TYPE_UINT64, _FD.TYPE_FIXED64})
_SIMPLE: Final = {_FD.TYPE_FIXED32: T.LongType(), _FD.TYPE_FLOAT: T.FloatType(),
                  _FD.TYPE_DOUBLE: T.DoubleType(), _FD.TYPE_BOOL: T.BooleanType(),
                  _FD.TYPE_STRING: T.StringType(), _FD.TYPE_BYTES: T.BinaryType(),
                  _FD.TYPE_ENUM: T.StringType()}


class SchemaNotProtobuf(ValueError):
    """The registry returned a schema that is not Protobuf."""


def _is_map(field: FieldDescriptor) -> bool:
    return (field.type == _FD.TYPE_MESSAGE and field.is_repeated
            and field.message_type.GetOptions().map_entry)


def spark_type_of(message: Descriptor) -> T.StructType:
    """The Spark type of `message`'s values (see the module docstring). Raises
    ValueError for a recursive message type."""
    return _struct(message, ())


def _struct(message: Descriptor, path: tuple[str, ...]) -> T.StructType:
    if message.full_name in path:
        raise ValueError(f"{message.full_name} is recursive ({' -> '.join((*path, message.full_name))}): "
                         "a Spark type cannot hold it")
    return T.StructType([T.StructField(f.name, _field_type(f, (*path, message.full_name)), True)
                         for f in message.fields])


def _value_type(field: FieldDescriptor, path: tuple[str, ...]) -> T.DataType:
    if field.type == _FD.TYPE_MESSAGE or field.type == _FD.TYPE_GROUP:
        if field.message_type.full_name == _TIMESTAMP:
            return T.TimestampType()
        return _struct(field.message_type, path)
    if field.type in _INT:
        return T.IntegerType()
    if field.type in _LONG:
        return T.LongType()
    if field.type in _UNSIGNED_LONG:
        return T.DecimalType(20, 0)
    return _SIMPLE[field.type]


def _field_type(field: FieldDescriptor, path: tuple[str, ...]) -> T.DataType:
    if _is_map(field):
        key, value = field.message_type.fields_by_name["key"], field.message_type.fields_by_name["value"]
        return T.MapType(_value_type(key, path), _value_type(value, path), True)
    if field.is_repeated:
        return T.ArrayType(_value_type(field, path), True)
    return _value_type(field, path)


# ---- message <-> Python values, on the workers --------------------------------------------

Convert = Callable[[Any], Any]


def _timestamp(value: Any) -> datetime.datetime:
    return _EPOCH + datetime.timedelta(seconds=value.seconds, microseconds=value.nanos // 1000)


def _value_reader(field: FieldDescriptor) -> Convert | None:
    """How a field's single value becomes a Spark value; None when it is itself."""
    if field.type == _FD.TYPE_MESSAGE or field.type == _FD.TYPE_GROUP:
        if field.message_type.full_name == _TIMESTAMP:
            return _timestamp
        return _message_reader(field.message_type)
    if field.type == _FD.TYPE_ENUM:
        names = {v.number: v.name for v in field.enum_type.values}
        return lambda number: names.get(number, str(number))
    if field.type in _UNSIGNED_LONG:
        return decimal.Decimal
    return None


@functools.lru_cache(maxsize=None)
def _message_reader(message: Descriptor) -> Convert:
    """`message`'s instances as tuples in its struct's field order (what Arrow takes)."""
    plan: list[tuple[str, bool, int, Convert | None]] = []  # (name, has presence, kind, convert)
    for field in message.fields:
        if _is_map(field):
            key = _value_reader(field.message_type.fields_by_name["key"])
            value = _value_reader(field.message_type.fields_by_name["value"])
            plan.append((field.name, False, 2, _map_reader(key, value)))
        elif field.is_repeated:
            plan.append((field.name, False, 1, _value_reader(field)))
        else:
            plan.append((field.name, field.has_presence, 0, _value_reader(field)))

    def read(instance: Message) -> tuple[Any, ...]:
        out = []
        for name, presence, kind, convert in plan:
            if presence and not instance.HasField(name):
                out.append(None)
                continue
            value = getattr(instance, name)
            if kind == 1:
                out.append([convert(v) for v in value] if convert is not None else list(value))
            elif kind == 2:
                out.append(convert(value))  # type: ignore[misc]
            else:
                out.append(convert(value) if convert is not None else value)
        return tuple(out)
    return read


def _map_reader(key: Convert | None, value: Convert | None) -> Convert:
    def read(entries: Any) -> dict[Any, Any]:
        return {key(k) if key else k: value(v) if value else v for k, v in entries.items()}
    return read


def _value_writer(field: FieldDescriptor) -> Convert | None:
    """How a Spark value becomes what the message constructor takes; None when itself."""
    if field.type == _FD.TYPE_MESSAGE or field.type == _FD.TYPE_GROUP:
        if field.message_type.full_name == _TIMESTAMP:
            def timestamp(value: datetime.datetime) -> dict[str, int]:
                if value.tzinfo is None:
                    value = value.replace(tzinfo=datetime.timezone.utc)
                delta = value - _EPOCH
                seconds = delta.days * 86400 + delta.seconds
                return {"seconds": seconds, "nanos": delta.microseconds * 1000}
            return timestamp
        return _message_writer(field.message_type)
    if field.type in _UNSIGNED_LONG:
        return int
    return None


@functools.lru_cache(maxsize=None)
def _message_writer(message: Descriptor) -> Convert:
    """A Spark struct (a Row or dict) as keyword arguments of `message`'s constructor."""
    plan = []
    for field in message.fields:
        if _is_map(field):
            key = _value_writer(field.message_type.fields_by_name["key"])
            value = _value_writer(field.message_type.fields_by_name["value"])
            plan.append((field.name, 2, key, value))
        else:
            plan.append((field.name, 1 if field.is_repeated else 0, _value_writer(field), None))

    def write(row: Any) -> dict[str, Any]:
        data = row.asDict() if hasattr(row, "asDict") else row
        kwargs: dict[str, Any] = {}
        for name, kind, convert, convert_value in plan:
            value = data.get(name)
            if value is None:
                continue
            if kind == 1:
                kwargs[name] = [convert(v) for v in value] if convert is not None else value
            elif kind == 2:
                kwargs[name] = {convert(k) if convert else k: convert_value(v) if convert_value else v
                                for k, v in value.items()}
            else:
                kwargs[name] = convert(value) if convert is not None else value
        return kwargs
    return write


@functools.lru_cache(maxsize=64)
def _message_class(descriptor_set_bytes: bytes, full_name: str) -> type[Message]:
    """The class of `full_name` from a serialized FileDescriptorSet, built once per
    worker process."""
    pool = descriptor_pool.DescriptorPool()
    for file in descriptor_pb2.FileDescriptorSet.FromString(descriptor_set_bytes).file:
        pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(full_name))


def _message_names(file: descriptor_pb2.FileDescriptorProto) -> dict[tuple[int, ...], str]:
    """Every message of `file` by its message indexes."""
    out: dict[tuple[int, ...], str] = {}
    prefix = f"{file.package}." if file.package else ""
    pending = [((i,), prefix + m.name, m) for i, m in enumerate(file.message_type)]
    while pending:
        indexes, name, message = pending.pop()
        out[indexes] = name
        pending.extend(((*indexes, i), f"{name}.{n.name}", n) for i, n in enumerate(message.nested_type))
    return out


def _registered(lookup: SchemaLookup, schema: Schema) -> descriptor_pb2.FileDescriptorSet:
    if (schema.schema_type or "AVRO").upper() != "PROTOBUF":
        raise SchemaNotProtobuf(f"the schema is {schema.schema_type or 'AVRO'}, not Protobuf")
    return descriptor_set(lookup, schema)


class ProtobufDecoder:
    """Decodes Confluent-framed Protobuf with one reader message and a set of writer schemas.

    Immutable: `with_writer_ids` and `learn_writers` return a new decoder. Building one
    blocks on the registry and the Protobuf compiler (once per schema id) and raises
    what the client raises, SchemaNotProtobuf, or ValueError (no such message, a
    recursive one); `decode` does not touch the registry.
    """

    def __init__(self, lookup: SchemaLookup, reader_set: descriptor_pb2.FileDescriptorSet,
                 message: str | None = None,
                 writers: Mapping[int, descriptor_pb2.FileDescriptorSet] | None = None) -> None:
        """Prefer `for_subject` and `for_schema_id`. `message` is the reader message's full
        name (default: the first message of the reader schema's own file)."""
        self._lookup = lookup
        self._reader_set = reader_set
        main = reader_set.file[-1]
        names = _message_names(main)
        if message is None:
            if (0,) not in names:
                raise ValueError("the reader schema declares no message")
            message = names[(0,)]
        if message not in names.values():
            raise ValueError(f"the reader schema has no message {message!r}")
        self.message = message
        self._reader_bytes = reader_set.SerializeToString()
        self.spark_type = spark_type_of(_message_class(self._reader_bytes, message).DESCRIPTOR)
        self._writers = dict(writers or {})
        # writer id -> {message indexes -> full name}, shipped to the workers
        self._names = {i: _message_names(s.file[-1]) for i, s in self._writers.items()}

    @classmethod
    def for_schema_id(cls, client: Any, schema_id: int, *, message: str | None = None,
                      writer_ids: Iterable[int] = ()) -> ProtobufDecoder:
        """Reader: schema `schema_id`'s `message`. Writers: that schema, and `writer_ids`."""
        lookup = SchemaLookup(client)
        reader = _registered(lookup, lookup.by_id(schema_id))
        writers = {i: _registered(lookup, lookup.by_id(i)) for i in dict.fromkeys([schema_id, *writer_ids])}
        return cls(lookup, reader, message, writers)

    @classmethod
    def for_subject(cls, client: Any, subject: str, version: Version = "latest", *,
                    message: str | None = None, writer_ids: Iterable[int] = ()) -> ProtobufDecoder:
        """Reader: `subject`'s `version`. Writers: every version of `subject`, and `writer_ids`."""
        lookup = SchemaLookup(client)
        reader = lookup.by_version(subject, version)
        ids = [lookup.by_version(subject, v, deleted=True).schema_id
               for v in client.get_versions(subject, deleted=True)]
        writers = {i: _registered(lookup, lookup.by_id(i)) for i in dict.fromkeys([*ids, *writer_ids])}
        return cls(lookup, _registered(lookup, reader.schema), message, writers)

    @property
    def writer_ids(self) -> tuple[int, ...]:
        return tuple(sorted(self._writers))

    def with_writer_ids(self, ids: Iterable[int]) -> ProtobufDecoder:
        """This decoder, also knowing writer schemas `ids`."""
        new = {i: _registered(self._lookup, self._lookup.by_id(i))
               for i in dict.fromkeys(ids) if i not in self._writers}
        if not new:
            return self
        return ProtobufDecoder(self._lookup, self._reader_set, self.message, {**self._writers, **new})

    def learn_writers(self, df: DataFrame, column: str = "value") -> ProtobufDecoder:
        """This decoder, also knowing every registered Protobuf writer id in `df[column]`
        (one Spark job: a distinct over the 5-byte headers)."""
        value = F.col(column)
        headers = (df.where((F.length(value) >= HEADER_SIZE) & (F.substring(value, 1, 1) == F.lit(bytearray(b"\x00"))))
                   .select(F.substring(value, 1, HEADER_SIZE).alias("header")).distinct().collect())
        seen = sorted({int.from_bytes(bytes(row.header)[1:], "big") for row in headers})
        known = []
        for schema_id in (i for i in seen if i not in self._writers):
            try:
                schema = self._lookup.by_id(schema_id)
            except Exception:  # noqa: BLE001 - an id the registry does not have stays a bad record
                continue
            if (schema.schema_type or "AVRO").upper() == "PROTOBUF":
                known.append(schema_id)
        return self.with_writer_ids(known) if known else self

    def _udf(self) -> Callable[[Column], Column]:
        reader_bytes, message, names = self._reader_bytes, self.message, self._names
        result_type = T.StructType([T.StructField("value", self.spark_type, True),
                                    T.StructField("error", T.StringType(), True)])

        def decode_one(data: bytes | None) -> tuple[Any, str | None] | None:
            if data is None:
                return None
            data = bytes(data)
            if len(data) < HEADER_SIZE:
                return None, (f"truncated: the message has {len(data)} bytes, fewer than the 5-byte "
                              "Schema Registry header")
            if data[0] != wire.MAGIC_BYTE:
                return None, (f"unknown magic byte {data[0]:#04x} (expected 0x00): not written by a "
                              "Schema Registry serializer")
            schema_id = int.from_bytes(data[1:HEADER_SIZE], "big")
            by_indexes = names.get(schema_id)
            if by_indexes is None:
                return None, (f"unknown schema id {schema_id}: not a Protobuf writer schema this decoder "
                              f"knows (ids {', '.join(map(str, sorted(names)))}). If it was registered after "
                              "the query started, restart the query, or decode in foreachBatch with "
                              "ProtobufDecoder.for_each_batch, which learns new ids")
            try:
                indexes, offset = protobuf_wire.read_indexes(data)
            except Exception as exc:  # noqa: BLE001 - becomes the record's reason
                return None, f"bad message indexes (writer schema id {schema_id}): {exc}"
            written = by_indexes.get(indexes)
            if written != message:
                return None, (f"message type {written or indexes} (writer schema id {schema_id}) is "
                              f"not the reader's {message}")
            cls = _message_class(reader_bytes, message)
            try:
                instance = cls.FromString(data[offset:])
            except DecodeError as exc:
                return None, (f"truncated or corrupt payload: {len(data) - offset} bytes of Protobuf do "
                              f"not parse with writer schema id {schema_id}: {exc}")
            return _message_reader(cls.DESCRIPTOR)(instance), None

        return F.udf(decode_one, result_type)

    def decode(self, df: DataFrame, column: str = "value", *, into: str | None = None,
               error_column: str | None = None, mode: DecodeMode | str = DecodeMode.FAILFAST
               ) -> DataFrame:
        """`df` plus a struct column `into` (default ``<column>_decoded``) of the reader
        message's Spark type; PERMISSIVE also a string column `error_column` (default
        ``<column>_error``). As `AvroDecoder.decode`; lazy, static or streaming."""
        mode = DecodeMode(mode)
        into = into or f"{column}_decoded"
        error_column = error_column or f"{column}_error"
        if mode is DecodeMode.PERMISSIVE and column in (into, error_column):
            raise ValueError(f"PERMISSIVE keeps the raw bytes in {column!r}: choose other column names")
        staged = f"__{into}_staged"
        parsed = df.withColumn(staged, self._udf()(F.col(column)))
        error = F.col(staged)["error"]
        if mode is DecodeMode.PERMISSIVE:
            out = {into: F.col(staged)["value"], error_column: error}
        else:
            failure = F.concat(F.lit(f"registry.spark: cannot decode column {column!r}: "), error,
                               F.lit(". Decode with mode=PERMISSIVE to route bad records to an error column."))
            out = {into: F.when(error.isNull(), F.col(staged)["value"]).otherwise(F.raise_error(failure))}
        return parsed.withColumns(out).drop(staged)

    def for_each_batch(self, fn: Callable[[DataFrame, int], None], column: str = "value", *,
                       into: str | None = None, error_column: str | None = None,
                       mode: DecodeMode | str = DecodeMode.FAILFAST, persist: bool = True
                       ) -> BatchDecoding:
        """A ``foreachBatch`` function learning each micro-batch's new writer ids first."""
        return BatchDecoding(self, fn, column, into=into, error_column=error_column,  # type: ignore[arg-type]
                             mode=DecodeMode(mode), persist=persist)


class ProtobufEncoder:
    """Writes a struct column as Confluent-framed Protobuf with one registered schema's
    message: header, message indexes, the message's bytes. Struct fields match the
    message's fields by name; a null struct is a null value. Runs a Python UDF (see
    the module docstring). Building one blocks on the registry (once)."""

    def __init__(self, schema_id: int, schema_set: descriptor_pb2.FileDescriptorSet,
                 message: str | None = None) -> None:
        names = _message_names(schema_set.file[-1])
        by_name = {name: indexes for indexes, name in names.items()}
        if message is None:
            message = names.get((0,))
        if message not in by_name:
            raise ValueError(f"the schema has no message {message!r}")
        self.schema_id = schema_id
        self.message = message
        self._set_bytes = schema_set.SerializeToString()
        self._prefix = wire.header(schema_id) + protobuf_wire.encode_indexes(by_name[message])

    @classmethod
    def for_subject(cls, client: Any, subject: str, version: Version = "latest", *,
                    message: str | None = None) -> ProtobufEncoder:
        """Write with `subject`'s `version` (read now and kept)."""
        lookup = SchemaLookup(client)
        registered = lookup.by_version(subject, version)
        return cls(registered.schema_id, _registered(lookup, registered.schema), message)

    @classmethod
    def for_schema_id(cls, client: Any, schema_id: int, *, message: str | None = None) -> ProtobufEncoder:
        lookup = SchemaLookup(client)
        return cls(schema_id, _registered(lookup, lookup.by_id(schema_id)), message)

    def encode(self, data: Column | str) -> Column:
        """A binary column: `data` (a struct column, or its name) framed as Confluent Protobuf."""
        column = F.col(data) if isinstance(data, str) else data
        set_bytes, message, prefix = self._set_bytes, self.message, self._prefix

        def encode_one(row: Any) -> bytes | None:
            if row is None:
                return None
            cls = _message_class(set_bytes, message)
            return prefix + cls(**_message_writer(cls.DESCRIPTOR)(row)).SerializeToString()

        return F.udf(encode_one, T.BinaryType())(column)
