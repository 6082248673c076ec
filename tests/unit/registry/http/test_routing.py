"""`registry.http.routing.Router`: the route it gives is the one Werkzeug's own matcher
gives, whether it came from Werkzeug, from the memo of exact paths, or from a shape
(`_Shapes`) matched for another path."""
from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map, Rule

from registry.http import routing
from registry.http.app import route_map

METHODS = ("GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH")
# Segments a path is made of: every static word of the app's routes, and values that
# are none of them: odd bytes, escapes, look-alikes of words, empty segments.
ODD = ["", "s1", "a%2Fb", "%", "%zz", ":.ctx:subject", ":.:x", "latest", "-1", "1", "007", "ü",
       "\u2028", "Subjects", "versions ", " versions", "..", ".", "a b", "x\ny", "%2F", "%00", "é%C3%A9",
       "ids:", "tags"]


def static_words(url_map: Map) -> list[str]:
    return sorted({part for rule in url_map.iter_rules() for part in rule.rule.split("/")
                   if part and "<" not in part})


def werkzeug_route(url_map: Map, method: str, path: str) -> tuple[str, dict[str, object]] | None:
    path_info = path.encode("latin-1").decode("utf-8", "replace")
    try:
        rule, arguments = url_map.bind("localhost").match(path_info, method, return_rule=True)
    except HTTPException:
        return None
    return rule.endpoint, dict(arguments)


def generated_paths(words: list[str], count: int, seed: int) -> Iterator[str]:
    draw = random.Random(seed)
    pool = words + ODD
    for _ in range(count):
        segments = [draw.choice(pool) for _ in range(draw.randint(0, 7))]
        # Mostly real routes' prefixes, so that paths reach deep into the matcher.
        if segments and draw.random() < 0.7:
            segments[0] = draw.choice(["subjects", "schemas", "config", "mode", "compatibility",
                                       "associations", "contexts", "ui"])
        path = "/" + "/".join(segments)
        if draw.random() < 0.05:
            path = "/" + path  # leading slashes: Werkzeug makes them one
        # The bridge hands the router latin-1 text of the bytes sent.
        yield path.encode("utf-8").decode("latin-1")


def routed(router: routing.Router, method: str, path: str) -> tuple[str, dict[str, object]] | None:
    route = router.match(method, path)
    return None if route is None else (route.endpoint, dict(route.arguments))


@pytest.mark.parametrize("seed", range(4))
def test_the_router_routes_every_generated_path_as_werkzeug_does(seed: int) -> None:
    url_map = route_map()
    router = routing.Router(url_map)
    assert router._shapes is not None, "the app's routes are decided by shape"
    paths = list(generated_paths(static_words(url_map), 1500, seed))
    draw = random.Random(seed)
    for path in ["", "/", "//", "///subjects"] + paths + draw.sample(paths, len(paths)):  # again: memo hits
        method = draw.choice(METHODS)
        assert routed(router, method, path) == werkzeug_route(url_map, method, path), (method, path)


def test_a_shape_answers_for_a_path_werkzeug_never_saw() -> None:
    router = routing.Router(route_map())
    assert routed(router, "POST", "/subjects/first/versions") == ("subjects.register", {"subject": "first"})
    shapes = router._shapes
    assert shapes is not None
    route = shapes.match("POST", "/subjects/a%2Fb/versions")
    assert route is not None, "the same shape as a path matched before"
    assert (route.endpoint, dict(route.arguments)) == ("subjects.register", {"subject": "a/b"})
    # A static word where the subject was makes another shape, which Werkzeug decides.
    assert shapes.match("POST", "/subjects/versions/versions") is None
    assert routed(router, "POST", "/subjects/versions/versions") == (
        "subjects.register", {"subject": "versions"})
    assert shapes.match("GET", "/subjects/first/versions") is None, "the method is part of the shape"


@pytest.mark.parametrize("rule", [
    Rule("/items/<int:n>", endpoint="int"),  # a regex that looks into the segment
    Rule("/items/n-<name>", endpoint="mixed"),  # a segment both static and dynamic
    Rule("/items", endpoint="defaults", defaults={"n": 1}),  # Werkzeug adds to the arguments
])
def test_no_shapes_for_a_map_where_a_shape_cannot_decide(rule: Rule) -> None:
    url_map = Map([Rule("/other/<name>", endpoint="other"), rule], merge_slashes=False)
    router = routing.Router(url_map)
    assert router._shapes is None
    assert routed(router, "GET", "/other/x") == ("other", {"name": "x"})


def test_a_rule_taking_the_rest_of_the_path_is_matched_by_werkzeug_each_time() -> None:
    url_map = Map([Rule("/ui/<path:name>", endpoint="file"), Rule("/ui/<name>/x", endpoint="x")],
                  merge_slashes=False)
    router = routing.Router(url_map)
    assert router._shapes is not None
    assert routed(router, "GET", "/ui/a/b") == ("file", {"name": "a/b"})
    assert router._shapes.match("GET", "/ui/c/d") is None, "its argument spans segments: no shape kept"
    assert routed(router, "GET", "/ui/c/d") == ("file", {"name": "c/d"})
    assert routed(router, "GET", "/ui/c/x") == werkzeug_route(url_map, "GET", "/ui/c/x")


def test_a_map_that_merges_slashes_gets_no_shapes() -> None:
    assert routing.Router(Map([Rule("/other/<name>", endpoint="other")]))._shapes is None
    kept = Map([Rule("/other/<name>", endpoint="other")], merge_slashes=False)
    assert routing.Router(kept)._shapes is not None
