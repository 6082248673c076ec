"""Which route a request names, decided before it reaches Flask, by Flask's own URL map.

The bridge needs the route before dispatch: to authorize it, and to label metrics and
audit lines with the route instead of the raw path. Matching with the app's own
`url_map`, on the path exactly as Flask sees it, keeps one routing table: the route
decided here is the one Flask then runs.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map


class Route(NamedTuple):
    """A tuple: made for every request on the fast path, where a dataclass costs more."""

    endpoint: str  # the Flask endpoint, e.g. "subjects.register"
    arguments: Mapping[str, Any]  # converted path arguments: `subject` decoded


class Router:
    def __init__(self, url_map: Map) -> None:
        self._map = url_map

    def match(self, method: str, path: str) -> Route | None:
        """The route `path` (as the bridge hands it to Flask in PATH_INFO) names for
        `method`, or None when it names none (Flask answers 404/405 then). Never blocks."""
        # As Werkzeug reads PATH_INFO: WSGI's latin-1 string, re-read as UTF-8.
        path_info = path.encode("latin-1").decode("utf-8", "replace")
        try:
            endpoint, arguments = self._map.bind("localhost").match(path_info, method)
        except HTTPException:
            return None
        return Route(endpoint, arguments)
