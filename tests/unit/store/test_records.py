"""Record bytes must match Confluent's `_schemas` format exactly (DESIGN invariant 7)."""
from __future__ import annotations

import pytest

from store.records import (
    ClearSubjectKey,
    ClearSubjectValue,
    ConfigKey,
    ConfigValue,
    DeleteSubjectKey,
    DeleteSubjectValue,
    ModeKey,
    ModeValue,
    NoopKey,
    RecordFormatError,
    SchemaKey,
    SchemaReference,
    SchemaValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    logical_key,
)

KEY_BYTES = [
    (SchemaKey("test-value", 3), b'{"keytype":"SCHEMA","subject":"test-value","version":3,"magic":1}'),
    (SchemaKey("old", 1, magic=0), b'{"keytype":"SCHEMA","subject":"old","version":1,"magic":0}'),
    (ConfigKey(None), b'{"keytype":"CONFIG","magic":0}'),
    (ConfigKey("s"), b'{"keytype":"CONFIG","subject":"s","magic":0}'),
    (ModeKey(None), b'{"keytype":"MODE","magic":0}'),
    (ModeKey("s"), b'{"keytype":"MODE","subject":"s","magic":0}'),
    (NoopKey(), b'{"keytype":"NOOP","magic":0}'),
    (DeleteSubjectKey("s"), b'{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}'),
    (ClearSubjectKey("s"), b'{"keytype":"CLEAR_SUBJECT","subject":"s","magic":0}'),
]


@pytest.mark.parametrize("key,expected", KEY_BYTES)
def test_keys_encode_exactly_as_confluent_writes_them(key, expected):
    # Compaction compares these bytes: a differing byte keeps a deleted schema alive.
    assert encode_key(key) == expected


@pytest.mark.parametrize("key,raw", KEY_BYTES)
def test_keys_round_trip(key, raw):
    assert decode_key(raw) == key


def test_non_ascii_subject_is_raw_utf8_and_escapes_match_jackson():
    raw = encode_key(SchemaKey('é/"x"\n', 1))
    assert raw == '{"keytype":"SCHEMA","subject":"é/\\"x\\"\\n","version":1,"magic":1}'.encode()


def test_schema_value_bytes_for_avro_omit_type_and_empty_references():
    value = SchemaValue("s", 1, 7, '"string"')
    assert encode_value(value) == b'{"subject":"s","version":1,"id":7,"schema":"\\"string\\"","deleted":false}'


def test_schema_value_bytes_with_type_and_references():
    value = SchemaValue("s", 2, 9, "{}", "JSON", (SchemaReference("r", "other", 1),), deleted=True)
    assert encode_value(value) == (
        b'{"subject":"s","version":2,"id":9,"schemaType":"JSON",'
        b'"references":[{"name":"r","subject":"other","version":1}],"schema":"{}","deleted":true}')


def test_other_values_bytes():
    assert encode_value(ConfigValue("FULL")) == b'{"compatibilityLevel":"FULL"}'
    assert encode_value(ConfigValue("FULL", "s")) == b'{"subject":"s","compatibilityLevel":"FULL"}'
    assert encode_value(ModeValue("IMPORT")) == b'{"mode":"IMPORT"}'
    assert encode_value(DeleteSubjectValue("s", 4)) == b'{"subject":"s","version":4}'
    assert encode_value(ClearSubjectValue("s")) == b'{"subject":"s"}'
    assert encode_value(None) is None, "a tombstone is a key with a null value"


def test_decoding_accepts_karapace_and_old_confluent_forms():
    # Karapace writes the global config key with an explicit null subject.
    assert decode_key(b'{"keytype": "CONFIG", "subject": null, "magic": 0}') == ConfigKey(None)
    # Field order does not matter when reading, and unknown fields are ignored.
    assert decode_key(b'{"magic":1,"version":2,"subject":"s","keytype":"SCHEMA","x":1}') == SchemaKey("s", 2)
    key = SchemaKey("s", 1)
    # Old values had no "deleted" and no schemaType.
    assert decode_value(key, b'{"subject":"s","version":1,"id":3,"schema":"\\"int\\""}') == \
        SchemaValue("s", 1, 3, '"int"')
    assert decode_value(key, b'{"subject":"s","version":1,"id":3,"schema":"x","schemaType":null,'
                             b'"references":null,"deleted":true}') == SchemaValue("s", 1, 3, "x", deleted=True)
    assert decode_value(ConfigKey(None), b'{"compatibilityLevel":"NONE"}') == ConfigValue("NONE")


def test_both_magic_forms_share_a_logical_identity():
    assert logical_key(SchemaKey("s", 1, 0)) == logical_key(SchemaKey("s", 1, 1))
    assert encode_key(SchemaKey("s", 1, 0)) != encode_key(SchemaKey("s", 1, 1))


@pytest.mark.parametrize("raw", [b"not json", b"[]", b'{"keytype":"WHAT"}', b'{"keytype":"SCHEMA","subject":"s"}',
                                 b'{"keytype":"DELETE_SUBJECT"}', b"\xff\xfe"])
def test_malformed_keys_raise_record_format_error(raw):
    with pytest.raises(RecordFormatError):
        decode_key(raw)


def test_noop_value_is_ignored_whatever_it_holds():
    assert decode_value(NoopKey(), b"anything") is None
