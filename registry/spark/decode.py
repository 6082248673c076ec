"""Decode Confluent-framed Avro in a binary column into a struct column, on the JVM.

    decoder = AvroDecoder.for_subject(client, "orders-value")        # reader: the latest version
    orders = decoder.decode(kafka_df, "value", into="order")         # + struct column "order"

How it runs. Where the session has registry.spark's jar (`connector_jars` adds it
where `make` built it; registry/spark/jvm) and the reader is a record, one expression
of ours reads the 5-byte header (magic 0, 4-byte big-endian schema id), decodes the
payload in place with that writer's schema, resolved into the reader's by Avro's fast
reader, and converts it with spark-avro's own converter: the rows below, for about a
quarter less CPU (bench/spark_decode.py).

Without the jar (or over Spark Connect, which offers the client no JVM), the header
picks one spark-avro `from_avro` expression per writer schema, each given the writer's
schema and, as its `avroSchema` option, the reader's, so Avro's own schema resolution
turns every writer version into the reader's shape::

    CASE WHEN substring(value, 1, 5) = X'0000000001' THEN from_avro(payload, <writer 1>, {avroSchema: <reader>})
         WHEN substring(value, 1, 5) = X'0000000002' THEN from_avro(payload, <writer 2>, {avroSchema: <reader>})
    END                                                         -- payload = substring(value, 6)

Two kinds of writer skip Avro's resolving decoder, which costs a fifth more per row: the
reader's own schema (decoded with it alone), and a writer that differs from the reader
only in ways resolution.py proves Catalyst reproduces exactly (fields removed, added with
a primitive default, numbers widened). That one is decoded with its own schema in a
projection of its own, then reshaped: fields copied, cast or filled with defaults. The
struct's type is checked to be the reader's, or every writer goes back to Avro's way.

Writer schemas are fetched on the driver, once per id, when the expression is built;
no Python runs per row. The output's type is the Spark type spark-avro derives from
the reader schema (every field nullable, since bad records must be able to be null).

Which writer ids it knows. `for_subject` takes every version of the subject,
soft-deleted ones included; `writer_ids=` adds others; `learn_writers(df)` adds the
ids found in a DataFrame with one cheap aggregate (the distinct headers).

Ids that appear mid-stream. A streaming query's plan is fixed when it starts, so a
record whose id the decoder did not know then is a bad record ("unknown schema id"):
FAILFAST stops the query with a message saying to restart it (it resumes from its
checkpoint, and the new decoder knows the new version), PERMISSIVE routes it to the
error column. To follow new versions without a restart, decode inside foreachBatch
with `for_each_batch`: before each micro-batch it learns the batch's ids (one
distinct over the 5-byte headers), fetches the new ones and rebuilds the expression.

Bad records (a null value is not one: it stays null, as a Kafka tombstone should):

* ``truncated: ...``            fewer than 5 bytes, no room for the header;
* ``unknown magic byte 0x..``   not written by a Schema Registry serializer;
* ``unknown schema id N``       not in the registry, or registered after the decoder was built;
* ``incompatible writer schema id N``  the reader schema cannot read that version;
* ``truncated or corrupt payload``     the Avro bytes do not decode with the writer schema.

FAILFAST (the default) fails the Spark job with "registry.spark: cannot decode ...",
naming the reason. PERMISSIVE gives a null struct and the reason in an error column,
keeping the raw bytes, so bad records can be routed to a dead-letter sink::

    decoded = decoder.decode(df, "value", into="order", mode=DecodeMode.PERMISSIVE)
    decoded.where("value_error IS NOT NULL").select("key", "value", "value_error")  # dead letters
"""
from __future__ import annotations

import enum
import json
import logging
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from py4j.java_gateway import JavaClass
from py4j.protocol import Py4JError
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro

from registry.serde import wire
from registry.serde.wire import HEADER_SIZE
from registry.spark import resolution
from registry.spark.schemas import RegisteredAvro, SchemaLookup, Version

__all__ = ["AvroDecoder", "BatchDecoding", "DecodeMode"]

log = logging.getLogger(__name__)

_MAGIC = bytearray([wire.MAGIC_BYTE])
_TO_END = 2**31 - 1
# spark-avro's PERMISSIVE mode answers a payload it cannot decode with a struct of all-null
# fields, which a valid record may also be. A record reader with a field that is never null
# (`RegisteredAvro.never_null_field`) tells them apart by it, at no cost. Only a record whose
# every field may be null gets this reader-only boolean field (default true, so true for every
# record that did decode), which costs a default filled in and the struct rebuilt without it.
_DECODED = "__registry_spark_decoded"
_SAME = "same"  # a writer schema that is the reader's: no resolution at all


class DecodeMode(enum.Enum):
    """What a bad record does: fail the query, or become a null struct plus a reason."""

    FAILFAST = "FAILFAST"
    PERMISSIVE = "PERMISSIVE"


@dataclass(frozen=True)
class _Writer:
    schema: RegisteredAvro
    # Why the reader cannot read this writer's data; empty when it can.
    problems: tuple[str, ...]

    @property
    def header(self) -> bytearray:
        return bytearray(wire.header(self.schema.schema_id))


class AvroDecoder:
    """Decodes Confluent-framed Avro with one reader schema and a set of writer schemas.

    Immutable: `with_writer_ids` and `learn_writers` return a new decoder. Building
    one blocks on the registry (once per schema id, through the client's caches) and
    raises what the client raises; `decode` does not touch the registry.
    """

    def __init__(self, lookup: SchemaLookup, reader: RegisteredAvro,
                 writers: Iterable[RegisteredAvro] = (), options: Mapping[str, str] | None = None) -> None:
        """Prefer `for_subject` and `for_schema_id`. `options` go to every `from_avro`
        (e.g. ``datetimeRebaseMode``); ``mode`` and ``avroSchema`` are ours."""
        taken = {"mode", "avroSchema"} & set(options or {})
        if taken:
            raise ValueError(f"from_avro options {sorted(taken)} are set by the decoder itself")
        self._lookup = lookup
        self.reader = reader
        self._options = dict(options or {})
        self._writers: dict[int, _Writer] = {}
        for writer in writers:
            problems = tuple(reader.parsed.read_errors(writer.parsed))
            if problems:
                log.warning("reader schema id %s cannot read writer schema id %s: %s",
                            reader.schema_id, writer.schema_id, "; ".join(problems))
            self._writers[writer.schema_id] = _Writer(writer, problems)
        # The field whose nullness says whether a record decoded (see _DECODED).
        self._witness: str | None = None
        self._reader_json = reader.json
        if reader.is_record:
            self._witness = reader.never_null_field
            if self._witness is None:
                self._witness = _DECODED
                self._reader_json = reader.with_field(_DECODED, "boolean", True)
        # Writers whose data reaches the reader's shape without Avro's resolving decoder
        # (registry/spark/resolution.py): _SAME, or (writer's never-null field, steps).
        self._shortcuts: dict[int, object] = {}
        for writer_id, writer in self._writers.items():
            if writer.problems or writer.schema.is_raw_bytes:
                continue
            if resolution.same_schema(writer.schema.json, self._reader_json):
                self._shortcuts[writer_id] = _SAME
                continue
            steps = resolution.plan(writer.schema.json, self._reader_json)
            writer_witness = writer.schema.never_null_field if steps is not None else None
            if steps is not None and writer_witness is not None:
                self._shortcuts[writer_id] = (writer_witness, steps)

    # -- construction ------------------------------------------------------------

    @classmethod
    def for_subject(cls, client: Any, subject: str, version: Version = "latest", *,
                    writer_ids: Iterable[int] = (), options: Mapping[str, str] | None = None
                    ) -> AvroDecoder:
        """Reader: `subject`'s `version` (a number or "latest", read now and kept).
        Writers: every version of `subject`, and `writer_ids`.

        Raises SchemaRegistryError if the subject, version or an id is not registered.
        """
        lookup = SchemaLookup(client)
        reader = lookup.by_version(subject, version)
        ids = [*lookup.ids_of_subject(subject), *writer_ids]
        return cls(lookup, reader, [lookup.by_id(i) for i in dict.fromkeys(ids)], options)

    @classmethod
    def for_schema_id(cls, client: Any, schema_id: int, *, writer_ids: Iterable[int] = (),
                      options: Mapping[str, str] | None = None) -> AvroDecoder:
        """Reader: schema `schema_id`. Writers: that schema, and `writer_ids`.

        Raises SchemaRegistryError if an id is not registered.
        """
        lookup = SchemaLookup(client)
        ids = dict.fromkeys([schema_id, *writer_ids])
        return cls(lookup, lookup.by_id(schema_id), [lookup.by_id(i) for i in ids], options)

    @property
    def writer_ids(self) -> tuple[int, ...]:
        """The writer schema ids this decoder dispatches on, ascending."""
        return tuple(sorted(self._writers))

    def with_writer_ids(self, ids: Iterable[int]) -> AvroDecoder:
        """This decoder, also knowing writer schemas `ids`. Raises SchemaRegistryError
        for an id the registry does not have."""
        new = [i for i in dict.fromkeys(ids) if i not in self._writers]
        if not new:
            return self
        return self._with([self._lookup.by_id(i) for i in new])

    def learn_writers(self, df: DataFrame, column: str = "value") -> AvroDecoder:
        """This decoder, also knowing every registered writer id found in `df[column]`.

        Runs one Spark job (a distinct over the 5-byte headers, so it reads `df` once)
        and asks the registry about new ids only. Ids the registry does not have are
        left out: their records stay bad records ("unknown schema id").
        """
        value = F.col(column)
        headers = (df.where((F.length(value) >= HEADER_SIZE) & (F.substring(value, 1, 1) == F.lit(_MAGIC)))
                   .select(F.substring(value, 1, HEADER_SIZE).alias("header")).distinct().collect())
        seen = sorted({int.from_bytes(bytes(row.header)[1:], "big") for row in headers})
        found = [self._lookup.by_id_if_known(i) for i in seen if i not in self._writers]
        known = [schema for schema in found if schema is not None]
        return self._with(known) if known else self

    def _with(self, more: list[RegisteredAvro]) -> AvroDecoder:
        writers = [w.schema for w in self._writers.values()] + more
        return AvroDecoder(self._lookup, self.reader, writers, self._options)

    # -- decoding ----------------------------------------------------------------

    def decode(self, df: DataFrame, column: str = "value", *, into: str | None = None,
               error_column: str | None = None, mode: DecodeMode | str = DecodeMode.FAILFAST
               ) -> DataFrame:
        """`df` plus a struct column `into` (default ``<column>_decoded``) holding
        `df[column]` decoded into the reader schema's shape.

        PERMISSIVE also adds a string column `error_column` (default ``<column>_error``):
        null for a good record, else the reason; a bad record's struct is null and
        `df[column]` keeps its raw bytes. FAILFAST makes a bad record fail the Spark
        job that reaches it, with "registry.spark: cannot decode ..." and the reason.

        Lazy: builds expressions only; works on static and streaming DataFrames.
        """
        mode = DecodeMode(mode)
        into = into or f"{column}_decoded"
        error_column = error_column or f"{column}_error"
        if mode is DecodeMode.PERMISSIVE and column in (into, error_column):
            raise ValueError(f"PERMISSIVE keeps the raw bytes in {column!r}: choose other column names")
        staged = f"__{into}_staged"
        value = F.col(column)
        # The decoding runs once, in a projection of its own, where the next one reads its
        # result twice (Spark does not merge a projection whose costly expression the
        # next one reads twice): for the struct and the error, or the test of a record.
        framed = _jvm_expression(df) if self.reader.is_record else None
        if framed is not None:
            decoded = df.withColumn(staged, framed(value, self._jvm_spec()))
        else:
            decoded = self._staged(df, value, staged, into, shortcuts=True)
        if framed is None and self._shortcuts and decoded.schema[staged].dataType != self._reader_type(df):
            # Never expected (resolution.py is narrow): a type other than the reader's
            # would change what callers get, so every writer goes through Avro's resolution.
            log.warning("registry.spark: decoding without Avro's resolution would change the "
                        "struct's type; resolving every writer schema with Avro")
            decoded = self._staged(df, value, staged, into, shortcuts=False)
        ok = self._decoded_ok(F.col(staged), value)
        struct = F.col(staged).dropFields(_DECODED) if self._witness == _DECODED else F.col(staged)
        reason = self._reason(value)
        failure = F.raise_error(F.concat(
            F.lit(f"registry.spark: cannot decode column {column!r}: "), reason,
            F.lit(". Decode with mode=PERMISSIVE to route bad records to an error column.")))
        if mode is DecodeMode.PERMISSIVE:
            out = {into: F.when(ok, struct),
                   error_column: F.when(ok | value.isNull(), F.lit(None).cast("string")).otherwise(reason)}
        elif framed is not None:
            # Our expression is null for exactly the bad records (a record reader never reads
            # a null datum): the struct is read once, and Spark merges the two projections.
            out = {into: F.coalesce(struct, F.when(value.isNotNull(), failure))}
        else:
            out = {into: F.when(ok, struct).when(value.isNull(), F.lit(None)).otherwise(failure)}
        return decoded.withColumns(out).drop(staged)

    def for_each_batch(self, fn: Callable[[DataFrame, int], None], column: str = "value", *,
                       into: str | None = None, error_column: str | None = None,
                       mode: DecodeMode | str = DecodeMode.FAILFAST, persist: bool = True
                       ) -> BatchDecoding:
        """A function for ``writeStream.foreachBatch`` that learns each micro-batch's new
        writer ids, then calls ``fn(decoded_batch, epoch_id)`` (see `BatchDecoding`)."""
        return BatchDecoding(self, fn, column, into=into, error_column=error_column,
                             mode=DecodeMode(mode), persist=persist)

    def _compatible(self) -> list[_Writer]:
        return [w for _id, w in sorted(self._writers.items()) if not w.problems]

    def _staged(self, df: DataFrame, value: Column, staged: str, into: str, shortcuts: bool) -> DataFrame:
        """`df` plus column `staged`: the record in the reader's shape, or null.

        The header is cut out once, into a column of its own that every test of it
        reads, rather than copied out again for each writer tested. A writer decoded
        without Avro's resolution and then reshaped is decoded in a projection of its
        own too: its struct is read once per reader field, and inside the CASE each read
        would run from_avro again.
        """
        header = f"__{into}_header"
        df = df.withColumn(header, F.substring(value, 1, HEADER_SIZE))
        unresolved = {writer_id: f"__{into}_writer_{writer_id}" for writer_id, shortcut in self._shortcuts.items()
                      if shortcuts and shortcut is not _SAME}
        if not unresolved:
            return df.withColumn(staged, self._dispatch(value, F.col(header), shortcuts, {})).drop(header)
        payload = F.substring(value, HEADER_SIZE + 1, _TO_END)
        plain = {**self._options, "mode": "PERMISSIVE"}
        writers = {w.schema.schema_id: w for w in self._compatible()}
        first = df.withColumns({
            column: F.when(F.col(header) == F.lit(writers[writer_id].header),
                           from_avro(payload, writers[writer_id].schema.json, plain))
            for writer_id, column in unresolved.items()})
        dispatch = self._dispatch(value, F.col(header), shortcuts, unresolved)
        return first.withColumn(staged, dispatch).drop(*unresolved.values(), header)

    def _jvm_spec(self) -> str:
        """What registry/spark/jvm/FramedAvroToCatalyst.java decodes with: the reader,
        the from_avro options, and the writers the reader can read (others' records are
        null there, and `_reason` says why)."""
        writers = [{"id": w.schema.schema_id, "schema": w.schema.json} for w in self._compatible()]
        return json.dumps({"reader": self._reader_json, "options": self._options, "writers": writers})

    def _reader_type(self, df: DataFrame) -> Any:
        """The Spark type from_avro gives the reader's shape (analysed only, no job)."""
        options = {**self._options, "mode": "PERMISSIVE", "avroSchema": self._reader_json}
        nothing = F.lit(None).cast("binary")
        return df.select(from_avro(nothing, self._reader_json, options).alias("t")).schema["t"].dataType

    def _dispatch(self, value: Column, header: Column, shortcuts: bool, unresolved: Mapping[int, str]) -> Column:
        """The CASE over `header` (value's first 5 bytes): one from_avro per compatible
        writer, else null. `unresolved`: writers decoded already, by the columns holding
        their structs."""
        payload = F.substring(value, HEADER_SIZE + 1, _TO_END)
        options = {**self._options, "mode": "PERMISSIVE", "avroSchema": self._reader_json}
        dispatch: Column | None = None
        for writer in self._compatible():
            shortcut = self._shortcuts.get(writer.schema.schema_id) if shortcuts else None
            if writer.schema.is_raw_bytes and self.reader.is_raw_bytes:
                branch = payload  # Confluent writes top-level bytes raw, without a length prefix
            elif shortcut is _SAME:
                branch = from_avro(payload, writer.schema.json, {**self._options, "mode": "PERMISSIVE"})
            elif shortcut is not None and writer.schema.schema_id in unresolved:
                branch = self._reshaped(F.col(unresolved[writer.schema.schema_id]), shortcut)
            else:
                branch = from_avro(payload, writer.schema.json, options)
            matches = header == F.lit(writer.header)
            dispatch = F.when(matches, branch) if dispatch is None else dispatch.when(matches, branch)
        if dispatch is None:  # no writer the reader can read: every record is bad, typed as the reader
            nothing = F.lit(None).cast("binary")
            return nothing if self.reader.is_raw_bytes else from_avro(nothing, self.reader.json, options)
        return dispatch

    @staticmethod
    def _reshaped(decoded: Column, shortcut: object) -> Column:
        """`decoded`, a writer's struct, in the reader's shape (see resolution.py): the
        same struct as Avro's resolution gives, for less."""
        writer_witness, steps = shortcut  # type: ignore[misc]
        # PERMISSIVE answers a payload it cannot decode with all-null fields: the writer's
        # never-null field says whether it decoded, so that defaults are not filled into
        # a bad record (which would make it look decoded).
        ok = decoded[writer_witness].isNotNull()
        fields = []
        for step in steps:
            if type(step) is resolution.Copy:
                field = decoded[step.name]
            elif type(step) is resolution.Widen:
                field = decoded[step.name].cast(step.spark_type)
            else:
                # Nullable, as from_avro's PERMISSIVE fields are: the type stays the reader's.
                field = F.when(ok, F.lit(step.value).cast(step.spark_type))
            fields.append(field.alias(step.name))
        return F.when(ok, F.struct(*fields))

    def _decoded_ok(self, staged: Column, value: Column) -> Column:
        if self._witness is not None:
            return staged[self._witness].isNotNull()
        if self.reader.is_nullable:
            # A null datum is valid here and indistinguishable from a payload spark-avro
            # could not decode: only the header is checked.
            headers = [F.lit(w.header) for w in self._compatible()]
            return F.substring(value, 1, HEADER_SIZE).isin(*headers) if headers else F.lit(False)
        return staged.isNotNull()

    def _reason(self, value: Column) -> Column:
        """Why a record that did not decode is bad (evaluated for bad records only)."""
        size = F.length(value)
        header = F.substring(value, 1, HEADER_SIZE)
        schema_id = F.conv(F.hex(F.substring(value, 2, 4)), 16, 10)
        known = ", ".join(str(i) for i in self.writer_ids) or "none"
        reason = (
            F.when(size < HEADER_SIZE, F.concat(
                F.lit("truncated: the message has "), size.cast("string"),
                F.lit(" bytes, fewer than the 5-byte Schema Registry header")))
            .when(F.substring(value, 1, 1) != F.lit(_MAGIC), F.concat(
                F.lit("unknown magic byte 0x"), F.lower(F.hex(F.substring(value, 1, 1))),
                F.lit(" (expected 0x00): not written by a Schema Registry serializer")))
        )
        for writer in (w for _id, w in sorted(self._writers.items()) if w.problems):
            reason = reason.when(header == F.lit(writer.header), F.lit(
                f"incompatible writer schema id {writer.schema.schema_id}: the reader schema "
                f"(id {self.reader.schema_id}) cannot read it: {'; '.join(writer.problems)}"))
        compatible = [F.lit(w.header) for w in self._compatible()]
        unknown = ~header.isin(*compatible) if compatible else F.lit(True)
        return (
            reason.when(unknown, F.concat(
                F.lit("unknown schema id "), schema_id,
                F.lit(f": not a writer schema this decoder knows (ids {known}). If it was registered "
                      "after the query started, restart the query (it resumes from its checkpoint), "
                      "or decode in foreachBatch with AvroDecoder.for_each_batch, which learns new ids")))
            .otherwise(F.concat(
                F.lit("truncated or corrupt payload: "), (size - HEADER_SIZE).cast("string"),
                F.lit(" bytes of Avro do not decode with writer schema id "), schema_id))
        )


_JVM_CLASS = "registry.spark.jvm.FramedAvroToCatalyst"
# Per JVM (py4j's view of it, alive as long as its gateway) and class name: the class if
# it loads and its probe passes, else None. Looking it up and probing it costs ~9 ms of
# py4j round trips, which `for_each_batch` would otherwise pay every micro-batch.
_JVM_CLASSES: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def _jvm_expression(df: DataFrame) -> Callable[[Column, str], Column] | None:
    """A builder of our JVM expression's column, if `df`'s session has registry.spark's
    jar (`connector_jars` adds it where `make` built it); else None, and the decoder
    writes the same decoding with spark-avro's `from_avro` (as over Spark Connect,
    which offers no JVM to the client)."""
    try:
        jvm = df.sparkSession._jvm
    except AttributeError:
        return None
    if jvm is None:
        return None
    known = _JVM_CLASSES.setdefault(jvm, {})
    if _JVM_CLASS not in known:
        known[_JVM_CLASS] = _working_class(jvm, _JVM_CLASS)
    expression = known[_JVM_CLASS]
    if expression is None:
        return None
    from pyspark.sql.classic.column import _to_java_column  # classic sessions only

    utils = jvm.org.apache.spark.sql.classic.ExpressionUtils

    def build(value: Column, spec: str) -> Column:
        return Column(utils.column(expression(utils.expression(_to_java_column(value)), spec)))
    return build


def _working_class(jvm: Any, name: str) -> Any:
    """Class `name` in `jvm` if it loads and its `probe()` passes, else None."""
    found = jvm
    for part in name.split("."):
        found = getattr(found, part)
    if not isinstance(found, JavaClass):  # py4j's answer for a class it cannot load
        return None
    try:
        found.probe()
    except Py4JError as exc:  # a LinkageError in the JVM, or not the class this module knows
        log.warning("registry.spark: the decoder's jar does not work with this Spark (%s); "
                    "decoding with spark-avro's from_avro instead", exc)
        return None
    return found


class BatchDecoding:
    """The ``foreachBatch`` function `AvroDecoder.for_each_batch` returns.

        query = (kafka_stream.writeStream
                 .foreachBatch(decoder.for_each_batch(lambda batch, epoch: batch.write.saveAsTable("t")))
                 .start())

    Each call, on the driver: persists the micro-batch (unless ``persist=False``, which
    reads it twice instead), learns its writer ids with one distinct over the headers,
    fetches new ids from the registry (once each), then hands the decoded batch to
    `fn`. Blocks for both Spark jobs and any registry request; raises what `fn` and
    the registry raise. `decoder` is the latest decoder, with every id learned so far.
    Not for concurrent use (Spark runs micro-batches one after another).
    """

    def __init__(self, decoder: AvroDecoder, fn: Callable[[DataFrame, int], None], column: str, *,
                 into: str | None, error_column: str | None, mode: DecodeMode, persist: bool) -> None:
        self.decoder = decoder
        self._fn = fn
        self._column = column
        self._into = into
        self._error_column = error_column
        self._mode = mode
        self._persist = persist

    def __call__(self, batch: DataFrame, epoch_id: int) -> None:
        if self._persist:
            batch = batch.persist()
        try:
            self.decoder = self.decoder.learn_writers(batch, self._column)
            decoded = self.decoder.decode(batch, self._column, into=self._into,
                                          error_column=self._error_column, mode=self._mode)
            self._fn(decoded, epoch_id)
        finally:
            if self._persist:
                batch.unpersist()
