"""Avro serializer and deserializer for confluent-kafka, in Confluent's wire format.

Drop-ins for `confluent_kafka.schema_registry.avro.AvroSerializer` and
`AvroDeserializer`: the same constructors, configuration keys and callable interface
`(obj, SerializationContext) -> bytes` / `(bytes, SerializationContext) -> obj`, so
they go straight into `SerializingProducer` / `DeserializingConsumer`::

    serializer = AvroSerializer(client, schema_str, conf={"auto.register.schemas": True})
    producer = SerializingProducer({"bootstrap.servers": brokers, "value.serializer": serializer})

`client` may be ours (`registry.client.SchemaRegistryClient`) or confluent-kafka's.

Where the time goes: nowhere but the Avro codec. The registry is asked once per
(subject, schema), not per message; the schema is parsed once; the 5-byte header is
built once per schema id; and each message is one dict lookup plus one call into
fastavro's encoder or the compiled decoder (see `avro_codec`). The deserializer keys its per-id
decoders by the header bytes, so the magic-byte check, the id and the decoder come
from a single lookup. `serialize_batch` / `deserialize_batch` hoist even that out of
the loop.

Not supported: confluent-kafka's data-contract rules (`rule_conf`, `rule_registry`,
`validation.rules.*`), `use.latest.with.metadata` and schema GUIDs in headers; this
registry has none of them. Passing them raises ValueError.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import schema_registry as confluent
from confluent_kafka.schema_registry import RegisteredSchema, Schema
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import SerializationContext, SerializationError

from registry.client.lookup import BadReference, SchemaLookup
from registry.serde import avro_codec, naming, wire
from registry.serde import metrics as serde_metrics
from registry.serde.avro_codec import Decode, Encode, ParsedSchema
from registry.serde.wire import HEADER_SIZE, TruncatedPayload, UnknownSchemaId

ToDict = Callable[[Any, SerializationContext | None], Any]
FromDict = Callable[[Any, SerializationContext | None], Any]

_PREFIX_ID_SERDES = (None, confluent.prefix_schema_id_serializer, confluent.prefix_schema_id_deserializer,
                     confluent.dual_schema_id_deserializer)


def _schema_of(schema_str: str | Schema | None) -> Schema | None:
    if schema_str is None:
        return None
    if isinstance(schema_str, Schema):
        return schema_str
    if isinstance(schema_str, str):
        text = schema_str.strip()
        if text[:1] not in ("{", "["):
            # A primitive: registered as {"type": ...}, the text confluent-kafka registers.
            text = '{"type":' + (text if text.startswith('"') else f'"{text}"') + "}"
        return Schema(text, "AVRO")
    raise TypeError("schema_str must be a str, a Schema or None")


def _flag(conf: dict[str, Any], key: str) -> bool:
    value = conf.pop(key)
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be a boolean value")
    return value


def _take_unsupported(conf: dict[str, Any]) -> None:
    """Pop the confluent-kafka keys we accept only at their defaults."""
    if conf.pop("use.latest.with.metadata", None) is not None:
        raise ValueError("use.latest.with.metadata is not supported: this registry has no schema metadata")
    conf.pop("subject.name.strategy.conf", None)
    for key in ("schema.id.serializer", "schema.id.deserializer"):
        if conf.pop(key, None) not in _PREFIX_ID_SERDES:
            raise ValueError(f"{key}: only the schema id prefix (Confluent's wire format) is supported")
    execution = conf.pop("validation.rules.execution", None)
    if execution is not None and str(getattr(execution, "value", execution)).upper() != "DISABLED":
        raise ValueError("validation.rules.execution is not supported: this registry has no rules")
    conf.pop("validation.rules.fail.fast", None)
    if conf.pop("validation.rules.executor", None) is not None:
        raise ValueError("validation.rules.executor is not supported: this registry has no rules")


def _check_no_rules(rule_conf: Any, rule_registry: Any) -> None:
    if rule_conf is not None or rule_registry is not None:
        raise ValueError("data-contract rules are not supported: this registry has no rules")


class _SchemaSource:
    """Parsed schemas for one serde: the registry's by id, and local ones by `Schema`
    value, their references resolved. Reads the registry only through the client side's
    shared `SchemaLookup` (each id and referenced version fetched once); keeps what it
    parsed. Thread-safe."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.lookup = SchemaLookup(client)
        self._by_id: dict[int, ParsedSchema] = {}
        self._by_schema: dict[Schema, ParsedSchema] = {}
        self._lock = threading.Lock()

    def parsed(self, schema: Schema) -> ParsedSchema:
        """`schema` parsed, after the schemas its references name (fetched from the registry)."""
        found = self._by_schema.get(schema)
        if found is None:
            if schema.schema_str is None:
                raise SerializationError("the registry returned a schema without text")
            try:
                referenced = self.lookup.referenced(schema)
            except BadReference as exc:
                raise SerializationError(str(exc)) from exc
            found = avro_codec.parse(avro_codec.loads(schema.schema_str),
                                     [avro_codec.loads(ref.schema.schema_str) for ref in referenced])
            with self._lock:
                self._by_schema[schema] = found
        return found

    def by_id(self, schema_id: int) -> ParsedSchema:
        """The registry's schema `schema_id`, parsed. Raises UnknownSchemaId for an id the
        registry does not have; other registry errors propagate."""
        found = self._by_id.get(schema_id)
        if found is None:
            try:
                schema = self.lookup.by_id(schema_id)
            except SchemaRegistryError as exc:
                if exc.http_status_code == 404:
                    raise UnknownSchemaId(
                        f"schema id {schema_id} is not in the schema registry ({exc.error_message}): "
                        "the message was written against another registry, or its schema was "
                        "hard-deleted") from exc
                raise
            found = self.parsed(schema)
            with self._lock:
                self._by_id[schema_id] = found
        return found


class AvroSerializer:
    """Serializes dicts (or objects, through `to_dict`) to Confluent-framed Avro.

    Configuration (`conf`), as confluent-kafka's:

    * ``auto.register.schemas`` (default True): register the schema under the subject
      on first use; if False, look its id up and fail if it is not registered.
    * ``normalize.schemas`` (default False): ask the registry to normalize it first.
    * ``use.schema.id`` (int): write with this registered schema, whatever `schema_str` says.
    * ``use.latest.version`` (default False): write with the subject's latest version
      (re-read when the client's ``cache.latest.ttl.sec`` expires). Excludes
      ``auto.register.schemas``.
    * ``subject.name.strategy`` (callable) or ``subject.name.strategy.type`` (TOPIC,
      RECORD, TOPIC_RECORD); TopicNameStrategy by default.
    * ``validate.strict`` / ``validate.strict.allow.default``: fastavro's strict mode.
    * ``metrics.registry`` (ours): a prometheus-client CollectorRegistry to count into
      (`registry.serde.metrics`).

    Calls block on the registry only the first time a subject (or, with
    ``use.latest.version``, a new latest schema) is seen. They raise what fastavro
    raises for an object that does not fit the schema (TypeError, ValueError, ...),
    SchemaRegistryError when registration or lookup fails, and SerializationError for
    a configuration that cannot name a subject. Thread-safe.
    """

    _default_conf: dict[str, Any] = {
        "auto.register.schemas": True,
        "normalize.schemas": False,
        "use.schema.id": None,
        "use.latest.version": False,
        "subject.name.strategy": None,
        "subject.name.strategy.type": None,
        "validate.strict": False,
        "validate.strict.allow.default": False,
    }

    def __init__(self, schema_registry_client: Any, schema_str: str | Schema | None = None,
                 to_dict: ToDict | None = None, conf: dict[str, Any] | None = None,
                 rule_conf: dict[str, Any] | None = None, rule_registry: Any = None) -> None:
        _check_no_rules(rule_conf, rule_registry)
        if to_dict is not None and not callable(to_dict):
            raise ValueError("to_dict must be callable with the signature "
                             "to_dict(object, SerializationContext)->dict")
        conf_copy = dict(self._default_conf)
        conf_copy.update(conf or {})
        self._auto_register = _flag(conf_copy, "auto.register.schemas")
        self._normalize = _flag(conf_copy, "normalize.schemas")
        self._use_latest = _flag(conf_copy, "use.latest.version")
        self._use_schema_id: int | None = conf_copy.pop("use.schema.id")
        if self._use_schema_id is not None and (not isinstance(self._use_schema_id, int)
                                                 or isinstance(self._use_schema_id, bool)):
            raise ValueError("use.schema.id must be an int value")
        if self._use_latest and self._auto_register:
            raise ValueError("cannot enable both use.latest.version and auto.register.schemas")
        self._strategy = naming.strategy_from_conf(conf_copy.pop("subject.name.strategy"),
                                                   conf_copy.pop("subject.name.strategy.type"))
        self._strict = _flag(conf_copy, "validate.strict")
        self._strict_allow_default = _flag(conf_copy, "validate.strict.allow.default")
        self._metrics = serde_metrics.from_conf(conf_copy, "serialize")
        _take_unsupported(conf_copy)
        if conf_copy:
            raise ValueError(f"Unrecognized properties: {', '.join(conf_copy)}")

        self._client = schema_registry_client
        self._to_dict = to_dict
        self._schemas = _SchemaSource(schema_registry_client)
        self._schema = _schema_of(schema_str)
        self._parsed: ParsedSchema | None = None
        if self._schema is not None:
            self._parsed = self._schemas.parsed(self._schema)
        elif self._use_schema_id is None and not self._use_latest:
            raise ValueError("schema_str is required unless use.schema.id or use.latest.version is set")
        self._record_name = self._parsed.name if self._parsed is not None else None

        self._lock = threading.Lock()
        self._by_id: dict[int, Encode] = {}            # one encoder per schema id
        self._by_subject: dict[str, Encode] = {}       # subject -> encoder, once resolved
        # The per-message route: ctx.field -> ctx.topic -> encoder, for strategies whose
        # subject depends on nothing else. Filled lazily; never for use.latest.version.
        self._routes: dict[Any, dict[str, Encode]] = {}
        self._constant: Encode | None = None           # RecordNameStrategy: one encoder for all
        self._dependence = naming.dependence(self._strategy)
        self._cacheable = not self._use_latest

    # ---- per message -------------------------------------------------------------------

    def __call__(self, obj: Any, ctx: SerializationContext | None = None) -> bytes | None:
        """`obj` as magic byte, schema id and Avro binary; None for None."""
        if obj is None:
            return None
        if self._to_dict is not None:
            obj = self._to_dict(obj, ctx)
        encode = self._constant
        if encode is None:
            routes = self._routes.get(ctx.field) if ctx is not None else None
            encode = routes.get(ctx.topic) if routes is not None else None  # type: ignore[union-attr]
            if encode is None:
                encode = self._encoder_for(ctx)
        return encode(obj)

    def serialize_batch(self, objs: Iterable[Any],
                        ctx: SerializationContext | None = None) -> list[bytes | None]:
        """Each of `objs` serialized as `__call__` would, the subject resolved once for the batch."""
        encode = self._encoder_for(ctx)
        to_dict = self._to_dict
        if to_dict is None:
            return [None if obj is None else encode(obj) for obj in objs]
        return [None if obj is None else encode(to_dict(obj, ctx)) for obj in objs]

    # ---- once per subject ----------------------------------------------------------------

    def _subject(self, ctx: SerializationContext | None) -> str:
        subject = self._strategy(ctx, self._record_name)
        if subject is None:
            raise SerializationError("the subject name strategy gave no subject: the record name is "
                                     "unknown (no schema_str) or the schema has no name")
        return subject

    def _encoder_for(self, ctx: SerializationContext | None) -> Encode:
        """The encoder for the subject `ctx` maps to; registers or looks the schema up
        the first time. Blocks on the registry only then."""
        subject = self._subject(ctx)
        if self._use_latest and self._use_schema_id is None:
            latest: RegisteredSchema = self._client.get_latest_version(subject)
            return self._encoder_by_id(latest.schema_id, lambda: self._schemas.parsed(latest.schema))
        encode = self._by_subject.get(subject)
        if encode is None:
            with self._lock:
                encode = self._by_subject.get(subject)
                if encode is None:
                    encode = self._resolve(subject)
                    self._by_subject[subject] = encode
        if self._cacheable:
            if self._dependence is naming.Dependence.NOTHING:
                self._constant = encode
            elif self._dependence is naming.Dependence.TOPIC_AND_FIELD and ctx is not None:
                self._routes.setdefault(ctx.field, {})[ctx.topic] = encode
        return encode

    def _resolve(self, subject: str) -> Encode:
        if self._use_schema_id is not None:
            schema_id = self._use_schema_id
            schema = self._client.get_schema(schema_id)
            # As confluent-kafka does: the id must be registered under this subject.
            self._client.lookup_schema(subject, schema, normalize_schemas=False, deleted=True)
            return self._encoder_by_id(schema_id, lambda: self._schemas.parsed(schema))
        assert self._schema is not None and self._parsed is not None
        if self._metrics is not None:
            self._metrics.looked_up()
        if self._auto_register:
            registered = self._client.register_schema_full_response(
                subject, self._schema, normalize_schemas=self._normalize)
        else:
            registered = self._client.lookup_schema(subject, self._schema, normalize_schemas=self._normalize)
        parsed = self._parsed
        return self._encoder_by_id(registered.schema_id, lambda: parsed)

    def _encoder_by_id(self, schema_id: int | None, parsed: Callable[[], ParsedSchema]) -> Encode:
        if schema_id is None:
            raise SerializationError("the registry answered without a schema id")
        encode = self._by_id.get(schema_id)
        if encode is None:
            encode = avro_codec.encoder(parsed(), wire.header(schema_id), strict=self._strict,
                                        strict_allow_default=self._strict_allow_default)
            if self._metrics is not None:
                encode = self._metrics.counting(encode)
            self._by_id[schema_id] = encode
        return encode


class AvroDeserializer:
    """Deserializes Confluent-framed Avro to dicts (or objects, through `from_dict`).

    With `schema_str` (the reader schema), data written with any compatible writer
    schema, older or newer, is resolved into the reader's shape (Avro schema
    resolution: added fields take their defaults, removed ones are skipped, types are
    promoted). Without it, data comes back in its writer's shape.

    Configuration (`conf`), as confluent-kafka's: ``use.latest.version`` (read into the
    subject's latest version, which needs a SerializationContext), and
    ``subject.name.strategy`` / ``subject.name.strategy.type`` (used only with it); and
    ours, ``metrics.registry`` (`registry.serde.metrics`).

    A call blocks on the registry only the first time it meets a schema id. It raises
    `wire.UnknownMagicByte`, `wire.TruncatedPayload` and `wire.UnknownSchemaId` (all
    SerializationError) for bad framing, short data and unknown ids, and
    SerializationError when the datum does not decode. Thread-safe.
    """

    _default_conf: dict[str, Any] = {
        "use.latest.version": False,
        "subject.name.strategy": None,
        "subject.name.strategy.type": None,
    }

    def __init__(self, schema_registry_client: Any, schema_str: str | Schema | None = None,
                 from_dict: FromDict | None = None, return_record_name: bool = False,
                 conf: dict[str, Any] | None = None, rule_conf: dict[str, Any] | None = None,
                 rule_registry: Any = None) -> None:
        _check_no_rules(rule_conf, rule_registry)
        if from_dict is not None and not callable(from_dict):
            raise ValueError("from_dict must be callable with the signature "
                             "from_dict(dict, SerializationContext) -> object")
        if not isinstance(return_record_name, bool):
            raise ValueError("return_record_name must be a boolean value")
        conf_copy = dict(self._default_conf)
        conf_copy.update(conf or {})
        self._use_latest = _flag(conf_copy, "use.latest.version")
        self._strategy = naming.strategy_from_conf(conf_copy.pop("subject.name.strategy"),
                                                   conf_copy.pop("subject.name.strategy.type"))
        self._metrics = serde_metrics.from_conf(conf_copy, "deserialize")
        _take_unsupported(conf_copy)
        if conf_copy:
            raise ValueError(f"Unrecognized properties: {', '.join(conf_copy)}")

        self._client = schema_registry_client
        self._from_dict = from_dict
        self._return_record_name = return_record_name
        self._schemas = _SchemaSource(schema_registry_client)
        schema = _schema_of(schema_str)
        self._reader: ParsedSchema | None = self._schemas.parsed(schema) if schema is not None else None
        self._lock = threading.Lock()
        # header bytes (magic byte + id) -> decoder into the reader's shape
        self._by_header: dict[bytes, Decode] = {}
        # (reader schema id, header bytes) -> decoder, for use.latest.version
        self._by_latest: dict[tuple[int, bytes], Decode] = {}

    # ---- per message -------------------------------------------------------------------

    def __call__(self, data: bytes | None, ctx: SerializationContext | None = None) -> Any:
        """The object `data` encodes; None for None."""
        # The common case first, as little as it needs (bench/serde.py: the wrapper around
        # the decoder is all a deserializer adds to it): a header seen before.
        # Anything else (None, a bytearray, a new id, use.latest.version, whose decoders
        # are never kept here) raises on the way and takes `_call_otherwise`.
        try:
            decode = self._by_header[data[:HEADER_SIZE]]  # type: ignore[index]
        except (KeyError, TypeError):
            return self._call_otherwise(data, ctx)
        try:
            obj = decode(data)
        except Exception as exc:
            raise _decode_error(data, exc) from exc
        from_dict = self._from_dict
        return obj if from_dict is None else from_dict(obj, ctx)

    def _call_otherwise(self, data: bytes | None, ctx: SerializationContext | None) -> Any:
        if data is None:
            return None
        if self._use_latest:
            decode = self._latest_decoder(data, ctx)
        else:
            if isinstance(data, (bytearray, memoryview)):  # their slices are unhashable
                data = bytes(data)
            decode = self._by_header.get(data[:HEADER_SIZE]) or self._decoder_for(data)
        try:
            obj = decode(data)
        except Exception as exc:
            raise _decode_error(data, exc) from exc
        if self._from_dict is not None:
            return self._from_dict(obj, ctx)
        return obj

    def deserialize_batch(self, datas: Iterable[bytes | None],
                          ctx: SerializationContext | None = None) -> list[Any]:
        """Each of `datas` deserialized as `__call__` would."""
        call = self.__call__
        return [call(data, ctx) for data in datas]

    # ---- once per schema id ----------------------------------------------------------

    def _decoder_for(self, data: bytes) -> Decode:
        """The decoder for `data`'s writer schema; fetches it from the registry the first time."""
        try:
            schema_id = wire.parse_header(data)
        except SerializationError:
            if self._metrics is not None:
                self._metrics.failed()
            raise
        key = bytes(data[:HEADER_SIZE])
        with self._lock:
            decode = self._by_header.get(key)
            if decode is None:
                writer = self._schemas.by_id(schema_id)
                decode = avro_codec.decoder(writer, self._reader, HEADER_SIZE,
                                            return_record_name=self._return_record_name)
                if self._metrics is not None:
                    self._metrics.looked_up()
                    decode = self._metrics.counting(decode)
                self._by_header[key] = decode
        return decode

    def _latest_decoder(self, data: bytes, ctx: SerializationContext | None) -> Decode:
        schema_id = wire.parse_header(data)
        key = bytes(data[:HEADER_SIZE])
        writer = self._schemas.by_id(schema_id)
        subject = self._strategy(ctx, None)
        if subject is None:  # a record strategy: name the subject after the writer's record
            subject = self._strategy(ctx, writer.name)
        if subject is None:
            raise SerializationError("use.latest.version needs a subject, and the strategy gave none")
        latest: RegisteredSchema = self._client.get_latest_version(subject)
        latest_id = latest.schema_id if latest.schema_id is not None else -1
        decode = self._by_latest.get((latest_id, key))
        if decode is None:
            reader = self._schemas.parsed(latest.schema)
            decode = avro_codec.decoder(writer, reader, HEADER_SIZE,
                                        return_record_name=self._return_record_name)
            if self._metrics is not None:
                self._metrics.looked_up()
                decode = self._metrics.counting(decode)
            with self._lock:
                self._by_latest[(latest_id, key)] = decode
        return decode


def _decode_error(data: bytes, exc: Exception) -> SerializationError:
    """What a deserializer raises when `data`'s datum cannot be read."""
    schema_id = int.from_bytes(data[1:HEADER_SIZE], "big")
    if isinstance(exc, EOFError):
        return TruncatedPayload(f"the message ends inside its Avro datum (schema id {schema_id}, "
                                f"{len(data)} bytes): {exc}")
    return SerializationError(f"cannot decode the Avro datum written with schema id {schema_id}: "
                              f"{type(exc).__name__}: {exc}")
