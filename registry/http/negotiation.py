"""Content negotiation as Confluent's JAX-RS resources do it.

Every resource produces `application/vnd.schemaregistry.v1+json` (qs 1),
`application/vnd.schemaregistry+json` (qs 0.9) and `application/json` (qs 0.5). The
answer's type is the one the client's Accept header rates highest (its q first, then
our qs); a header that rates none of them above zero gets 406. No header, or `*/*`,
gets the first.

The choice depends on the header's text alone, so it is memoised per distinct header
(bounded: a client sending endless variants only costs a parse each).
"""
from __future__ import annotations

V1_JSON = "application/vnd.schemaregistry.v1+json"
PRODUCED = ((V1_JSON, 1.0), ("application/vnd.schemaregistry+json", 0.9), ("application/json", 0.5))
_MAX_HEADER = 4096
_MEMO_SIZE = 256
_memo: dict[str, str | None] = {}


def response_type(accept: str | None) -> str | None:
    """The type to answer with for this Accept header, or None when nothing served is
    acceptable (answer 406). Never raises."""
    if not accept:
        return V1_JSON
    found = _memo.get(accept, "")
    if found != "":
        return found
    if len(accept) > _MAX_HEADER:
        return V1_JSON  # not parsed, nor kept: the memo holds at most 256 x 4 KiB
    chosen = _choose(accept)
    if len(_memo) >= _MEMO_SIZE:
        _memo.clear()
    _memo[accept] = chosen
    return chosen


def answers_default(accept: bytes) -> bool:
    """Whether an Accept header's raw value chooses our default type, as `response_type`
    decides: for the id lane, which checks each request's header (a dict hit, where
    decoding the value and asking `response_type` cost three calls more)."""
    found = _default_memo.get(accept)
    if found is None:
        found = response_type(accept.decode("latin-1")) == V1_JSON
        if len(accept) <= _MAX_HEADER:
            if len(_default_memo) >= _MEMO_SIZE:
                _default_memo.clear()
            _default_memo[accept] = found
    return found


_default_memo: dict[bytes, bool] = {}


def _choose(accept: str) -> str | None:
    ranges = _ranges(accept)
    if not ranges:
        return V1_JSON  # nothing parseable: as no header at all
    best: tuple[float, float] | None = None
    chosen = None
    for produced, qs in PRODUCED:
        q = _quality(produced, ranges)
        if q <= 0:
            continue
        if best is None or (q, qs) > best:
            best, chosen = (q, qs), produced
    return chosen


def _ranges(accept: str) -> list[tuple[str, str, float]]:
    """(type, subtype, q) of each media range, read as Jersey reads them (not as RFC
    9110's grammar, which Werkzeug follows): `q=.2` is 0.2, a bare `*` is `*/*`, and a
    wildcard type matches whatever its subtype says (`*/does_not_matter`). A range
    that cannot be read is left out. Hand-written because it is Jersey's leniency that
    clients rely on, which no parser here has."""
    ranges = []
    for item in accept.split(","):
        value, *params = item.split(";")
        kind, _, sub = value.strip().lower().partition("/")
        if not kind:
            continue
        q = 1.0
        for param in params:
            name, _, text = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(text.strip())
                except ValueError:
                    q = -1.0
        if not 0.0 <= q <= 1.0:
            continue
        ranges.append((kind, sub or "*", q))
    return ranges


def _quality(produced: str, ranges: list[tuple[str, str, float]]) -> float:
    """The q of the most specific range that matches `produced` (RFC 9110 12.5.1)."""
    kind, _, sub = produced.partition("/")
    best_rank, quality = -1, 0.0
    for r_kind, r_sub, q in ranges:
        if r_kind == "*":
            rank = 0
        elif r_kind == kind and r_sub == "*":
            rank = 1
        elif r_kind == kind and r_sub == sub:
            rank = 2
        else:
            continue
        if rank > best_rank:
            best_rank, quality = rank, q
    return quality
