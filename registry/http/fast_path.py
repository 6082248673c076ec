"""`GET /schemas/ids/{id}` answered without entering Flask.

It is the read every consumer makes, and Flask's per-request machinery costs several
times the lookup itself. The body is built by the same function the Flask view uses
(`bodies.schema_body`) and memoised per id; the memo entry is reused only while the
cache still holds the very same `StoredSchema`, so a hard delete is seen at once. The
memo holds one answer per id read (about the size of the body: 0.6 KiB for a 370-byte
Avro record), up to `MAX_HELD_BYTES` of bodies, then starts again: reads spread over a
million ids once held an answer each (0.65 GiB more after 30 s of them), where a miss
costs only the body's encoding.
Anything else (not ready, unknown id, other paths, query strings) goes to Flask
unchanged, so errors keep one way out. Never blocks.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

import orjson

from registry.http.bodies import schema_body
from registry.http.negotiation import V1_JSON, answers_default, response_type
from registry.http.wire import ok_head
from registry.service import RegistryService
from store.cache import Cache

PREFIX = "/schemas/ids/"  # the bridge asks `schema_id` only for paths under it
# The bridge asks `plain_answer` only for a path of this prefix and digits (every other
# request pays one startswith, and /schemas/ids/{id}/versions one isdigit more).
RAW_PREFIX = PREFIX.encode()
RAW_PREFIX_LENGTH = len(RAW_PREFIX)
_CONTENT_TYPE = (b"content-type", V1_JSON.encode())
_ZERO = ord("0")
MAX_HELD_BYTES = 16 * 1024 * 1024  # of answer bodies kept (twice with `_answers`' keys and tuples)
# The Flask endpoint (and route argument) serving the same request: what the fast path
# is, for authorization, metrics and the audit (tests/unit/registry/http/test_api_fast_path.py).
ENDPOINT = "schemas.get_schema"
ARGUMENT = "schema_id_text"
# Per id: the stored schema the answer was built from, the body, the response headers
# (their Content-Length) and the whole head on the wire (`wire.ok_head`, for the
# listener's answers at once), so an answer repeats no work.
Answer = tuple[object, bytes, list[tuple[bytes, bytes]], bytes]


class SchemaByIdFastPath:
    def __init__(self, service: RegistryService, ready: Callable[[], bool], cache: Cache) -> None:
        self._service = service
        self._ready = ready
        self._cache = cache
        self._memo: dict[int, Answer] = {}
        # The plain read's answers (`_memo`'s entries) by the id's digits as sent, once the
        # node is ready (it stays so): a read answered from here is a dict hit, where
        # checking readiness and the cache's entry for the id cost four calls. An id's
        # content never changes while the cache has it; when an id goes, the cache's
        # `id_removals` moves and every answer is dropped (`plain_answer`). Bounded as
        # `_memo` is, by the ids the log has held.
        self._answers: dict[bytes, Answer] = {}
        self._removals_seen = cache.id_removals
        # The headers and the head of an answer depend on its body's length alone: one
        # pair per length, shared by the answers of that length. 50 ids of 470-byte
        # bodies held 707 bytes each so, 788 with a headers list each and no head.
        self._framing: dict[int, tuple[list[tuple[bytes, bytes]], bytes]] = {}
        self._held = 0  # bytes of the bodies in `_memo`

    def answer(self, method: str, path: str, query: bytes,
               headers: Iterable[tuple[bytes, bytes]] = ()) -> bytes | None:
        """The response body when this request is one the fast path serves, else None."""
        digits = self.schema_id(method, path, query, headers)
        return None if digits is None else self.body(digits)

    @staticmethod
    def schema_id(method: str, path: str, query: bytes,
                  headers: Iterable[tuple[bytes, bytes]] = ()) -> str | None:
        """The id (its digits) when the request has the fast path's shape, else None.

        Only requests whose Accept header (if any) negotiates our default type have it:
        the others need another Content-Type, or a 406, from Flask."""
        if method != "GET" or query or not path.startswith(PREFIX):
            return None
        for name, value in headers:
            if name == b"accept" and response_type(value.decode("latin-1")) != V1_JSON:
                return None
        digits = path[len(PREFIX):]
        # isascii: str.isdigit() also takes "²" (a raw 0xB2 byte in the path), which int() refuses.
        if not digits.isascii() or not digits.isdigit() or len(digits) > 10:
            return None
        return digits

    def plain_answer(self, digits: bytes, headers: Iterable[tuple[bytes, bytes]],
                     max_header_bytes: int) -> Answer | None:
        """The response, as (the stored schema, body, headers, head), to a `GET` of
        `/schemas/ids/` + `digits` with no query string, which the bridge sends here when
        `digits` is all ASCII digits (bytes.isdigit() knows no others), when it is the
        plainest fast-path request there is: at most 10 digits, no Accept header asking
        for another type, headers within `max_header_bytes`, and the node ready and
        knowing the id. Else None, and the request takes the whole way in (which applies
        every check again, and answers anything else). The bridge's first step, before
        any other: it does as little as the answer allows (issue 17). The tuple is
        shared between requests: read it, never change it."""
        size = 0
        for name, value in headers:
            size += len(name) + len(value)
            if name == b"accept" and not answers_default(value):
                return None
        if size > max_header_bytes:
            return None
        # Read once, before any answer is built: an id removed after this read moves
        # the count again, so an answer built meanwhile is dropped by the next request.
        removals = self._cache.id_removals
        if removals != self._removals_seen:
            self._answers.clear()
            self._removals_seen = removals
        answer = self._answers.get(digits)
        if answer is not None:
            return answer
        if len(digits) > 10:
            return None
        entry = self._entry(int(digits))
        if entry is None:
            return None
        if digits[0] != _ZERO:  # kept under the id's own digits only (`01` is read as 1)
            self._answers[digits] = entry  # the memo's own tuple: ~70 bytes more per id
        return entry

    def body(self, digits: str) -> bytes | None:
        """The response body for the id `digits`, or None when the node is not ready or
        does not know the id (Flask answers then)."""
        answer = self.response(digits)
        return None if answer is None else answer[1]

    def response(self, digits: str) -> tuple[list[tuple[bytes, bytes]], bytes] | None:
        """The response (headers, body) for the id `digits`, or None as `body`."""
        entry = self._entry(int(digits))
        return None if entry is None else (entry[2], entry[1])

    def _entry(self, schema_id: int) -> Answer | None:
        if not self._ready():
            return None
        stored = self._service.cached_schema(schema_id)
        if stored is None:
            gone = self._memo.pop(schema_id, None)  # a hard-deleted id's body goes with it
            if gone is not None:
                self._held -= len(gone[1])
            return None
        memo = self._memo.get(schema_id)
        if memo is not None and memo[0] is stored:
            return memo
        # A copy: orjson hands back its 4 KiB write buffer as the bytes object, and a
        # memo of those held 4 KiB per id read (43 MiB over 10k ids; issue 17).
        body = bytes(memoryview(orjson.dumps(schema_body(stored))))
        framing = self._framing.get(len(body))
        if framing is None:
            headers = [_CONTENT_TYPE, (b"content-length", b"%d" % len(body))]
            framing = self._framing[len(body)] = (headers, ok_head(headers, len(body)))
        entry = (stored, body, *framing)
        if self._held + len(body) > MAX_HELD_BYTES:
            # Full: start again (both maps, so no answer outlives its memo entry).
            self._memo.clear()
            self._answers.clear()
            self._held = 0
        previous = self._memo.get(schema_id)
        if previous is not None:
            self._held -= len(previous[1])
        self._memo[schema_id] = entry
        self._held += len(body)
        return entry
