"""Issue 12: the record kinds and fields Confluent 7.x/8.x write, byte for byte.

Literal bytes follow Confluent's classes: keys in their `@JsonPropertyOrder` (ContextKey:
keytype, tenant, context, then the unlisted magic; AssociationKey: keytype, tenant,
resourceName, resourceNamespace, resourceType, associationType, subject, magic), values
in their `@JsonCreator` order with NON_EMPTY (SchemaValue: subject, version, id, md5,
schemaType, references, metadata, ruleSet, schema, deleted; ConfigValue: subject, alias,
aliasForDeks, normalize, validateFields, validateNewSchemas, validateRules,
compatibilityLevel, compatibilityPolicy, compatibilityGroup, defaultMetadata,
overrideMetadata, defaultRuleSet, overrideRuleSet; Metadata: tags, properties,
sensitive; RuleSet: migrationRules, domainRules, encodingRules, enableAt; Rule: name,
doc, kind, mode, type, tags, params, expr, onSuccess, onFailure, disabled).
"""
from __future__ import annotations

import hashlib
import uuid

import pytest

from store.cache import Cache
from store.contracts import (
    ContractError,
    Metadata,
    Rule,
    RuleSet,
    content_md5,
    guid_of,
    metadata_from_json,
    rule_set_from_json,
)
from store.records import (
    AssociationKey,
    AssociationValue,
    ConfigKey,
    ConfigValue,
    ContextKey,
    ContextValue,
    SchemaKey,
    SchemaReference,
    SchemaValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)

META = Metadata(tags=(("R.a", ("PII",)),), properties=(("owner", "team-a"),), sensitive=("a",))
RULES = RuleSet(domain_rules=(Rule("checkA", "CONDITION", "WRITE", "CEL", expr="message.a > 0"),))
META_JSON = b'{"tags":{"R.a":["PII"]},"properties":{"owner":"team-a"},"sensitive":["a"]}'
RULES_JSON = (b'{"domainRules":[{"name":"checkA","kind":"CONDITION","mode":"WRITE","type":"CEL",'
              b'"expr":"message.a > 0","disabled":false}]}')


@pytest.mark.parametrize("key,raw", [
    (ContextKey(".ctx"), b'{"keytype":"CONTEXT","tenant":"default","context":".ctx","magic":0}'),
    (AssociationKey("orders", "lkc-1", "topic", "value", "orders-value"),
     b'{"keytype":"ASSOC","tenant":"default","resourceName":"orders","resourceNamespace":"lkc-1",'
     b'"resourceType":"topic","associationType":"value","subject":"orders-value","magic":0}'),
])
def test_new_key_kinds_are_written_as_confluent_writes_them(key, raw):
    assert encode_key(key) == raw, "compaction matches exact key bytes"
    assert decode_key(raw) == key


def test_schema_value_with_metadata_and_rules_in_confluents_field_order():
    value = SchemaValue("s", 2, 7, '"string"', "AVRO", (SchemaReference("r", "t", 1),),
                        metadata=META, rule_set=RULES)
    raw = encode_value(value)
    assert raw == (b'{"subject":"s","version":2,"id":7,"references":[{"name":"r","subject":"t","version":1}],'
                   b'"metadata":' + META_JSON + b',"ruleSet":' + RULES_JSON +
                   b',"schema":"\\"string\\"","deleted":false}')
    assert decode_value(SchemaKey("s", 2), raw) == value, "the fields read back as written"


def test_a_confluent_schema_value_with_md5_offset_and_ts_is_read():
    raw = (b'{"subject":"s","version":1,"id":1,"md5":"HSDLueXjXpdU59oXC25d2w==","schema":"\\"string\\"",'
           b'"deleted":true,"offset":1,"ts":123,"somethingNew":{"x":1}}')
    value = decode_value(SchemaKey("s", 1), raw)
    assert (value.md5, value.deleted, value.schema) == ("HSDLueXjXpdU59oXC25d2w==", True, '"string"')
    assert encode_value(value) == (b'{"subject":"s","version":1,"id":1,"md5":"HSDLueXjXpdU59oXC25d2w==",'
                                   b'"schema":"\\"string\\"","deleted":true}'), \
        "md5 is kept; offset and ts are the reader's, not the record's"


def test_config_value_with_contracts_in_confluents_field_order():
    value = ConfigValue("FULL", "s", normalize=True, compatibility_group="major",
                        default_metadata=META, override_rule_set=RULES)
    raw = encode_value(value)
    assert raw == (b'{"subject":"s","normalize":true,"compatibilityLevel":"FULL","compatibilityGroup":"major",'
                   b'"defaultMetadata":' + META_JSON + b',"overrideRuleSet":' + RULES_JSON + b'}')
    assert decode_value(ConfigKey("s"), raw) == value


def test_a_foreign_config_keeps_the_fields_we_do_not_act_on():
    raw = (b'{"alias":"other","validateFields":false,"compatibilityLevel":"BACKWARD",'
           b'"compatibilityPolicy":"SYNTACTIC"}')
    value = decode_value(ConfigKey(None), raw)
    assert encode_value(value) == raw, "a config read from an adopted topic is written back whole"


def test_context_and_association_values():
    assert encode_value(ContextValue(".ctx")) == b'{"tenant":"default","context":".ctx"}'
    value = AssociationValue("g-1", "orders", "lkc-1", "rid-1", "topic", "value", "orders-value",
                             "STRONG", False, 1700000000000)
    raw = encode_value(value)
    assert raw == (b'{"guid":"g-1","tenant":"default","resourceName":"orders","resourceNamespace":"lkc-1",'
                   b'"resourceId":"rid-1","resourceType":"topic","associationType":"value",'
                   b'"subject":"orders-value","lifecycle":"STRONG","frozen":false,"createTs":1700000000000}')
    key = AssociationKey("orders", "lkc-1", "topic", "value", "orders-value")
    assert decode_value(key, raw) == value


def test_guid_is_confluents_md5_of_the_content():
    # SchemaValuesTest.testSchemaValueMD5 pins this schema's MD5 bytes.
    text = '{"type":"record","name":"myrecord","fields":[{"type":"string","default":null,"name":"f"}]}'
    pinned = bytes(b % 256 for b in (29, 32, -53, -71, -27, -29, 94, -105, 84, -25, -38, 23, 11, 110, 93, -37))
    assert content_md5(text, (), None, None) == pinned == hashlib.md5(text.encode()).digest()
    assert guid_of(pinned) == str(uuid.UUID(bytes=pinned))
    for digest in (bytes(16), b"\xff" * 16, hashlib.md5(b"x").digest(), bytes(range(16))):
        assert guid_of(digest) == str(uuid.UUID(bytes=digest))
    with_meta = content_md5(text, (), Metadata(), None)
    assert with_meta == hashlib.md5(text.encode() + b"\x01").digest(), "empty metadata still marks its presence"


def test_contracts_take_part_in_the_content_an_id_names():
    cache = Cache()
    plain = SchemaValue("s", 1, 1, '"string"')
    tagged = SchemaValue("s", 2, 2, '"string"', metadata=META)
    for value in (plain, tagged):
        cache.apply(SchemaKey("s", value.version), encode_key(SchemaKey("s", value.version)), value)
    assert cache.schema_by_id(1).guid != cache.schema_by_id(2).guid, "metadata changes the guid"
    assert cache.schema_by_id(2).metadata == META


def test_a_context_subject_numbers_its_ids_apart():
    cache = Cache()
    for subject, schema in (("a", '"int"'), (":.ctx:a", '"long"')):
        key = SchemaKey(subject, 1)
        cache.apply(key, encode_key(key), SchemaValue(subject, 1, 1, schema))
    assert cache.conflicts == 0, "id 1 of .ctx is not id 1 of the default context"
    assert cache.schema_by_id(1).schema == '"int"' and cache.schema_by_id(1, ".ctx").schema == '"long"'
    assert cache.contexts() == [".", ".ctx"]


@pytest.mark.parametrize("body", [
    {"tags": {"x": ["t"] * 2000}},
    {"properties": {str(i): "v" for i in range(5000)}},
    {"properties": {"k": 5}},
    {"sensitive": "a"},
    {"properties": {"k": "x" * 70_000}},
    [],
])
def test_malformed_or_oversized_metadata_is_refused_when_strict_and_dropped_when_not(body):
    with pytest.raises(ContractError):
        metadata_from_json(body, strict=True)
    metadata_from_json(body, strict=False)  # a record is never refused for it


def test_rule_sets_read_leniently_from_the_log_drop_what_they_cannot_read():
    found = rule_set_from_json({"domainRules": [{"name": "ok", "type": "CEL", "mode": "WRITE"}, 5, {"kind": 1}],
                                "enableAt": 3}, strict=False)
    assert [r.name for r in found.domain_rules] == ["ok"] and found.enable_at is None
