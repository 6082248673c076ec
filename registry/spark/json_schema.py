"""Confluent-framed JSON Schema values in PySpark, batch and Structured Streaming, on the JVM.

    decoder = JsonSchemaDecoder.for_subject(client, "readings-value")   # reader: latest version
    readings = decoder.decode(kafka_df, "value", into="reading")        # + struct column "reading"
    encoder = JsonSchemaEncoder.for_subject(client, "readings-value")
    out = readings.select(encoder.encode("reading").alias("value"))

How it runs. The reader schema's Spark type is derived from the JSON Schema
(`spark_type_of`) and each payload parsed by Spark's own `from_json` into it; the
5-byte header is checked against the writer ids the decoder knows. JSON is
self-describing, so one parse serves every writer version: fields a writer lacks are
null, fields the reader lacks are skipped. No Python runs per row. Values are not
validated against the schema on the JVM: a payload that parses into the reader's
shape is a good record (validation is the serializer's job, as in Confluent).

JSON Schema to Spark (`spark_type_of`): an object with `properties` is a struct of
nullable fields in declaration order (`allOf` members' properties merged); an object
with only `additionalProperties: <schema>` a map of string to that; an array an array
of its `items`; string, integer, number, boolean are string, bigint, double, boolean;
`"type": [X, "null"]` and a `oneOf`/`anyOf` of X and null are X; an `enum` or `const`
of strings a string. Anything else (a union of several types, `{}`, a recursive
`$ref`) is a string column holding the value's JSON text, which Spark's `from_json`
keeps as written. `$ref`s resolve within the document (`#/definitions/...`,
`#/$defs/...`) and to referenced schemas by the reference's name.

Bad records, as `AvroDecoder`'s (FAILFAST fails the job naming the reason; PERMISSIVE
gives a null struct and the reason in an error column):

* ``truncated: ...``, ``unknown magic byte 0x..``, ``unknown schema id N``;
* ``malformed payload``: not JSON, or JSON that does not fit the reader's shape (a
  string where a number belongs, an array where an object does).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import orjson
from confluent_kafka.schema_registry import Schema
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from registry.client.lookup import SchemaLookup, Version
from registry.serde import wire
from registry.serde.wire import HEADER_SIZE
from registry.spark.decode import BatchDecoding, DecodeMode

__all__ = ["JsonSchemaDecoder", "JsonSchemaEncoder", "SchemaNotJson", "spark_type_of"]

_MAGIC = bytearray([wire.MAGIC_BYTE])
_TO_END = 2**31 - 1
_CORRUPT = "__registry_spark_corrupt"
_MAX_DEPTH: Final = 64
_SCALARS: Final = {"string": T.StringType(), "integer": T.LongType(), "number": T.DoubleType(),
                   "boolean": T.BooleanType()}


class SchemaNotJson(ValueError):
    """The registry returned a schema that is not JSON Schema."""


def spark_type_of(document: Any, references: Mapping[str, Any] | None = None) -> T.DataType:
    """The Spark type a JSON Schema's values are read as (see the module docstring).

    `references` maps each reference name to its schema document. Work is linear in the
    schema's size per use of a definition; nesting deeper than 64 becomes a JSON text
    column, and so does a recursive `$ref`.
    """
    return _Deriver(document, references or {}).of(document, document, (), 0)


class _Deriver:
    def __init__(self, root: Any, references: Mapping[str, Any]) -> None:
        self.root = root
        self.references = references

    def of(self, schema: Any, root: Any, refs: tuple[str, ...], depth: int) -> T.DataType:
        if not isinstance(schema, dict) or depth > _MAX_DEPTH:
            return T.StringType()
        ref = schema.get("$ref")
        if isinstance(ref, str):
            if ref in refs:
                return T.StringType()  # recursive: its JSON text
            target, target_root = self.resolve(ref, root)
            return self.of(target, target_root, (*refs, ref), depth + 1)
        for keyword in ("oneOf", "anyOf"):
            members = schema.get(keyword)
            if isinstance(members, list):
                useful = [m for m in members if not _is_null(m)]
                if len(useful) == 1:
                    return self.of(useful[0], root, refs, depth + 1)
                return T.StringType()
        kind = schema.get("type")
        if isinstance(kind, list):
            useful = [k for k in kind if k != "null"]
            kind = useful[0] if len(useful) == 1 else None
            if kind is None:
                return T.StringType()
        if kind is None and ("properties" in schema or "allOf" in schema):
            kind = "object"
        if kind is None and "items" in schema:
            kind = "array"
        if kind is None:
            for keyword in ("enum", "const"):
                values = schema.get(keyword) if keyword == "enum" else [schema.get(keyword)]
                if keyword in schema and isinstance(values, list) and values:
                    if all(isinstance(v, bool) for v in values):
                        return T.BooleanType()
                    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
                        return T.LongType()
                    return T.StringType()
            return T.StringType()
        if kind in _SCALARS:
            return _SCALARS[kind]
        if kind == "array":
            items = schema.get("items")
            return T.ArrayType(self.of(items, root, refs, depth + 1) if isinstance(items, dict)
                               else T.StringType())
        if kind == "object":
            return self.object(schema, root, refs, depth)
        return T.StringType()

    def object(self, schema: dict[str, Any], root: Any, refs: tuple[str, ...], depth: int) -> T.DataType:
        properties: dict[str, Any] = {}
        parts = [schema] + [m for m in schema.get("allOf", []) if isinstance(m, dict)]
        for part in parts:
            while isinstance(part.get("$ref"), str) and part["$ref"] not in refs and depth < _MAX_DEPTH:
                part, root = self.resolve(part["$ref"], root)
                depth += 1
                if not isinstance(part, dict):
                    break
            if isinstance(part, dict) and isinstance(part.get("properties"), dict):
                for name, sub in part["properties"].items():
                    properties.setdefault(name, (sub, root))
        if properties:
            return T.StructType([T.StructField(name, self.of(sub, sub_root, refs, depth + 1), True)
                                 for name, (sub, sub_root) in properties.items()])
        extra = schema.get("additionalProperties")
        value = self.of(extra, root, refs, depth + 1) if isinstance(extra, dict) else T.StringType()
        return T.MapType(T.StringType(), value, True)

    def resolve(self, ref: str, root: Any) -> tuple[Any, Any]:
        """The schema `ref` points to, and the document it lies in."""
        address, _, pointer = ref.partition("#")
        document = root
        if address:
            document = self.references.get(address, self.references.get(address.removeprefix("./")))
            if document is None:
                return {}, root
        target = document
        for token in (t for t in pointer.split("/") if t):
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and token in target:
                target = target[token]
            elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
                target = target[int(token)]
            else:
                return {}, document
        return target, document


def _is_null(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null"


def _registered_json(lookup: SchemaLookup, schema: Schema) -> tuple[Any, dict[str, Any]]:
    if (schema.schema_type or "AVRO").upper() != "JSON":
        raise SchemaNotJson(f"the schema is {schema.schema_type or 'AVRO'}, not JSON Schema")
    references = {ref.name: orjson.loads(ref.schema.schema_str or "null") for ref in lookup.referenced(schema)}
    return orjson.loads(schema.schema_str or "null"), references


class JsonSchemaDecoder:
    """Decodes Confluent-framed JSON with one reader schema and a set of writer ids.

    Immutable: `with_writer_ids` and `learn_writers` return a new decoder. Building
    one blocks on the registry and raises what the client raises (SchemaNotJson for
    another schema type, ValueError for a reader that is not an object schema);
    `decode` does not touch the registry.
    """

    def __init__(self, lookup: SchemaLookup, reader_id: int, spark_type: T.StructType,
                 writer_ids: Iterable[int] = (), options: Mapping[str, str] | None = None) -> None:
        """Prefer `for_subject` and `for_schema_id`. `options` go to every `from_json`
        (e.g. ``allowNonNumericNumbers``); ``mode`` and ``columnNameOfCorruptRecord``
        are ours."""
        taken = {"mode", "columnNameOfCorruptRecord"} & set(options or {})
        if taken:
            raise ValueError(f"from_json options {sorted(taken)} are set by the decoder itself")
        self._lookup = lookup
        self.reader_id = reader_id
        self.spark_type = spark_type
        self._options = {**(options or {}), "mode": "PERMISSIVE", "columnNameOfCorruptRecord": _CORRUPT}
        self._writer_ids = tuple(sorted(set(writer_ids) | {reader_id}))
        self._parse_type = T.StructType([*spark_type.fields, T.StructField(_CORRUPT, T.StringType(), True)])

    @classmethod
    def for_schema_id(cls, client: Any, schema_id: int, *, writer_ids: Iterable[int] = (),
                      options: Mapping[str, str] | None = None) -> JsonSchemaDecoder:
        """Reader: schema `schema_id`. Writers: that schema, and `writer_ids`."""
        lookup = SchemaLookup(client)
        return cls(lookup, schema_id, _struct_of(lookup, lookup.by_id(schema_id)), writer_ids, options)

    @classmethod
    def for_subject(cls, client: Any, subject: str, version: Version = "latest", *,
                    writer_ids: Iterable[int] = (), options: Mapping[str, str] | None = None
                    ) -> JsonSchemaDecoder:
        """Reader: `subject`'s `version`. Writers: every version of `subject`, and `writer_ids`."""
        lookup = SchemaLookup(client)
        reader = lookup.by_version(subject, version)
        ids = [lookup.by_version(subject, v, deleted=True).schema_id
               for v in client.get_versions(subject, deleted=True)]
        return cls(lookup, reader.schema_id, _struct_of(lookup, reader.schema), [*ids, *writer_ids], options)

    @property
    def writer_ids(self) -> tuple[int, ...]:
        """The writer schema ids this decoder accepts, ascending."""
        return self._writer_ids

    def with_writer_ids(self, ids: Iterable[int]) -> JsonSchemaDecoder:
        """This decoder, also accepting writer schemas `ids` (checked with the registry:
        each must be a JSON schema)."""
        new = [i for i in dict.fromkeys(ids) if i not in self._writer_ids]
        for schema_id in new:
            schema = self._lookup.by_id(schema_id)
            if (schema.schema_type or "AVRO").upper() != "JSON":
                raise SchemaNotJson(f"schema id {schema_id} is {schema.schema_type or 'AVRO'}, not JSON Schema")
        if not new:
            return self
        return JsonSchemaDecoder(self._lookup, self.reader_id, self.spark_type,
                                 [*self._writer_ids, *new], _user_options(self._options))

    def learn_writers(self, df: DataFrame, column: str = "value") -> JsonSchemaDecoder:
        """This decoder, also accepting every registered JSON writer id in `df[column]`
        (one Spark job: a distinct over the 5-byte headers). Unknown ids and ids of
        other schema types stay bad records."""
        value = F.col(column)
        headers = (df.where((F.length(value) >= HEADER_SIZE) & (F.substring(value, 1, 1) == F.lit(_MAGIC)))
                   .select(F.substring(value, 1, HEADER_SIZE).alias("header")).distinct().collect())
        seen = sorted({int.from_bytes(bytes(row.header)[1:], "big") for row in headers})
        known = []
        for schema_id in (i for i in seen if i not in self._writer_ids):
            try:
                schema = self._lookup.by_id(schema_id)
            except Exception:  # noqa: BLE001 - an id the registry does not have stays a bad record
                continue
            if (schema.schema_type or "AVRO").upper() == "JSON":
                known.append(schema_id)
        return self.with_writer_ids(known) if known else self

    def decode(self, df: DataFrame, column: str = "value", *, into: str | None = None,
               error_column: str | None = None, mode: DecodeMode | str = DecodeMode.FAILFAST
               ) -> DataFrame:
        """`df` plus a struct column `into` (default ``<column>_decoded``) of the reader's
        Spark type; PERMISSIVE also a string column `error_column` (default
        ``<column>_error``). As `AvroDecoder.decode`; lazy, static or streaming."""
        mode = DecodeMode(mode)
        into = into or f"{column}_decoded"
        error_column = error_column or f"{column}_error"
        if mode is DecodeMode.PERMISSIVE and column in (into, error_column):
            raise ValueError(f"PERMISSIVE keeps the raw bytes in {column!r}: choose other column names")
        staged = f"__{into}_staged"
        value = F.col(column)
        header = F.substring(value, 1, HEADER_SIZE)
        known = header.isin(*[F.lit(bytearray(wire.header(i))) for i in self._writer_ids])
        payload = F.substring(value, HEADER_SIZE + 1, _TO_END).cast("string")
        parsed = df.withColumn(staged, F.when(known, F.from_json(payload, self._parse_type, self._options)))
        ok = F.col(staged).isNotNull() & F.col(staged)[_CORRUPT].isNull()
        struct = F.col(staged).dropFields(_CORRUPT)
        reason = self._reason(value, known)
        if mode is DecodeMode.PERMISSIVE:
            out = {into: F.when(ok, struct),
                   error_column: F.when(ok | value.isNull(), F.lit(None).cast("string")).otherwise(reason)}
        else:
            failure = F.concat(F.lit(f"registry.spark: cannot decode column {column!r}: "), reason,
                               F.lit(". Decode with mode=PERMISSIVE to route bad records to an error column."))
            out = {into: F.when(ok, struct).when(value.isNull(), F.lit(None)).otherwise(F.raise_error(failure))}
        return parsed.withColumns(out).drop(staged)

    def for_each_batch(self, fn: Callable[[DataFrame, int], None], column: str = "value", *,
                       into: str | None = None, error_column: str | None = None,
                       mode: DecodeMode | str = DecodeMode.FAILFAST, persist: bool = True
                       ) -> BatchDecoding:
        """A ``foreachBatch`` function learning each micro-batch's new writer ids first
        (see `registry.spark.BatchDecoding`)."""
        return BatchDecoding(self, fn, column, into=into, error_column=error_column,  # type: ignore[arg-type]
                             mode=DecodeMode(mode), persist=persist)

    def _reason(self, value: Column, known: Column) -> Column:
        size = F.length(value)
        schema_id = F.conv(F.hex(F.substring(value, 2, 4)), 16, 10)
        ids = ", ".join(str(i) for i in self._writer_ids)
        return (
            F.when(size < HEADER_SIZE, F.concat(
                F.lit("truncated: the message has "), size.cast("string"),
                F.lit(" bytes, fewer than the 5-byte Schema Registry header")))
            .when(F.substring(value, 1, 1) != F.lit(_MAGIC), F.concat(
                F.lit("unknown magic byte 0x"), F.lower(F.hex(F.substring(value, 1, 1))),
                F.lit(" (expected 0x00): not written by a Schema Registry serializer")))
            .when(~known, F.concat(
                F.lit("unknown schema id "), schema_id,
                F.lit(f": not a JSON writer schema this decoder knows (ids {ids}). If it was registered "
                      "after the query started, restart the query, or decode in foreachBatch with "
                      "JsonSchemaDecoder.for_each_batch, which learns new ids")))
            .otherwise(F.concat(
                F.lit("malformed payload: "), (size - HEADER_SIZE).cast("string"),
                F.lit(" bytes that are not a JSON object of the reader's shape (writer schema id "),
                schema_id, F.lit(")")))
        )


def _user_options(options: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in options.items() if k not in ("mode", "columnNameOfCorruptRecord")}


def _struct_of(lookup: SchemaLookup, schema: Schema) -> T.StructType:
    document, references = _registered_json(lookup, schema)
    spark_type = spark_type_of(document, references)
    if not isinstance(spark_type, T.StructType):
        raise ValueError(f"the reader schema's values are {spark_type.simpleString()}, not objects with "
                         "properties: JsonSchemaDecoder reads object schemas")
    return spark_type


class JsonSchemaEncoder:
    """Writes a struct column as Confluent-framed JSON with one registered schema id.

    Each value is the 5-byte header and Spark's `to_json` of the struct (compact; null
    fields left out, unless ``ignoreNullFields`` is "false" in `options`); a null
    struct is a null value. Values are not validated against the schema. Building one
    blocks on the registry (once); `encode` does not touch it.
    """

    def __init__(self, schema_id: int, options: Mapping[str, str] | None = None) -> None:
        self.schema_id = schema_id
        self._header = bytearray(wire.header(schema_id))
        self._options = dict(options or {})

    @classmethod
    def for_subject(cls, client: Any, subject: str, version: Version = "latest",
                    options: Mapping[str, str] | None = None) -> JsonSchemaEncoder:
        """Write with `subject`'s `version` (read now and kept)."""
        registered = SchemaLookup(client).by_version(subject, version)
        if (registered.schema.schema_type or "AVRO").upper() != "JSON":
            raise SchemaNotJson(f"{subject} version {version} is not a JSON schema")
        return cls(registered.schema_id, options)

    @classmethod
    def register(cls, client: Any, subject: str, schema_str: str, *, normalize: bool = False,
                 options: Mapping[str, str] | None = None) -> JsonSchemaEncoder:
        """Register `schema_str` under `subject` (or find it there) and write with it."""
        return cls(client.register_schema(subject, Schema(schema_str, "JSON"), normalize), options)

    def encode(self, data: Column | str) -> Column:
        """A binary column: `data` (a struct column, or its name) framed as Confluent JSON."""
        column = F.col(data) if isinstance(data, str) else data
        return F.concat(F.lit(self._header), F.encode(F.to_json(column, self._options), "UTF-8"))
