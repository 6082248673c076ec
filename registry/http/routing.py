"""Which route a request names, decided before it reaches Flask, by Flask's own URL map.

The bridge needs the route before dispatch: to authorize it, and to name it in audit
lines. Matching with the app's own `url_map`, on the path exactly as Flask sees it,
keeps one routing table; and the match travels to Flask in the environ (`ROUTE_KEY`,
taken by `registry.http.app`'s request context), so the route decided here is the one
Flask runs, and a request is matched once.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from werkzeug.exceptions import HTTPException
from werkzeug.routing import BaseConverter, Map, Rule


# The WSGI environ key under which the bridge hands Flask the (rule, arguments) it matched.
ROUTE_KEY = "registry.route"


class Route(NamedTuple):
    """A tuple: made for every request on the fast path, where a dataclass costs more."""

    endpoint: str  # the Flask endpoint, e.g. "subjects.register"
    arguments: Mapping[str, Any]  # converted path arguments: `subject` decoded
    rule: Rule | None = None  # the matched rule (None for the id fast path's own)


# Matches remembered, by (method, path): a client's hot path asks the same few paths
# again and again, and Werkzeug's matcher costs ~40 us a request. Emptied when full, so
# paths that never repeat (an attacker's) cost a match each and bounded memory: every
# request that reaches Flask is routed here, so only paths up to _MEMO_PATH_CHARS are
# remembered (at most ~2 MiB of them, where 16 KiB targets would have been 64 MiB).
_MEMO_SIZE = 4096
_MEMO_PATH_CHARS = 512

# A converter taking exactly one whole path segment, whatever it holds but "/", and one
# taking the whole rest of the path from a segment that is not empty.
_SEGMENT_REGEXES = frozenset({"[^/]+", "[^/]{1,}"})
_REST_REGEXES = frozenset({"[^/].*?"})
_CONVERTER_SEGMENT = re.compile(r"<(?:[a-zA-Z_][a-zA-Z0-9_]*(?:\(.*\))?:)?([a-zA-Z_][a-zA-Z0-9_]*)>")
_UNSEEN = object()
_ANY = object()  # a segment of a shape that is none of the map's static words, nor empty
# Where a rule's arguments are: (name, index of the path segment, its converter).
_Slots = tuple[tuple[str, int, BaseConverter], ...]


class _Shapes:
    """Which rule a path names, decided by the path's shape, for a map where Werkzeug's
    answer depends on nothing else (`of`): a path's shape is its segments, each kept as
    it is when it is empty or one of the static words any rule has, else `_ANY`.

    Why: Werkzeug's matcher cost ~30 us for each path it had not seen, and a client
    registering many subjects sends nothing but such paths. Werkzeug decides by comparing
    segments with static words and by converter regexes; with only converters that
    take any segment that is not empty (or the whole rest of the path from one), two
    paths of one shape take the same transitions, to the same rule. So the rule
    Werkzeug matched for one path of a shape is remembered for the shape, with where
    each argument sits, and another path of that shape is answered by converting its
    own segments, as Werkzeug converts them. `tests/unit/registry/http/test_routing.py` compares the
    two on generated paths."""

    def __init__(self, static_words: frozenset[str], slots: dict[int, _Slots]) -> None:
        self._static_words = static_words
        self._slots = slots  # by id(rule), the rules a shape may answer for (the map keeps them)
        self._memo: dict[tuple[str, tuple[object, ...]], tuple[Rule, _Slots]] = {}

    @classmethod
    def of(cls, url_map: Map) -> _Shapes | None:
        """For `url_map`, or None when a path's shape cannot decide its rule there."""
        if url_map.host_matching or url_map.merge_slashes:
            return None
        static_words: set[str] = set()
        slots: dict[int, _Slots] = {}  # by id: Werkzeug's rules cannot be hashed
        for rule in url_map.iter_rules():
            if rule.defaults or rule.redirect_to is not None or rule.alias or rule.websocket:
                return None  # Werkzeug might redirect, or add to the arguments
            converters = rule._converters  # noqa: SLF001 (Werkzeug keeps them only there)
            rule_slots: list[tuple[str, int, BaseConverter]] = []
            segment_only = True
            for index, segment in enumerate(rule.rule.split("/")):
                if "<" not in segment and ">" not in segment:
                    static_words.add(segment)
                    continue
                found = _CONVERTER_SEGMENT.fullmatch(segment)
                if found is None or found.group(1) not in converters:
                    return None  # a segment both static and dynamic
                converter = converters[found.group(1)]
                if converter.regex in _SEGMENT_REGEXES:
                    rule_slots.append((found.group(1), index, converter))
                elif converter.regex in _REST_REGEXES:
                    segment_only = False
                else:
                    return None  # a regex that looks at what a segment holds
            if segment_only:
                slots[id(rule)] = tuple(rule_slots)
        static_words.discard("")
        return cls(frozenset(static_words), slots)

    def _key(self, method: str, segments: list[str]) -> tuple[str, tuple[object, ...]]:
        words = self._static_words
        return method, tuple(segment if not segment or segment in words else _ANY for segment in segments)

    def match(self, method: str, path_info: str) -> Route | None:
        """The route of a path whose shape a match was remembered for; else None."""
        segments = _segments(path_info)
        found = self._memo.get(self._key(method, segments))
        if found is None:
            return None
        rule, slots = found
        return Route(rule.endpoint, MappingProxyType(
            {name: converter.to_python(segments[index]) for name, index, converter in slots}), rule)

    def remember(self, method: str, path_info: str, rule: Rule) -> None:
        """Remember that paths of `path_info`'s shape name `rule` (Werkzeug matched it)."""
        slots = self._slots.get(id(rule))
        if slots is None:
            return
        if len(self._memo) >= _MEMO_SIZE:
            self._memo.clear()
        self._memo[self._key(method, _segments(path_info))] = (rule, slots)


def _segments(path_info: str) -> list[str]:
    # As Werkzeug splits a path (MapAdapter.match: leading slashes become one).
    return (f"/{path_info.lstrip('/')}" if path_info else "").split("/")


class Router:
    def __init__(self, url_map: Map) -> None:
        # One adapter for every request: matching with an explicit path and method
        # reads nothing else of it (and binding costs 4 us a request).
        self._adapter = url_map.bind("localhost")
        self._memo: dict[tuple[str, str], Route | None] = {}
        self._shapes = _Shapes.of(url_map)

    def match(self, method: str, path: str) -> Route | None:
        """The route `path` (as the bridge hands it to Flask in PATH_INFO) names for
        `method`, or None when it names none (Flask answers 404/405 then). Never blocks.
        The Route returned may be shared between requests: read it, never change it."""
        key = (method, path)
        found = self._memo.get(key, _UNSEEN)  # not try/except: a miss raising cost ~1 us
        if found is not _UNSEEN:
            return found  # type: ignore[return-value]
        # As Werkzeug reads PATH_INFO: WSGI's latin-1 string, re-read as UTF-8.
        path_info = path.encode("latin-1").decode("utf-8", "replace")
        shapes = self._shapes
        route = shapes.match(method, path_info) if shapes is not None else None
        if route is None:
            try:
                rule, arguments = self._adapter.match(path_info, method, return_rule=True)
            except HTTPException:
                pass
            else:
                route = Route(rule.endpoint, MappingProxyType(arguments), rule)
                if shapes is not None:
                    shapes.remember(method, path_info, rule)
        if len(path) <= _MEMO_PATH_CHARS:
            if len(self._memo) >= _MEMO_SIZE:
                self._memo.clear()
            self._memo[key] = route
        return route
