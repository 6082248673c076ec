"""Decoding schema text that is JSON (Avro, JSON Schema), with the limits every parser needs.

    document = load_json(text, "the schema")   # raises InvalidSchema

One place decides what a JSON schema document may hold, so every schema type, and
every path that reads a schema (registration, compatibility, a stored schema read
back), accepts exactly the same documents:

- **JSON as Jackson reads it**: no `NaN`/`Infinity` tokens, and no number that only
  becomes one (`1e999` would be stored as `Infinity`, which is not JSON).
- **Text that can be stored**: no lone surrogates (`"\\ud800"` decodes to one, and a
  record holding it cannot be encoded as UTF-8).
- **Bounded nesting**: at most `MAX_DEPTH` nested arrays and objects. Everything that
  walks a schema afterwards (validation, canonical forms, compatibility) recurses,
  and must be able to walk any schema that was accepted, or the subject holding it
  could never take another version.

Checking is one iterative walk over the decoded document: linear in its size.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any, Final

from registry.schema_types.base import InvalidSchema

MAX_DEPTH: Final = 128
"""Nested JSON arrays and objects a schema document may have (real schemas use < 20)."""

MAX_NUMBER_LENGTH: Final = 1000
"""Longest number literal accepted, as Jackson's default `maxNumberLength`; also keeps
Python's conversion of a huge literal (quadratic in its length) cheap."""

JsonValue = Any


def reject_constant(token: str) -> JsonValue:
    """For `json.loads(parse_constant=...)`: Python accepts NaN and Infinity; JSON
    (and Jackson) do not."""
    raise ValueError(f"{token} is not valid JSON")


def bounded_number(token: str) -> str:
    """`token`, if it is no longer than MAX_NUMBER_LENGTH; else ValueError."""
    if len(token) > MAX_NUMBER_LENGTH:
        raise ValueError(f"a number longer than {MAX_NUMBER_LENGTH} characters")
    return token


def parse_bounded_int(token: str) -> int:
    """For `json.loads(parse_int=...)`."""
    return int(bounded_number(token))


def _finite(token: str) -> float:
    value = float(bounded_number(token))
    if not math.isfinite(value):
        raise ValueError(f"the number {token} is out of range")
    return value


# One decoder for every call: `json.loads` with hooks builds a new one each time (half
# of decoding a small record schema: 5.3 against 2.6 us). It holds no state between
# calls but the C scanner's key memo, which only interns keys.
_DECODER: Final = json.JSONDecoder(parse_constant=reject_constant, parse_int=parse_bounded_int,
                                   parse_float=_finite)


def load_json(text: str, what: str) -> JsonValue:
    """Decode `text`, raising InvalidSchema (naming `what`) if it is not a storable JSON
    document within the limits above."""
    try:
        document = _DECODER.decode(text)
    except RecursionError:
        raise InvalidSchema(f"{what} nests arrays and objects deeper than {MAX_DEPTH} levels") from None
    except (ValueError, TypeError) as error:
        raise InvalidSchema(f"{what} is not valid JSON: {error}") from None
    check_document(document, what, text)
    return document


def shallow_for_certain(text: str | None) -> bool:
    """True when `text` cannot decode to anything nested MAX_DEPTH levels deep: it holds
    at most MAX_DEPTH opening brackets, so no path through it has more containers
    (brackets inside strings only make the count larger). Counted in C, where walking
    the decoded document costs a Python step per container: most schemas pass here."""
    return text is not None and text.count("{") + text.count("[") <= MAX_DEPTH


def check_document(document: JsonValue, what: str, text: str | None = None) -> None:
    """Raise InvalidSchema if `document` nests deeper than MAX_DEPTH or holds a string
    (value or key) that is not valid Unicode text. Iterative: no recursion limit.

    Given the `text` it was decoded from, strings are looked at only if the text is not
    ASCII or holds an escape that could decode to a surrogate (the common case walks
    containers only).
    """
    strings = text is None or not text.isascii() or _SURROGATE_ESCAPE.search(text) is not None
    if not strings and shallow_for_certain(text):
        return
    stack: list[tuple[JsonValue, int]] = [(document, 0)]
    while stack:
        value, depth = stack.pop()
        kind = type(value)
        if kind is dict:
            if depth >= MAX_DEPTH:
                raise InvalidSchema(f"{what} nests arrays and objects deeper than {MAX_DEPTH} levels")
            for key, item in value.items():
                if strings:
                    _check_text(key, what)
                if strings or type(item) in _CONTAINERS:
                    stack.append((item, depth + 1))
        elif kind is list:
            if depth >= MAX_DEPTH:
                raise InvalidSchema(f"{what} nests arrays and objects deeper than {MAX_DEPTH} levels")
            stack.extend((item, depth + 1) for item in value if strings or type(item) in _CONTAINERS)
        elif kind is str and strings:
            _check_text(value, what)


_CONTAINERS = (dict, list)
# A JSON escape that decodes to a UTF-16 surrogate (\ud800-\udfff): only text holding
# one can decode to a lone surrogate (raw ones cannot reach us: request bodies are UTF-8).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _check_text(value: str, what: str) -> None:
    if value.isascii():
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidSchema(f"{what} holds a string with a lone surrogate (\\ud800-\\udfff), "
                            "which is not Unicode text") from None
