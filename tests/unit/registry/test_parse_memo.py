"""ParseMemo: a repeated submission is parsed once; what the parse depends on is the key;
refusals are not remembered; the memo stays within its weight."""
from __future__ import annotations

import json

import pytest

from registry import errors
from registry.node import build_node
from registry.parse_memo import _ENTRY_OVERHEAD, ParseMemo
from registry.service import NewSchema, RegisterRequest
from registry.settings import load_settings
from store.memory_log import MemoryLog
from store.records import SchemaReference


class Counting:
    """A parse that counts its calls and hands back a fresh object each time."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> object:
        self.calls += 1
        return object()


def test_the_same_text_type_references_and_strictness_parse_once():
    memo, parse = ParseMemo(), Counting()
    first = memo.parse("AVRO", '"string"', {}, False, parse)
    assert memo.parse("AVRO", '"string"', {}, False, parse) is first, "a repeat is a dictionary hit"
    assert parse.calls == 1
    for other in (("JSON", '"string"', {}, False), ("AVRO", ' "string"', {}, False),
                  ("AVRO", '"string"', {"r": '"int"'}, False), ("AVRO", '"string"', {}, True)):
        memo.parse(*other, parse)
    assert parse.calls == 5, "type, exact text, referenced texts and strictness each change the key"


def test_a_parse_that_raises_is_not_remembered():
    memo = ParseMemo()

    def refuse() -> object:
        raise ValueError("invalid")

    for _ in range(2):
        with pytest.raises(ValueError):
            memo.parse("AVRO", "{", {}, False, refuse)
    assert len(memo) == 0, "a refusal must be decided again (it may depend on the cache)"


def test_the_memo_evicts_the_least_recently_used_beyond_its_weight():
    memo, parse = ParseMemo(max_weight=10_000), Counting()
    texts = [f'"{i:04d}' + "x" * 2000 + '"' for i in range(10)]
    for text in texts:
        memo.parse("AVRO", text, {}, False, parse)
    assert len(memo) <= 10_000 // 2000, "bounded by the weight of the texts it holds"
    memo.parse("AVRO", texts[-1], {}, False, parse)
    assert parse.calls == 10, "the most recent text is still held"
    memo.parse("AVRO", "x" * 20_000, {}, False, parse)
    assert parse.calls == 11 and len(memo) <= 5, "a text heavier than the memo is parsed, not held"


def test_a_hit_keeps_its_entry_and_the_least_recently_used_goes_first():
    memo, parse = ParseMemo(max_weight=4 * (_ENTRY_OVERHEAD + 1000)), Counting()
    texts = [f"{i}" + "x" * 999 for i in range(5)]
    for text in texts[:4]:
        memo.parse("AVRO", text, {}, False, parse)
    assert len(memo) == 4 and parse.calls == 4, "four entries of their weight fit in four times it"
    memo.parse("AVRO", texts[0], {}, False, parse)  # the oldest, used again
    memo.parse("AVRO", texts[4], {}, False, parse)  # a fifth: one must go
    assert parse.calls == 5 and len(memo) == 4
    memo.parse("AVRO", texts[0], {}, False, parse)
    assert parse.calls == 5, "the entry used again stayed"
    memo.parse("AVRO", texts[1], {}, False, parse)
    assert parse.calls == 6, "the least recently used one went"


def test_a_repeated_lookup_parses_the_submitted_text_once():
    node = build_node(load_settings(environ={}), MemoryLog())
    try:
        assert node.writer.wait_ready(5)
        text = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]})
        node.service.register("s", RegisterRequest(NewSchema(text)))
        memo = node.service._parse_memo
        before = memo.misses
        for _ in range(5):
            assert node.service.lookup("s", NewSchema(text)).version == 1
        assert memo.misses == before, "a serializer's repeated lookup must not parse again"
        with pytest.raises(errors.InvalidSchema):
            node.service.lookup("s", NewSchema('{"type": "record"'))
        ref = NewSchema(json.dumps({"type": "record", "name": "Q", "fields": [{"name": "r", "type": "R"}]}),
                        references=(SchemaReference("R", "s", 1),))
        node.service.register("q", RegisterRequest(ref))
        assert node.service.lookup("q", ref).version == 1, "references resolve as before"
    finally:
        node.close()
