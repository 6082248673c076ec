"""The cache is a pure function of the records applied (DESIGN invariant 1)."""
from __future__ import annotations

from store.cache import Cache
from store.memory_log import MemoryLog
from store.reader import LogReader
from store.records import (
    ClearSubjectKey,
    ClearSubjectValue,
    ConfigKey,
    ConfigValue,
    DeleteSubjectKey,
    DeleteSubjectValue,
    SchemaKey,
    SchemaValue,
    encode_key,
    encode_value,
)


def apply_all(records):
    cache = Cache()
    for key, value in records:
        cache.apply(key, encode_key(key), value)
    return cache


def test_same_records_give_identical_caches():
    records = [(SchemaKey("a", 1), SchemaValue("a", 1, 1, "x")),
               (SchemaKey("b", 1), SchemaValue("b", 1, 1, "x")),
               (ConfigKey("a"), ConfigValue("FULL", "a")),
               (SchemaKey("a", 2), SchemaValue("a", 2, 2, "y"))]
    assert apply_all(records).fingerprint() == apply_all(records).fingerprint()


def test_an_id_never_takes_other_content():
    cache = apply_all([(SchemaKey("a", 1), SchemaValue("a", 1, 1, "x")),
                       (SchemaKey("b", 1), SchemaValue("b", 1, 1, "DIFFERENT"))])
    assert cache.schema_by_id(1).schema == "x", "the first content applied for an id wins"
    assert cache.version("b", 1) is None and cache.conflicts == 1


def test_hard_delete_removes_schema_but_keeps_max_id():
    cache = apply_all([(SchemaKey("a", 1), SchemaValue("a", 1, 5, "x")),
                       (SchemaKey("a", 1), None)])
    assert cache.schema_by_id(5) is None
    assert cache.max_id == 5, "new ids must start above every id ever applied"


def test_delete_subject_soft_deletes_versions_up_to_its_version():
    cache = apply_all([(SchemaKey("a", 1), SchemaValue("a", 1, 1, "x")),
                       (SchemaKey("a", 2), SchemaValue("a", 2, 2, "y")),
                       (DeleteSubjectKey("a"), DeleteSubjectValue("a", 1))])
    assert [v.deleted for v in cache.versions("a")] == [True, False]


def test_clear_subject_removes_every_version():
    cache = apply_all([(SchemaKey("a", 1), SchemaValue("a", 1, 1, "x")),
                       (ClearSubjectKey("a"), ClearSubjectValue("a"))])
    assert cache.versions("a") == [] and cache.schema_by_id(1) is None


def test_every_key_byte_form_is_remembered_for_tombstones():
    cache = Cache()
    old, new = SchemaKey("a", 1, magic=0), SchemaKey("a", 1, magic=1)
    cache.apply(old, encode_key(old), SchemaValue("a", 1, 1, "x"))
    cache.apply(new, encode_key(new), SchemaValue("a", 1, 1, "x", deleted=True))
    assert sorted(cache.key_bytes(new)) == sorted([encode_key(old), encode_key(new)])
    cache.apply(new, encode_key(new), None)
    assert cache.key_bytes(new) == [encode_key(old)], "a tombstone retires only its own byte form"


def test_reader_applies_log_in_order_and_skips_corrupt_records():
    log = MemoryLog()
    log.append(b"not json", b"{}")
    log.append(encode_key(SchemaKey("a", 1)), encode_value(SchemaValue("a", 1, 1, "x")))
    cache = Cache()
    reader = LogReader(log, cache)
    reader.start()
    try:
        assert reader.catch_up(5), "the reader must get past a corrupt record"
        assert reader.skipped == 1
        assert cache.schema_by_id(1).schema == "x"
    finally:
        reader.stop()
