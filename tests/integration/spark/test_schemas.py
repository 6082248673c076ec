"""registry.spark.schemas: references inlined into one schema Avro Java can parse (self_contained),
and the field that tells a decoded record from a failed one (never_null_field).

Pure Python (no Spark, no registry); checked against fastavro, which like Avro Java
rejects a named type defined twice or used before it is defined.
"""
from __future__ import annotations

import json

import fastavro

from registry.schema_types.avro import AVRO
from registry.spark.schemas import RegisteredAvro, self_contained

ADDRESS = '{"type":"record","name":"Address","namespace":"geo","fields":[' \
          '{"name":"city","type":"string"},{"name":"kind","type":{"type":"enum","name":"Kind","symbols":["HOME","WORK"]}}]}'
PLAIN = '{"type":"record","name":"Plain","fields":[{"name":"v","type":"int"}]}'  # the null namespace


def test_without_references_the_text_is_unchanged() -> None:
    assert self_contained(PLAIN, []) == PLAIN


def test_each_referenced_type_is_defined_once_at_its_first_use() -> None:
    person = ('{"type":"record","name":"Person","namespace":"crm","fields":['
              '{"name":"home","type":"geo.Address"},{"name":"work","type":["null","geo.Address"]},'
              '{"name":"kinds","type":{"type":"array","items":"geo.Kind"}}]}')
    schema = json.loads(self_contained(person, [ADDRESS]))
    home, work, kinds = (f["type"] for f in schema["fields"])
    assert home["name"] == "geo.Address" and home["fields"][1]["type"]["name"] == "Kind", \
        "the first use carries the whole definition, nested named types included"
    assert work == ["null", "geo.Address"] and kinds["items"] == "geo.Kind", "later uses are by full name"
    fastavro.parse_schema(schema)  # one document, every name defined exactly once


def test_a_null_namespace_type_keeps_its_name_inside_a_namespaced_record() -> None:
    holder = '{"type":"record","name":"Holder","namespace":"h","fields":[{"name":"p","type":"Plain"}]}'
    schema = json.loads(self_contained(holder, [PLAIN]))
    plain = schema["fields"][0]["type"]
    assert plain["name"] == "Plain" and plain["namespace"] == "", \
        "an explicit empty namespace stops it from becoming h.Plain"
    parsed = fastavro.parse_schema(schema)
    assert parsed["fields"][0]["type"]["name"] == "Plain"


def _registered(schema: str) -> RegisteredAvro:
    return RegisteredAvro(1, schema, AVRO.parse(schema, {}))


def test_the_never_null_field_is_the_first_whose_type_has_no_null() -> None:
    schema = ('{"type":"record","name":"R","fields":['
              '{"name":"a","type":["null","long"]},{"name":"b","type":"null"},'
              '{"name":"c","type":["long","string"]},{"name":"d","type":{"type":"long","logicalType":"timestamp-millis"}},'
              '{"name":"e","type":"string"}]}')
    assert _registered(schema).never_null_field == "d", \
        "unions (with or without null) and null are passed over; a logical type on long is never null"
    nested = '{"type":"record","name":"R","fields":[{"name":"p","type":{"type":"record","name":"P","fields":[]}}]}'
    assert _registered(nested).never_null_field == "p", "a nested record is never null"


def test_no_never_null_field_where_every_field_may_be_null_or_names_clash() -> None:
    nullable = '{"type":"record","name":"R","fields":[{"name":"a","type":["null","long"]}]}'
    assert _registered(nullable).never_null_field is None, "a union with null can be null in a good record"
    assert _registered('{"type":"record","name":"R","fields":[]}').never_null_field is None
    clash = '{"type":"record","name":"R","fields":[{"name":"Id","type":"long"},{"name":"id","type":"long"}]}'
    assert _registered(clash).never_null_field is None, \
        "Spark finds struct fields regardless of case: Id beside id would be ambiguous"
    assert _registered('"long"').never_null_field is None, "only a record has fields"
