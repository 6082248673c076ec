"""Which route a request names, decided before it reaches Flask, by Flask's own URL map.

The bridge needs the route before dispatch: to authorize it, and to name it in audit
lines. Matching with the app's own `url_map`, on the path exactly as Flask sees it,
keeps one routing table; and the match travels to Flask in the environ (`ROUTE_KEY`,
taken by `registry.http.app`'s request context), so the route decided here is the one
Flask runs, and a request is matched once.
"""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map, Rule


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


class Router:
    def __init__(self, url_map: Map) -> None:
        # One adapter for every request: matching with an explicit path and method
        # reads nothing else of it (and binding costs 4 us a request).
        self._adapter = url_map.bind("localhost")
        self._memo: dict[tuple[str, str], Route | None] = {}

    def match(self, method: str, path: str) -> Route | None:
        """The route `path` (as the bridge hands it to Flask in PATH_INFO) names for
        `method`, or None when it names none (Flask answers 404/405 then). Never blocks.
        The Route returned may be shared between requests: read it, never change it."""
        key = (method, path)
        try:
            return self._memo[key]
        except KeyError:
            pass
        # As Werkzeug reads PATH_INFO: WSGI's latin-1 string, re-read as UTF-8.
        path_info = path.encode("latin-1").decode("utf-8", "replace")
        try:
            rule, arguments = self._adapter.match(path_info, method, return_rule=True)
        except HTTPException:
            route = None
        else:
            route = Route(rule.endpoint, MappingProxyType(arguments), rule)
        if len(path) <= _MEMO_PATH_CHARS:
            if len(self._memo) >= _MEMO_SIZE:
                self._memo.clear()
            self._memo[key] = route
        return route
