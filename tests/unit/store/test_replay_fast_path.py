"""Replay's fast path: `decode_schema_record` and the cache's lazily built values give
exactly the answers the eager path (`decode_key`, `decode_value`, `Cache.apply`) gives,
for our records, foreign ones, and the malformed ones replay must skip or tolerate."""
from __future__ import annotations

import base64
import hashlib
import threading

import pytest

from store.cache import Cache, StoredSchema
from store.memory_log import MemoryLog
from store.reader import LogReader
from store.records import (
    ClearSubjectKey,
    ClearSubjectValue,
    ConfigKey,
    ConfigValue,
    DeleteSubjectKey,
    DeleteSubjectValue,
    PlainSchemaValue,
    RecordFormatError,
    SchemaKey,
    SchemaReference,
    SchemaValue,
    decode_key,
    decode_schema_record,
    decode_value,
    encode_key,
    encode_value,
)

MD5 = base64.b64encode(hashlib.md5(b"x").digest()).decode()

# (raw key, raw value): ours, Confluent's and Karapace's forms, and malformed records.
RECORDS: list[tuple[bytes, bytes | None]] = [
    (b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}',
     b'{"subject":"s","version":1,"id":1,"schema":"\\"string\\"","deleted":false}'),
    (b'{"keytype":"SCHEMA","subject":"s","version":2,"magic":0}',  # old magic, foreign order
     b'{"schema":"\\"int\\"","id":2,"version":2,"subject":"s","schemaType":"AVRO","extra":[1]}'),
    (b'{"keytype":"SCHEMA","subject":"s","version":3,"magic":1}',  # subject/version differ: the key's count
     b'{"subject":"other","version":9,"id":3,"schema":"{}","schemaType":"JSON","deleted":true}'),
    (b'{"keytype":"SCHEMA","subject":"s","version":4,"magic":1}',
     f'{{"subject":"s","version":4,"id":4,"md5":"{MD5}","schema":"x","deleted":false}}'.encode()),
    (b'{"keytype":"SCHEMA","subject":"s","version":5,"magic":1}',  # a malformed md5 is kept as a string
     b'{"subject":"s","version":5,"id":5,"md5":"","schema":"y","schemaType":null,"deleted":"yes"}'),
    (b'{"keytype":"SCHEMA","subject":"r","version":1,"magic":1}',  # references: the full decoder
     b'{"subject":"r","version":1,"id":6,"schema":"z","references":[{"name":"n","subject":"s","version":1}]}'),
    (b'{"keytype":"SCHEMA","subject":"m","version":1,"magic":1}',  # metadata and rule set
     b'{"subject":"m","version":1,"id":7,"schema":"w","metadata":{"properties":{"a":"b"}},'
     b'"ruleSet":{"domainRules":[]}}'),
    (b'{"keytype":"SCHEMA","subject":"e","version":1,"magic":1}', b'{"id":8,"schema":"v","references":[]}'),
    (b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}', None),  # a tombstone
    (b'{"keytype":"CONFIG","subject":"s","magic":0}', b'{"compatibilityLevel":"FULL"}'),
    (b'{"keytype":"NOOP","magic":0}', None),
    # Malformed: every one of these is skipped by either path.
    (b'not json', b'{}'),
    (b'[1,2]', b'{}'),
    (b'{"keytype":"SCHEMA","subject":1,"version":1}', b'{"id":1,"schema":"x"}'),
    (b'{"keytype":"SCHEMA","subject":"s","version":"1"}', b'{"id":1,"schema":"x"}'),
    (b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":"1"}', b'{"id":1,"schema":"x"}'),
    (b'{"keytype":"SCHEMA","subject":"s","version":1}', b'{"id":"1","schema":"x"}'),
    (b'{"keytype":"SCHEMA","subject":"s","version":1}', b'{"id":1,"schema":null}'),
    (b'{"keytype":"SCHEMA","subject":"s","version":1}', b'{"id":1,"schema":"x","schemaType":3}'),
    (b'{"keytype":"SCHEMA","subject":"s","version":1}', b'{"id":1,"schema":"x","references":"r"}'),
    (b'{"keytype":"SCHEMA","subject":"s","version":1}', b'[]'),
    (b'{"keytype":"SCHEMA","subject":"s","version":1}', b'\xff'),
    (b'{"keytype":"BOGUS","magic":0}', b'{}'),
]


def eager(raw_key: bytes, raw_value: bytes | None):
    key = decode_key(raw_key)
    return key, decode_value(key, raw_value)


@pytest.mark.parametrize("raw_key,raw_value", RECORDS)
def test_fast_decoding_stands_for_what_the_full_decoder_gives(raw_key, raw_value):
    try:
        expected = eager(raw_key, raw_value)
    except RecordFormatError:
        with pytest.raises(RecordFormatError):  # a record replay skips is skipped on both paths
            decoded = decode_schema_record(raw_key, raw_value)
            if decoded is None:  # not a SCHEMA key: the reader decodes it the full way
                eager(raw_key, raw_value)
        return
    decoded = decode_schema_record(raw_key, raw_value)
    key, value = expected
    if not isinstance(key, SchemaKey):
        assert decoded is None, "only SCHEMA records take the fast path"
        return
    subject, version, fast = decoded
    assert (subject, version) == (key.subject, key.version), "the key decodes to the same subject and version"
    if value is None:
        assert fast is None, "a tombstone stays a tombstone"
    elif isinstance(fast, PlainSchemaValue):
        assert fast.value(value.subject, value.version) == value, "the tuple stands for the same value"
        assert not value.references and value.metadata is None and value.rule_set is None, \
            "only values without references, metadata or rule set are kept as tuples"
    else:
        assert fast == value, "values with references or contracts are decoded in full"


def replayed(records: list[tuple[bytes, bytes | None]]) -> tuple[Cache, LogReader]:
    log = MemoryLog()
    for raw_key, raw_value in records:
        log.append(raw_key, raw_value)
    cache = Cache()
    reader = LogReader(log, cache)
    reader.start()
    try:
        assert reader.catch_up(5), "the reader caught up"
    finally:
        reader.stop()
    return cache, reader


def applied_eagerly(records: list[tuple[bytes, bytes | None]]) -> Cache:
    cache = Cache()
    for raw_key, raw_value in records:
        try:
            key, value = eager(raw_key, raw_value)
        except RecordFormatError:
            continue
        cache.apply(key, raw_key, value)
    return cache


def test_a_replayed_cache_answers_as_one_applied_record_by_record():
    records = [r for r in RECORDS if r[1] is not None or b"NOOP" in r[0]] + [
        (encode_key(SchemaKey("t", 1)), encode_value(SchemaValue("t", 1, 1, '"string"'))),  # id 1 shared
        (encode_key(SchemaKey("t", 2)), encode_value(SchemaValue("t", 2, 1, "OTHER"))),  # a conflict
        (encode_key(DeleteSubjectKey("t")), encode_value(DeleteSubjectValue("t", 1))),
        (encode_key(SchemaKey("u", 1)), encode_value(SchemaValue("u", 1, 20, "u1"))),
        (encode_key(ClearSubjectKey("u")), encode_value(ClearSubjectValue("u"))),
        (encode_key(ConfigKey(None)), encode_value(ConfigValue("NONE"))),
    ]
    fast, reader = replayed(records)
    slow = applied_eagerly(records)
    assert reader.skipped == sum(1 for k, v in records if _malformed(k, v)), "the same records are skipped"
    assert fast.conflicts == slow.conflicts == 1, "an id keeps its first content on both paths"
    assert fast.version("t", 1).deleted, "a soft delete applies to a version held as a tuple"
    assert fast.schema_by_id(20) is None, "a cleared subject's only id is gone"
    assert fast.fingerprint() == slow.fingerprint(), "both paths build the same cache"
    for subject in slow.subjects():
        assert fast.versions(subject) == slow.versions(subject), f"the versions of {subject} read the same"
    for schema_id in slow.schema_ids():
        assert fast.schema_by_id(schema_id) == slow.schema_by_id(schema_id), f"id {schema_id} reads the same"
        assert fast.schema_by_id(schema_id).md5 == slow.schema_by_id(schema_id).md5, "the content hash agrees"
    assert fast.key_bytes(SchemaKey("s", 2)) == slow.key_bytes(SchemaKey("s", 2)), "key bytes kept for tombstones"


def _malformed(raw_key: bytes, raw_value: bytes | None) -> bool:
    try:
        eager(raw_key, raw_value)
    except RecordFormatError:
        return True
    return False


def test_a_read_builds_each_value_once():
    records = [(encode_key(SchemaKey("a", 1)), encode_value(SchemaValue("a", 1, 1, "x", md5=MD5)))]
    cache, _ = replayed(records)
    stored = cache.schema_by_id(1)
    assert isinstance(stored, StoredSchema) and stored.md5 == base64.b64decode(MD5), \
        "an id read gives a StoredSchema with the record's md5"
    assert cache.schema_by_id(1) is stored, "the same object answers later reads (the id fast path memo needs it)"
    assert cache.version("a", 1) is cache.version("a", 1) is cache.versions("a")[0], \
        "a version is built once"
    assert cache.id_by_md5(".", base64.b64decode(MD5)) == 1, "the md5 index sees lazily held ids"


def test_a_read_never_puts_back_a_value_the_log_replaced():
    # A read that built its value from an entry the reader has since replaced must not
    # write it back: the newer record would be lost from this node's cache.
    cache = Cache()
    key = SchemaKey("a", 1)
    cache.apply_schema("a", 1, encode_key(key), PlainSchemaValue(1, "x"))
    versions = cache._versions["a"]
    stale = versions[1]
    cache.apply_schema("a", 1, encode_key(key), PlainSchemaValue(2, "y"))  # the log moves on
    assert cache._schema_value("a", versions, 1, stale).id == 1, "the stale read answers what it read"
    assert cache.version("a", 1).id == 2, "the newer record stays in place"
    cache.apply_schema("a", 1, encode_key(key), None)
    ids = cache._ids["."]
    assert cache._stored_schema(ids, 2, ".") is None and 2 not in ids, "a released id does not come back"


def test_reads_racing_the_reader_see_applied_records_only():
    cache = Cache()
    stop = threading.Event()
    seen: list[str] = []

    def read() -> None:
        while not stop.is_set():
            for schema_id in cache.schema_ids():
                stored = cache.schema_by_id(schema_id)
                if stored is not None and stored.schema != f"s{schema_id}":
                    seen.append(f"id {schema_id} read {stored.schema}")

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for n in range(1, 3000):
            key = SchemaKey(f"s{n % 50}", 1)
            cache.apply_schema(key.subject, 1, encode_key(key), PlainSchemaValue(n, f"s{n}"))
    finally:
        stop.set()
        reader.join()
    assert not seen, "an id never reads another id's content"
    assert sorted(cache.schema_ids()) == list(range(2950, 3000)), "released ids were not put back by reads"
    assert cache.fingerprint() == applied_eagerly(
        [(encode_key(SchemaKey(f"s{n % 50}", 1)), encode_value(SchemaValue(f"s{n % 50}", 1, n, f"s{n}")))
         for n in range(1, 3000)]).fingerprint(), "racing reads leave the cache as the log says"


def test_a_schema_value_in_the_fast_path_keeps_its_references():
    ref = SchemaReference("n", "s", 1)
    raw_key = encode_key(SchemaKey("r", 1))
    raw_value = encode_value(SchemaValue("r", 1, 6, "z", references=(ref,)))
    subject, version, value = decode_schema_record(raw_key, raw_value)
    assert isinstance(value, SchemaValue) and value.references == (ref,), "references are decoded in full"



def test_the_content_index_gives_the_first_id_applied_for_a_content():
    # Replay leaves the content index for later; caught up later, it must still name
    # the first id applied for each content, in every context, even one gone since.
    records = [(encode_key(SchemaKey(subject, 1)), encode_value(SchemaValue(subject, 1, schema_id, text)))
               for subject, schema_id, text in [("a", 5, "x"), ("b", 7, "x"), (":.c:a", 5, "x"),
                                                (":.c:b", 3, "x"), ("d", 9, "y")]]
    records.append((encode_key(SchemaKey("a", 1)), None))  # id 5 is gone from the default context
    fast, _ = replayed(records)
    slow = applied_eagerly(records)
    for context, text in [(".", "x"), (".c", "x"), (".", "y"), (".", "z")]:
        content = (context, "AVRO", text, (), None, None)
        assert fast.id_by_content(content) == slow.id_by_content(content), f"{context} {text}: same id both ways"
    assert fast.id_by_content((".", "AVRO", "x", (), None, None)) == 5, "the first id wins, though released"
    assert fast.id_by_content((".c", "AVRO", "x", (), None, None)) == 5, "contexts are indexed apart"
    later = Cache()
    for raw_key, raw_value in records:
        subject, version, value = decode_schema_record(raw_key, raw_value)
        later.apply_schema(subject, version, raw_key, value)
        later.index_contents()  # the reader indexes whenever it is idle: the same answers
    assert later.id_by_content((".", "AVRO", "x", (), None, None)) == 5
    assert later.id_by_content((".c", "AVRO", "x", (), None, None)) == 5


def test_the_users_of_an_id_are_counted_whether_one_or_several():
    # One user is held bare, several in a set: every transition answers as a set would.
    cache = Cache()

    def put(subject: str, version: int, schema_id: int) -> None:
        cache.apply_schema(subject, version, encode_key(SchemaKey(subject, version)),
                           PlainSchemaValue(schema_id, "x"))

    def drop(subject: str, version: int) -> None:
        cache.apply_schema(subject, version, encode_key(SchemaKey(subject, version)), None)

    put("a", 1, 1)
    put("a", 1, 1)  # the same record again: still one user
    assert cache.users_of(1) == [("a", 1)], "a single user, once"
    put("b", 1, 1)
    put("c", 2, 1)
    assert cache.users_of(1) == [("a", 1), ("b", 1), ("c", 2)], "several users, sorted"
    drop("b", 1)
    drop("a", 1)
    assert cache.users_of(1) == [("c", 2)] and cache.schema_by_id(1) is not None, "the id lives while used"
    drop("c", 2)
    assert cache.users_of(1) == [] and cache.schema_by_id(1) is None, "the last user's delete frees the id"
    put("d", 1, 2)
    drop("e", 1)  # another version's tombstone leaves a single user alone
    put("e", 1, 3)
    put("e", 1, 2)  # e v1 moves from id 3 to id 2: id 3 loses its only user
    assert cache.users_of(2) == [("d", 1), ("e", 1)] and cache.schema_by_id(3) is None, \
        "a version that changes id is released from the old one"
