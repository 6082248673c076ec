"""The compiled replay (store/replay_native) against the Python path it stands in for.

Every stream here is applied twice, by a reader over a cache with the compiled module
and by one without it, and the two caches must agree in every map, every pending queue
and every counter, down to the type of each entry. The records are Confluent's format
and every odd form of it we could think of: the compiled code must take only what the
Python path would decode to a plain value and only add, and leave the rest to Python.
"""
from __future__ import annotations

import json
import shutil
from collections import deque
from pathlib import Path

import pytest

from store import cache as cache_module
from store.cache import Cache
from store.log import LogBatch
from store.memory_log import MemoryLog
from store.reader import LogReader
from store.records import LogRecord

# Where `make native` looks for cargo.
CARGO = shutil.which("cargo") or (str(Path.home() / ".cargo/bin/cargo") if (Path.home() / ".cargo/bin/cargo").exists()
                                  else None)

pytestmark = pytest.mark.skipif(
    cache_module._native_plain_run is None and CARGO is None,
    reason="store/replay_native is not built and cargo is not on this machine to build it")

KEY = b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}'
VALUE = b'{"subject":"s","version":1,"id":1,"schema":"\\"string\\"","deleted":false}'


def key(subject: str = "s", version: object = 1, extra: str = "") -> bytes:
    text = f'{{"keytype":"SCHEMA","subject":"{subject}","version":{version},"magic":1{extra}}}'
    return text.encode()


def value(schema_id: object = 1, schema: str = '"\\"string\\""', extra: str = "") -> bytes:
    return f'{{"subject":"s","version":1,"id":{schema_id},"schema":{schema}{extra}}}'.encode()


# (raw key, raw value): each odd in one way, after a plain record and before another.
ODD_RECORDS: list[tuple[bytes, bytes | None]] = [
    # keys
    (b'{"keytype":"SCHEMA","subject":"s","version":1}', VALUE),  # no magic
    (key(extra=',"magic":0'), VALUE),  # magic twice
    (b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":true}', VALUE),
    (b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":null}', VALUE),
    (b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1.5}', VALUE),
    (b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":"1"}', VALUE),
    (b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":123456789012345678901234}', VALUE),
    (b'{"keytype":"CONFIG","keytype":"SCHEMA","subject":"s","version":1,"magic":1}', VALUE),
    (b'{"keytype":"SCHEMA","keytype":"CONFIG","subject":null,"magic":0}',
     b'{"compatibilityLevel":"NONE"}'),
    (b'{"keytype":"SCHEMA","subject":"s","subject":"t","version":1,"magic":1}', VALUE),
    (b'{"keytype":"SCHEMA","subject":5,"version":1,"magic":1}', VALUE),
    (b'{"keytype":"SCHEMA","subject":null,"version":1,"magic":1}', VALUE),
    (key(version='"1"'), VALUE),
    (key(version="1.0"), VALUE),
    (key(version="1e0"), VALUE),
    (key(version="true"), VALUE),
    (key(version="-1"), VALUE),
    (key(version="0"), VALUE),
    (key(version=str(2 ** 63)), VALUE),
    (key(version=str(2 ** 64 + 1)), VALUE),
    (key(subject=":.ctx:s"), VALUE),
    (key(subject=":.ctx:"), VALUE),
    (key(subject="caf\\u00e9"), VALUE),
    (key(subject="\\ud800"), VALUE),  # a lone surrogate
    (key(subject="\\ud83d\\ude00"), VALUE),  # a pair
    ("{\"keytype\":\"SCHEMA\",\"subject\":\"é\",\"version\":1,\"magic\":1}".encode(), VALUE),
    (b'{"keytype":"SCHEMA","subject":"\xff","version":1,"magic":1}', VALUE),  # not UTF-8
    (b' {"keytype":"SCHEMA","subject":"s","version":1,"magic":1} ', VALUE),
    (b'\xef\xbb\xbf{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}', VALUE),  # a BOM
    (b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1,}', VALUE),
    (b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}x', VALUE),
    (b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1,"x":NaN}', VALUE),
    (b'["SCHEMA"]', VALUE),
    (b'"SCHEMA"', VALUE),
    (b'', VALUE),
    (key(extra=',"x":' + "[" * 200 + "]" * 200), VALUE),
    (key(extra=',"x":' + "[" * 5000 + "]" * 5000), VALUE),
    # values
    (KEY, None),  # a tombstone
    (KEY, b'[]'),
    (KEY, b'null'),
    (KEY, b'{"id":1,"schema":"\\"string\\""'),
    (KEY, value(extra=',"id":2')),  # id twice
    (KEY, value(schema_id="1.0")),
    (KEY, value(schema_id="true")),
    (KEY, value(schema_id='"1"')),
    (KEY, value(schema_id="-7")),
    (KEY, value(schema_id="0")),
    (KEY, value(schema_id=str(2 ** 63))),
    (KEY, value(schema_id=str(2 ** 64 + 1))),
    (KEY, value(schema='5')),
    (KEY, value(schema='null')),
    (KEY, b'{"id":1}'),
    (KEY, value(schema='"caf\\u00e9 \\ud83d\\ude00 \\u0000 \\n\\t\\/\\\\"')),
    (KEY, value(schema='"\\ud800"')),
    (KEY, value(schema='"\\udc00\\ud800"')),
    (KEY, value(schema='"\x01"')),  # a raw control character
    (KEY, value(schema='"\xff"')),
    (KEY, value(schema='"é"'.encode().decode("latin-1"))),
    (KEY, value(extra=',"schemaType":""')),
    (KEY, value(extra=',"schemaType":null')),
    (KEY, value(extra=',"schemaType":"JSON"')),
    (KEY, value(extra=',"schemaType":"AVRO"')),
    (KEY, value(extra=',"schemaType":0')),
    (KEY, value(extra=',"schemaType":false')),
    (KEY, value(extra=',"schemaType":[]')),
    (KEY, value(extra=',"schemaType":1')),
    (KEY, value(extra=',"deleted":true')),
    (KEY, value(extra=',"deleted":1')),
    (KEY, value(extra=',"deleted":"true"')),
    (KEY, value(extra=',"deleted":null')),
    (KEY, value(extra=',"md5":""')),
    (KEY, value(extra=',"md5":null')),
    (KEY, value(extra=',"md5":"CY9rzUYh03PK3k6DJie09g=="')),
    (KEY, value(extra=',"md5":"nonsense"')),
    (KEY, value(extra=',"md5":5')),
    (KEY, value(extra=',"references":[]')),
    (KEY, value(extra=',"references":null')),
    (KEY, value(extra=',"references":{}')),
    (KEY, value(extra=',"references":""')),
    (KEY, value(extra=',"references":0')),
    (KEY, value(extra=',"references":false')),
    (KEY, value(extra=',"references":[{"name":"n","subject":"s","version":1}]')),
    (KEY, value(extra=',"references":[5]')),
    (KEY, value(extra=',"metadata":null')),
    (KEY, value(extra=',"metadata":{}')),
    (KEY, value(extra=',"metadata":{"properties":{"a":"b"}}')),
    (KEY, value(extra=',"ruleSet":null')),
    (KEY, value(extra=',"ruleSet":{}')),
    (KEY, value(extra=',"unknown":{"deep":[1,2,{"x":null}]}')),
    (KEY, value(extra=',"x":' + "[" * 200 + "]" * 200)),
    (KEY, value(extra=',"x":' + "[" * 5000 + "]" * 5000)),
    (KEY, value(extra=',"x":1e400')),
    (KEY, value(extra=',"x":-0.0')),
]


def plain(subject: str, version: int, schema_id: int, schema: str = '"string"') -> tuple[bytes, bytes]:
    k = f'{{"keytype":"SCHEMA","subject":"{subject}","version":{version},"magic":1}}'.encode()
    v = (f'{{"subject":"{subject}","version":{version},"id":{schema_id},'
         f'"schema":{json.dumps(schema)},"deleted":false}}').encode()
    return k, v


def snapshot(cache: Cache, reader: LogReader) -> dict[str, object]:
    """Everything the cache and reader hold, entries with their types."""
    def typed(item: object) -> object:
        if isinstance(item, dict):
            return {k: typed(v) for k, v in item.items()}
        if isinstance(item, (deque, list)):
            return [typed(v) for v in item]
        if isinstance(item, set):
            return sorted(repr(typed(v)) for v in item)
        if isinstance(item, tuple):
            return (type(item).__name__, tuple(typed(v) for v in item))
        return (type(item).__name__, item)

    state = {name: typed(item) for name, item in vars(cache).items()
             if name not in ("_entries_lock", "_content_lock", "_md5_lock", "plain_run")}
    state["reader"] = (reader.skipped, reader.dropped, dict(reader.misplaced_latest), reader.next_offset)
    return state


class Counting:
    """A cache's `plain_run`, counting the records the compiled code took."""

    def __init__(self, cache: Cache) -> None:
        self.taken = 0
        self._run = cache.plain_run
        cache.plain_run = self

    def __call__(self, records: list, position: int, start: int) -> tuple[int, int]:
        end, taken = self._run(records, position, start)
        self.taken += taken
        return end, taken


def replay(records: list[LogRecord], native: bool, start: int = 0,
           batch: int = 1000) -> tuple[dict[str, object], int]:
    cache = Cache(native=native)
    counting = Counting(cache) if native else None
    reader = LogReader(MemoryLog(), cache)
    for first in range(0, len(records), batch):
        chunk = records[first:first + batch]
        with reader._apply_lock:
            reader._next_offset = max(reader._next_offset, start)
            reader._apply_batch_locked(LogBatch(chunk, chunk[-1].offset + 1))
    return snapshot(cache, reader), (counting.taken if counting else 0)


def as_log(pairs: list[tuple[bytes, bytes | None]], expected: dict[int, int] | None = None) -> list[LogRecord]:
    return [LogRecord(offset, k, v, (expected or {}).get(offset)) for offset, (k, v) in enumerate(pairs)]


def test_the_compiled_module_is_built_where_cargo_is():
    assert cache_module._native_plain_run is not None, (
        "cargo is on this machine but store/replay_native is not built: run `make install`")
    assert Cache().plain_run is not None and Cache(native=False).plain_run is None


@pytest.mark.parametrize("odd", ODD_RECORDS, ids=[f"{n}" for n in range(len(ODD_RECORDS))])
def test_an_odd_record_is_applied_as_the_python_path_applies_it(odd):
    records = as_log([plain("a", 1, 10), odd, plain("b", 1, 11), odd, plain("c", 1, 12)])
    native, taken = replay(records, native=True)
    python, _ = replay(records, native=False)
    assert native == python
    assert taken >= 3, "the plain records around it must be the compiled code's"


def test_a_stream_of_every_kind_is_applied_alike():
    pairs: list[tuple[bytes, bytes | None]] = []
    for n in range(1, 400):
        pairs.append(plain(f"subject-{n % 50}", n // 50 + 1, n, f'{{"type":"fixed","name":"f{n}","size":{n}}}'))
        if n % 7 == 0:
            pairs.append(plain(f"other-{n}", 1, n))  # an id in use again, same content
        if n % 11 == 0:
            pairs.append(plain(f"clash-{n}", 1, n, '"int"'))  # an id in use, other content
        if n % 13 == 0:
            pairs.append((plain(f"subject-{n % 50}", n // 50 + 1, 0)[0], None))  # a tombstone
        if n % 17 == 0:
            pairs.append(plain(f"subject-{n % 50}", n // 50 + 1, 10_000 + n))  # a version re-pointed
        if n % 19 == 0:
            pairs.append(ODD_RECORDS[n % len(ODD_RECORDS)])
        if n % 23 == 0:
            pairs.append((b'{"keytype":"DELETE_SUBJECT","subject":"subject-3","magic":0}',
                          b'{"subject":"subject-3","version":3}'))
        if n % 29 == 0:
            pairs.append(plain(f":.ctx:s{n}", 1, n))
    for batch in (1, 7, 1000):
        native, taken = replay(as_log(pairs), native=True, batch=batch)
        python, _ = replay(as_log(pairs), native=False, batch=batch)
        assert native == python, f"batches of {batch}"
        assert taken > 300


def test_expected_offsets_and_the_reader_start_are_honoured_alike():
    pairs = [plain(f"s{n}", 1, n) for n in range(1, 30)]
    expected = {3: 3, 5: 4, 6: 6, 9: 9, 10: 12}  # 5 and 10 landed where their writers did not expect
    records = as_log(pairs, expected)
    for start in (0, 4, 20):
        native, taken = replay(records, native=True, start=start)
        python, _ = replay(records, native=False, start=start)
        assert native == python, f"start {start}"
        assert python["reader"][1] == sum(1 for offset in (5, 10) if offset >= start)
        assert taken > 0


def test_the_compiled_code_only_adds():
    """What it takes leaves the cache as the Python path would, and it never takes a
    record that would replace or conflict (those stop the run)."""
    cache = Cache()
    records = as_log([plain("a", 1, 1), plain("a", 2, 2), plain("a", 1, 3), plain("b", 1, 1)])
    end, taken = cache.plain_run(records, 0, 0)
    assert (end, taken) == (2, 2), "a version seen before stops the run"
    end, taken = cache.plain_run(records, 3, 0)
    assert (end, taken) == (3, 0), "an id in use stops the run"
    assert cache.schema_by_id(2).schema == '"string"' and cache.max_id == 2


def test_long_runs_parsed_ahead_stop_and_resume_at_odd_records():
    """Long runs of plain records (a topic being caught up with), each ended by an odd
    record at another place in the run, and taken up again after it."""
    pairs = [plain(f"lead-{n}", 1, 100_000 + n) for n in range(1100)]
    for n, odd in enumerate(ODD_RECORDS[::16]):
        pairs.append(odd)
        pairs += [plain(f"s{n}-{m}", 1, 200_000 + 10_000 * n + m) for m in range(1100 + 211 * n)]
    native, taken = replay(as_log(pairs), native=True, batch=len(pairs))
    python, _ = replay(as_log(pairs), native=False, batch=len(pairs))
    assert native == python
    assert taken >= len(pairs) - 2 * len(ODD_RECORDS[::16])
