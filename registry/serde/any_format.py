"""One deserializer for every schema type, as Pulsar's AUTO_CONSUME.

    values = AnyFormatDeserializer(client)
    consumer = DeserializingConsumer({..., "value.deserializer": values})
    record = values(message_bytes, ctx)    # a dict, whichever format wrote it

It reads the schema id from the header, asks the registry (once per id) which
`schemaType` the writer used, and decodes with that format's deserializer:

| writer     | decoded as                                                         |
|------------|--------------------------------------------------------------------|
| AVRO       | the writer's shape, as `AvroDeserializer` without a reader schema  |
| JSON       | the JSON value, validated against the writer's schema (``validate``) |
| PROTOBUF   | a dict by protobuf's JSON mapping with the field names as declared, |
|            | every field present, 64-bit integers as ints, bytes as base64 text |

A call blocks on the registry the first time it meets a schema id, and raises what
the chosen deserializer raises (all SerializationError), or SerializationError for a
schema type it does not know. Thread-safe.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import SerializationContext, SerializationError
from google.protobuf import json_format

from registry.client.lookup import SchemaLookup
from registry.serde import wire
from registry.serde.avro import AvroDeserializer
from registry.serde.json_schema import JSONDeserializer
from registry.serde.protobuf import ProtobufDeserializer
from registry.serde.wire import HEADER_SIZE, UnknownSchemaId

Decode = Callable[[bytes, SerializationContext | None], Any]


class AnyFormatDeserializer:
    """Decodes Confluent-framed Avro, JSON Schema or Protobuf into plain Python values.

    `conf`: ``validate`` (True) for JSON Schema values, and ``use.deprecated.format``
    (False) for Protobuf message indexes.
    """

    def __init__(self, schema_registry_client: Any, conf: dict[str, Any] | None = None) -> None:
        conf = dict(conf or {})
        validate = conf.pop("validate", True)
        deprecated = conf.pop("use.deprecated.format", False)
        if conf:
            raise ValueError(f"Unrecognized properties: {', '.join(conf)}")
        self._lookup = SchemaLookup(schema_registry_client)
        avro = AvroDeserializer(schema_registry_client)
        json = JSONDeserializer(None, schema_registry_client=schema_registry_client,
                                conf={"validate": validate})
        protobuf = ProtobufDeserializer(None, {"use.deprecated.format": deprecated},
                                        schema_registry_client=schema_registry_client)

        def from_protobuf(data: bytes, ctx: SerializationContext | None) -> Any:
            return json_format.MessageToDict(protobuf(data, ctx), preserving_proto_field_name=True,
                                             always_print_fields_with_no_presence=True,
                                             unquote_int64_if_possible=True)

        self._by_type: dict[str, Decode] = {"AVRO": avro, "JSON": json, "PROTOBUF": from_protobuf}
        self._by_header: dict[bytes, Decode] = {}
        self._lock = threading.Lock()

    def __call__(self, data: bytes | None, ctx: SerializationContext | None = None) -> Any:
        """The value `data` encodes; None for None."""
        if data is None:
            return None
        try:
            decode = self._by_header.get(data[:HEADER_SIZE])
        except TypeError:  # bytearray or memoryview: their slices are unhashable
            data = bytes(data)
            decode = self._by_header.get(data[:HEADER_SIZE])
        if decode is None:
            decode = self._decoder_for(data)
        return decode(data, ctx)

    def deserialize_batch(self, datas: Iterable[bytes | None],
                          ctx: SerializationContext | None = None) -> list[Any]:
        """Each of `datas` deserialized as `__call__` would."""
        call = self.__call__
        return [call(data, ctx) for data in datas]

    def schema_type(self, schema_id: int) -> str:
        """The writer's schemaType for `schema_id` (AVRO when the registry omits it)."""
        try:
            schema = self._lookup.by_id(schema_id)
        except SchemaRegistryError as exc:
            if exc.http_status_code == 404:
                raise UnknownSchemaId(f"schema id {schema_id} is not in the schema registry "
                                      f"({exc.error_message})") from exc
            raise
        return (schema.schema_type or "AVRO").upper()

    def _decoder_for(self, data: bytes) -> Decode:
        schema_id = wire.parse_header(data)
        kind = self.schema_type(schema_id)
        decode = self._by_type.get(kind)
        if decode is None:
            raise SerializationError(f"schema id {schema_id} is of type {kind}, which this "
                                     "deserializer cannot decode")
        with self._lock:
            self._by_header[bytes(data[:HEADER_SIZE])] = decode
        return decode
