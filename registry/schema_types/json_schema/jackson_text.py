"""JSON Schema text: decoding with hostile-input limits, and the two stored spellings.

    document = load_json('{"type": "number", "maximum": 1.50}', "the schema")
    compact(document)   # '{"type":"number","maximum":1.50}'  (what Confluent stores)
    sorted_compact(document)  # keys sorted at every depth (Confluent's normalize=true)

Confluent stores a JSON schema as Jackson writes its parsed tree: compact, keys in
source order (a later duplicate key replaces the value but keeps the first position,
as Python's dict does), floating-point numbers kept exactly as written (Jackson reads
them as BigDecimal and writes `BigDecimal.toString()`, the same "to-scientific-string"
algorithm as Python's `str(Decimal)`: `1e2` is written `1E+2`, `1.50` stays `1.50`).
To reproduce that byte for byte we decode floats as `Decimal` and write JSON ourselves.
"""
from __future__ import annotations

import json
import re
from decimal import Decimal
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from typing import Any, Final

from registry.schema_types.base import InvalidSchema
from registry.schema_types.json_text import (
    MAX_DEPTH,
    bounded_number,
    check_document,
    parse_bounded_int,
    reject_constant,
)

JsonValue = Any
"""What `load_json` returns: dict, list, str, int, Decimal, bool or None."""

MAX_JSON_DEPTH: Final = MAX_DEPTH
"""Deepest nesting of JSON arrays and objects accepted anywhere in a schema (shared)."""


def _parse_float(token: str) -> Decimal:
    # Exact, as Jackson's BigDecimal: `1e2` stays 1E+2 and `1.50` stays 1.50.
    return Decimal(bounded_number(token))


# One decoder for every call, as registry.schema_types.json_text's: `json.loads` with
# hooks builds a new one each time.
_DECODER = json.JSONDecoder(parse_constant=reject_constant, parse_int=parse_bounded_int,
                            parse_float=_parse_float)


def load_json(text: str, what: str) -> JsonValue:
    """Decode `text`; raise InvalidSchema naming `what` if it is not acceptable JSON.

    Refused: invalid JSON, NaN/Infinity, number literals over 1000 characters,
    nesting deeper than MAX_JSON_DEPTH, and strings with lone UTF-16 surrogates
    (which cannot be stored as UTF-8). Cost is linear in the text's length.
    """
    if not isinstance(text, str):
        raise InvalidSchema(f"{what} must be a string")
    try:
        value = _DECODER.decode(text)
    except RecursionError:
        raise InvalidSchema(f"{what} is nested more than {MAX_JSON_DEPTH} levels deep") from None
    except (ValueError, TypeError) as error:
        raise InvalidSchema(f"{what} is not valid JSON: {error}") from None
    check_document(value, what)
    return value


# Python writes control characters as \u001f; Jackson writes \u001F. Only an escape
# preceded by an even number of backslashes is an escape (not an escaped backslash).
_LOWER_HEX_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u00([0-9a-f]{2})")


def _string(value: str) -> str:
    encoded = encode_basestring(value)
    if "\\u00" in encoded:
        encoded = _LOWER_HEX_ESCAPE.sub(lambda m: f"{m.group(1)}\\u00{m.group(2).upper()}", encoded)
    return encoded


def _number(value: int | Decimal) -> str:
    if isinstance(value, Decimal) and value.is_zero() and value.is_signed():
        value = value.copy_abs()  # BigDecimal has no negative zero
    return str(value)


def _write(value: JsonValue, sort_keys: bool) -> str:
    """Compact JSON, written iteratively (bounded stack for any depth)."""
    out: list[str] = []
    # Work items are values to write, or literal text (wrapped in a 1-tuple).
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if type(item) is tuple:
            out.append(item[0])
        elif isinstance(item, str):
            out.append(_string(item))
        elif item is None:
            out.append("null")
        elif item is True:
            out.append("true")
        elif item is False:
            out.append("false")
        elif isinstance(item, (int, Decimal)):
            out.append(_number(item))
        elif isinstance(item, dict):
            keys = sorted(item, key=_utf16_order) if sort_keys else list(item)
            parts: list[Any] = [("}",)]
            for index in range(len(keys) - 1, -1, -1):
                parts.append(item[keys[index]])
                parts.append((("," if index else "{") + _string(keys[index]) + ":",))
            if not keys:
                parts = [("{}",)]
            stack.extend(parts)
        elif isinstance(item, list):
            parts = [("]",)]
            for index in range(len(item) - 1, -1, -1):
                parts.append(item[index])
                parts.append(("," if index else "[",))
            if not item:
                parts = [("[]",)]
            stack.extend(parts)
        else:  # pragma: no cover - load_json never produces other types
            raise TypeError(f"not a JSON value: {item!r}")
    return "".join(out)


def _utf16_order(key: str) -> bytes:
    # Java's TreeMap<String> orders by UTF-16 code units, which differs from code point
    # order only for characters above U+FFFF against U+E000-U+FFFF.
    return key.encode("utf-16-be")


def compact(value: JsonValue) -> str:
    """`value` as Jackson's `writeValueAsString` writes the tree: keys in source order."""
    return _write(value, sort_keys=False)


def sorted_compact(value: JsonValue) -> str:
    """`value` compact with object keys sorted at every depth, as Confluent's
    `JsonSchema.normalize()` re-reads the canonical text into sorted nodes."""
    return _write(value, sort_keys=True)


def json_key(value: JsonValue) -> Any:
    """A hashable key such that two JSON values have equal keys iff they are equal
    JSON values (1 and 1.0 are equal; true and 1 are not; key order is irrelevant).

    Iterative, so deep values cannot exhaust the stack.
    """
    # Built bottom-up from a post-order walk.
    results: list[Any] = []
    stack: list[tuple[JsonValue, bool]] = [(value, False)]
    while stack:
        item, expanded = stack.pop()
        if isinstance(item, dict):
            if expanded:
                count = len(item)
                children = results[len(results) - count:] if count else []
                del results[len(results) - count:]
                results.append(("o", frozenset(zip(item.keys(), children))))
            else:
                stack.append((item, True))
                stack.extend((child, False) for child in reversed(list(item.values())))
        elif isinstance(item, list):
            if expanded:
                count = len(item)
                children = results[len(results) - count:] if count else []
                del results[len(results) - count:]
                results.append(("a", tuple(children)))
            else:
                stack.append((item, True))
                stack.extend((child, False) for child in reversed(item))
        elif isinstance(item, bool) or item is None:
            results.append(("c", item))
        elif isinstance(item, (int, Decimal)):
            # Equal int and Decimal values hash alike in Python; compare as numbers.
            results.append(("n", item))
        else:
            results.append(("s", item))
    return results[0]
