"""JSON Schema serializer and deserializer for confluent-kafka, in Confluent's wire format.

Drop-ins for `confluent_kafka.schema_registry.json_schema.JSONSerializer` and
`JSONDeserializer`: the same constructors, configuration keys and callables::

    serializer = JSONSerializer(schema_str, client, to_dict=order_to_dict)
    deserializer = JSONDeserializer(None, schema_registry_client=client)

A message is the 5-byte header and the value as compact JSON (orjson, as
confluent-kafka writes it), so either side may be confluent-kafka's.

Where the time goes: validation (`validate`, on by default on both sides, as in
confluent-kafka), which is jsonschema's, with a validator built once per schema; the
header is built once per subject and the subject found in one or two dict lookups.
Without validation a message costs one orjson call and a concatenation (or, reading,
one orjson call on a view of the payload, no copy).

`$ref`s to other registered schemas resolve by the reference's name, as in Confluent;
nothing is fetched over the network. Not supported: data-contract rules,
`use.latest.with.metadata`, schema GUIDs.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

import orjson
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import SerializationContext, SerializationError
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from referencing import Registry, Resource
from referencing.jsonschema import specification_with

from registry.client.lookup import BadReference, SchemaLookup
from registry.schema_types.json_schema.drafts import OFFLINE_REGISTRY, VALIDATOR_CLASSES, draft_of
from registry.serde import naming, wire
from registry.serde.avro import _check_no_rules, _flag, _take_unsupported
from registry.serde.subject_routes import SubjectRoutes
from registry.serde.wire import HEADER_SIZE, UnknownSchemaId

ToDict = Callable[[Any, SerializationContext | None], Any]
FromDict = Callable[[Any, SerializationContext | None], Any]

_SPECIFICATIONS = {
    "draft-04": "http://json-schema.org/draft-04/schema#",
    "draft-06": "http://json-schema.org/draft-06/schema#",
    "draft-07": "http://json-schema.org/draft-07/schema#",
    "draft 2019-09": "https://json-schema.org/draft/2019-09/schema",
    "draft 2020-12": "https://json-schema.org/draft/2020-12/schema",
}


def _schema_of(schema_str: str | Schema | None) -> Schema | None:
    if schema_str is None or isinstance(schema_str, Schema):
        return schema_str
    if isinstance(schema_str, str):
        return Schema(schema_str, "JSON")
    raise TypeError("schema_str must be a str, a Schema or None")


def _document(text: str | None) -> Any:
    if text is None:
        raise SerializationError("the registry returned a schema without text")
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise SerializationError(f"the JSON schema is not JSON: {exc}") from exc


class JsonSchemas:
    """Validators for JSON schemas, by `Schema` value and by registry id, their references
    resolved through the registry (each fetched once). Thread-safe."""

    def __init__(self, client: Any) -> None:
        self.lookup = SchemaLookup(client) if client is not None else None
        self._by_schema: dict[Schema, Validator] = {}
        self._by_id: dict[int, Validator] = {}
        self._lock = threading.Lock()

    def validator(self, schema: Schema) -> Validator:
        """A validator for `schema` (its references fetched from the registry); blocks on
        the registry the first time. Raises SerializationError for a schema that is not
        JSON or a reference that cannot be resolved."""
        found = self._by_schema.get(schema)
        if found is None:
            document = _document(schema.schema_str)
            registry: Registry = OFFLINE_REGISTRY
            if schema.references:
                if self.lookup is None:
                    raise SerializationError("the schema has references: a schema registry client is needed")
                try:
                    referenced = self.lookup.referenced(schema)
                except BadReference as exc:
                    raise SerializationError(str(exc)) from exc
                draft = draft_of(document)
                resources = []
                for ref in referenced:
                    contents = _document(ref.schema.schema_str)
                    spec = specification_with(_SPECIFICATIONS[draft_of(contents).value]
                                               if isinstance(contents, dict) and "$schema" in contents
                                               else _SPECIFICATIONS[draft.value])
                    resources.append((ref.name, Resource(contents=contents, specification=spec)))
                registry = registry.with_resources(resources)
            found = VALIDATOR_CLASSES[draft_of(document)](document, registry=registry)
            with self._lock:
                self._by_schema[schema] = found
        return found

    def by_id(self, schema_id: int) -> Validator:
        """A validator for the registry's schema `schema_id`. Raises UnknownSchemaId."""
        found = self._by_id.get(schema_id)
        if found is None:
            assert self.lookup is not None
            try:
                schema = self.lookup.by_id(schema_id)
            except SchemaRegistryError as exc:
                if exc.http_status_code == 404:
                    raise UnknownSchemaId(f"schema id {schema_id} is not in the schema registry "
                                          f"({exc.error_message})") from exc
                raise
            found = self.validator(schema)
            with self._lock:
                self._by_id[schema_id] = found
        return found


class JSONSerializer:
    """Serializes dicts (or objects, through `to_dict`) to Confluent-framed JSON.

    Configuration (`conf`), as confluent-kafka's: ``auto.register.schemas`` (True),
    ``normalize.schemas`` (False), ``use.schema.id``, ``use.latest.version`` (False),
    ``subject.name.strategy`` / ``.type`` (the record name is the schema's ``title``),
    ``validate`` (True: a value the schema rejects raises SerializationError).
    `json_encode` replaces orjson (it must return str or bytes).

    A call blocks on the registry only the first time a subject is seen (with
    ``use.latest.version``, whenever the client's latest-version cache expires); raises
    SchemaRegistryError when registration or lookup fails. Thread-safe.
    """

    _default_conf: dict[str, Any] = {
        "auto.register.schemas": True,
        "normalize.schemas": False,
        "use.schema.id": None,
        "use.latest.version": False,
        "subject.name.strategy": None,
        "subject.name.strategy.type": None,
        "validate": True,
    }

    def __init__(self, schema_str: str | Schema | None, schema_registry_client: Any,
                 to_dict: ToDict | None = None, conf: dict[str, Any] | None = None,
                 rule_conf: dict[str, Any] | None = None, rule_registry: Any = None,
                 json_encode: Callable[[Any], str | bytes] | None = None) -> None:
        _check_no_rules(rule_conf, rule_registry)
        if to_dict is not None and not callable(to_dict):
            raise ValueError("to_dict must be callable with the signature "
                             "to_dict(object, SerializationContext)->dict")
        conf_copy = dict(self._default_conf)
        conf_copy.update(conf or {})
        self._auto_register = _flag(conf_copy, "auto.register.schemas")
        self._normalize = _flag(conf_copy, "normalize.schemas")
        self._use_latest = _flag(conf_copy, "use.latest.version")
        self._validate = _flag(conf_copy, "validate")
        self._use_schema_id: int | None = conf_copy.pop("use.schema.id")
        if self._use_schema_id is not None and (not isinstance(self._use_schema_id, int)
                                                 or isinstance(self._use_schema_id, bool)):
            raise ValueError("use.schema.id must be an int value")
        if self._use_latest and self._auto_register:
            raise ValueError("cannot enable both use.latest.version and auto.register.schemas")
        strategy = naming.strategy_from_conf(conf_copy.pop("subject.name.strategy"),
                                             conf_copy.pop("subject.name.strategy.type"))
        _take_unsupported(conf_copy)
        if conf_copy:
            raise ValueError(f"Unrecognized properties: {', '.join(conf_copy)}")

        self._client = schema_registry_client
        self._to_dict = to_dict
        self._encode = json_encode
        self._schemas = JsonSchemas(schema_registry_client)
        self._schema = _schema_of(schema_str)
        record_name = None
        if self._schema is not None:
            document = _document(self._schema.schema_str)
            record_name = document.get("title") if isinstance(document, dict) else None
        elif self._use_schema_id is None and not self._use_latest:
            raise ValueError("schema_str is required unless use.schema.id or use.latest.version is set")
        # subject -> (header, validator or None)
        self._routes: SubjectRoutes[tuple[bytes, Validator | None]] = SubjectRoutes(
            strategy, record_name, self._resolve, cacheable=not self._use_latest)

    def __call__(self, obj: Any, ctx: SerializationContext | None = None) -> bytes | None:
        """`obj` as magic byte, schema id and JSON; None for None."""
        if obj is None:
            return None
        if self._to_dict is not None:
            obj = self._to_dict(obj, ctx)
        routes = self._routes
        found = routes.constant
        if found is None:
            by_topic = routes.by_field.get(ctx.field) if ctx is not None else None
            found = by_topic.get(ctx.topic) if by_topic is not None else None  # type: ignore[union-attr]
            if found is None:
                found = routes.get(ctx)
        header, validator = found
        if validator is not None:
            try:
                validator.validate(obj)
            except ValidationError as exc:
                raise SerializationError(exc.message) from exc
        if self._encode is None:
            try:
                return header + orjson.dumps(obj)
            except TypeError as exc:
                raise SerializationError(f"cannot encode the value as JSON: {exc}") from exc
        encoded = self._encode(obj)
        return header + (encoded.encode("utf-8") if isinstance(encoded, str) else encoded)

    def serialize_batch(self, objs: Iterable[Any], ctx: SerializationContext | None = None
                        ) -> list[bytes | None]:
        """Each of `objs` serialized as `__call__` would."""
        call = self.__call__
        return [call(obj, ctx) for obj in objs]

    def _resolve(self, subject: str) -> tuple[bytes, Validator | None]:
        if self._use_schema_id is not None:
            schema_id: int | None = self._use_schema_id
            schema = self._client.get_schema(schema_id)
        elif self._use_latest:
            latest = self._client.get_latest_version(subject)
            schema_id, schema = latest.schema_id, latest.schema
        else:
            assert self._schema is not None
            schema = self._schema
            if self._auto_register:
                registered = self._client.register_schema_full_response(
                    subject, schema, normalize_schemas=self._normalize)
            else:
                registered = self._client.lookup_schema(subject, schema, normalize_schemas=self._normalize)
            schema_id = registered.schema_id
        if schema_id is None:
            raise SerializationError("the registry answered without a schema id")
        validator = self._schemas.validator(schema) if self._validate else None
        return wire.header(schema_id), validator


class JSONDeserializer:
    """Deserializes Confluent-framed JSON to dicts (or objects, through `from_dict`).

    With ``validate`` (True, as in confluent-kafka) each value is validated against
    `schema_str` if given, else against the writer's schema from the registry (when a
    client is given); a value either rejects raises SerializationError. Without
    validation no registry is needed. `json_decode` replaces orjson.

    Configuration (`conf`): ``validate``, and confluent-kafka's ``use.latest.version``
    / ``subject.name.strategy`` / ``.type``, accepted and unused (there they choose
    migration rules, which this registry has not).

    Raises `wire.UnknownMagicByte`, `wire.TruncatedPayload`, `wire.UnknownSchemaId` and
    SerializationError for a payload that is not JSON. Thread-safe.
    """

    _default_conf: dict[str, Any] = {
        "use.latest.version": False,
        "subject.name.strategy": None,
        "subject.name.strategy.type": None,
        "validate": True,
    }

    def __init__(self, schema_str: str | Schema | None, from_dict: FromDict | None = None,
                 schema_registry_client: Any = None, conf: dict[str, Any] | None = None,
                 rule_conf: dict[str, Any] | None = None, rule_registry: Any = None,
                 json_decode: Callable[[Any], Any] | None = None) -> None:
        _check_no_rules(rule_conf, rule_registry)
        if from_dict is not None and not callable(from_dict):
            raise ValueError("from_dict must be callable with the signature "
                             "from_dict(dict, SerializationContext) -> object")
        conf_copy = dict(self._default_conf)
        conf_copy.update(conf or {})
        _flag(conf_copy, "use.latest.version")
        naming.strategy_from_conf(conf_copy.pop("subject.name.strategy"),
                                  conf_copy.pop("subject.name.strategy.type"))
        validate = _flag(conf_copy, "validate")
        _take_unsupported(conf_copy)
        if conf_copy:
            raise ValueError(f"Unrecognized properties: {', '.join(conf_copy)}")
        self._from_dict = from_dict
        self._decode = json_decode or orjson.loads
        # orjson reads a view of the payload without copying it; json_decode gets bytes,
        # as confluent-kafka hands it.
        self._view = json_decode is None
        self._schemas = JsonSchemas(schema_registry_client)
        schema = _schema_of(schema_str)
        self._reader = self._schemas.validator(schema) if validate and schema is not None else None
        self._by_writer = validate and schema is None and schema_registry_client is not None
        # header bytes -> validator (or None), for headers seen before
        self._by_header: dict[bytes, Validator | None] = {}

    def __call__(self, data: bytes | None, ctx: SerializationContext | None = None) -> Any:
        """The value `data` encodes; None for None."""
        if data is None:
            return None
        try:
            validator = self._by_header.get(data[:HEADER_SIZE], self)
        except TypeError:  # bytearray or memoryview: their slices are unhashable
            data = bytes(data)
            validator = self._by_header.get(data[:HEADER_SIZE], self)
        if validator is self:
            validator = self._validator_for(data)
        try:
            obj = self._decode(memoryview(data)[HEADER_SIZE:] if self._view else data[HEADER_SIZE:])
        except (orjson.JSONDecodeError, ValueError, TypeError) as exc:
            raise SerializationError(f"the payload (schema id {int.from_bytes(data[1:HEADER_SIZE], 'big')}) "
                                     f"is not JSON: {exc}") from exc
        if validator is not None:
            try:
                validator.validate(obj)  # type: ignore[union-attr]
            except ValidationError as exc:
                raise SerializationError(exc.message) from exc
        if self._from_dict is not None:
            return self._from_dict(obj, ctx)
        return obj

    def deserialize_batch(self, datas: Iterable[bytes | None],
                          ctx: SerializationContext | None = None) -> list[Any]:
        """Each of `datas` deserialized as `__call__` would."""
        call = self.__call__
        return [call(data, ctx) for data in datas]

    def _validator_for(self, data: bytes) -> Validator | None:
        schema_id = wire.parse_header(data)
        validator = self._schemas.by_id(schema_id) if self._by_writer else self._reader
        self._by_header[bytes(data[:HEADER_SIZE])] = validator
        return validator
