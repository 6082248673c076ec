"""`store.compact_json`: always the bytes the stdlib writes (compact, non-ASCII kept),
whichever encoder wrote them; and the Avro canonical text, written the same way."""
from __future__ import annotations

import json
from typing import Any

import pytest

from registry.schema_types.avro import AVRO
from store import compact_json


def stdlib(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def test_every_code_point_is_escaped_as_the_stdlib_escapes_it() -> None:
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    value = {"s": text, "k\n\"": [text[:300]]}
    assert compact_json.dumps(value) == stdlib(value)


@pytest.mark.parametrize("value", [
    {"a": 1e16, "b": [1e-7, 1.5e-05, 0.5, -0.0, 100.0, 1.7976931348623157e308]},  # the stdlib writes `1e-07`
    {"deep": [{"x": [[2.5]]}]},
    {"big": 2 ** 64, "small": -(2 ** 63) - 1, "edge": 2 ** 64 - 1},  # past 64 bits orjson refuses
    {"keytype": "SCHEMA", "subject": "s ü \u2028", "version": 1, "magic": 1},
    {"t": True, "f": False, "n": None, "tuple": (1, "2"), "empty": {}, "list": []},
])
def test_the_bytes_are_the_stdlibs(value: Any) -> None:
    assert compact_json.dumps(value) == stdlib(value)


def test_a_lone_surrogate_fails_as_it_did_with_the_stdlib() -> None:
    with pytest.raises(UnicodeEncodeError):
        compact_json.dumps({"s": "\ud800"})


def test_holds_float_finds_a_float_at_any_depth() -> None:
    assert compact_json.holds_float({"a": [{"b": (1, 2.0)}]})
    assert not compact_json.holds_float({"a": [{"b": (1, "2.0", True, None)}]})


@pytest.mark.parametrize("schema", [
    '{"type":"record","name":"R","fields":[{"name":"a","type":"double","default":1e-7}]}',
    '{"type":"record","name":"R","fields":[{"name":"a","type":"long","default":1}],"x-weight":1e-7}',
    '{"type":"record","name":"R","fields":[{"name":"a","type":"string","x-w":[0.5, 3e-300, 2.5e-5]}]}',
    '{"type":"fixed","name":"F","size":4,"x":{"y":2.5e-10}}',
    '{"type":"record","name":"R","fields":[{"name":"a","type":"long","x-big":18446744073709551616}]}',
    '{"type":"record","name":"R","fields":[{"name":"a","type":"string","doc":"é ü \\u2028 \\n"}]}',
])
def test_the_canonical_text_is_the_stdlibs_dump_of_the_same_form(schema: str) -> None:
    # Floats in defaults and properties are the only ones a schema holds: with one,
    # the stdlib writes the text, as it always had (`1e-07`, where orjson writes `1e-7`).
    parsed = AVRO.parse(schema, {})
    canonical = parsed.canonical()
    assert canonical == stdlib(json.loads(canonical)).decode("utf-8")
    if "1e-7" in schema:
        assert "1e-07" in canonical
