"""What Flask does per request, kept to what the registry needs: a path the bridge has
routed is not matched again by Flask, OPTIONS still names the methods of its own path,
and every view and hook is synchronous (the app skips Flask's per-request check)."""
from __future__ import annotations

import inspect
import itertools

import pytest
from werkzeug.routing import MapAdapter

from tests.asgi_client import NodeClient


@pytest.fixture
def client():
    with NodeClient() as c:
        yield c


def test_a_path_asked_again_is_matched_once(client, monkeypatch):
    assert client.post("/subjects/routed/versions", {"schema": '"string"'}).status == 200
    matches: list[str] = []
    original = MapAdapter.match

    def counting(self, path_info=None, method=None, *args, **kwargs):
        matches.append(path_info or self.path_info)
        return original(self, path_info, method, *args, **kwargs)

    monkeypatch.setattr(MapAdapter, "match", counting)
    # Other queries each time: answered by Flask, not from the memo of kept answers.
    for n in range(3):
        answer = client.get(f"/subjects/routed/versions?n={n}")
        assert answer.status == 200 and answer.json() == [1], answer.body
    assert matches == ["/subjects/routed/versions"], "matched once, by the bridge's router, then remembered"


@pytest.mark.parametrize("path, allowed", [
    ("/subjects", {"GET", "HEAD", "OPTIONS"}),
    ("/config/routed", {"GET", "HEAD", "PUT", "DELETE", "OPTIONS"}),
    ("/subjects/routed/versions", {"GET", "HEAD", "POST", "OPTIONS"}),
])
def test_options_names_the_methods_of_its_own_path(client, path, allowed):
    answer = client.request("OPTIONS", path)
    assert answer.status == 200
    assert {m.strip() for m in answer.headers["allow"].split(",")} == allowed


def test_every_view_and_hook_is_synchronous(client):
    app = client.bridge._wsgi_app.__self__
    handlers = [handler for codes in app.error_handler_spec.values() for by_class in codes.values()
                for handler in by_class.values()]
    hooks = list(itertools.chain(app.view_functions.values(), handlers,
                                 *app.before_request_funcs.values(), *app.after_request_funcs.values(),
                                 *app.teardown_request_funcs.values()))
    assert len(hooks) > 40
    assert not [f for f in hooks if inspect.iscoroutinefunction(f)]


def test_the_router_remembers_short_paths_only(client):
    router = client.bridge._door.router
    router._memo.clear()
    long_subject = "s" * 600
    for subject in ("short", long_subject):
        assert client.post(f"/subjects/{subject}/versions", {"schema": '"string"'}).status == 200
    assert ("POST", "/subjects/short/versions") in router._memo
    assert all(len(path) <= 512 for _, path in router._memo), "a long path is matched, never kept"
    assert client.get(f"/subjects/{long_subject}/versions").json() == [1]
