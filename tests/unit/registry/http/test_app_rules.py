"""The app's routes compile their URL builders on first use only, and build the URLs
werkzeug's own rules build."""
from __future__ import annotations

from werkzeug.routing import Map, Rule

from registry.http.app import SubjectConverter, route_map


def test_building_the_app_compiles_no_url_builder(monkeypatch):
    compiled: list[str] = []
    original = Rule._compile_builder

    def counting(rule: Rule, append_unknown: bool = True):
        compiled.append(rule.rule)
        return original(rule, append_unknown)

    monkeypatch.setattr(Rule, "_compile_builder", counting)
    routes = route_map()
    assert compiled == [], "the builders are compiled when a URL is first built, not at start"
    adapter = routes.bind("localhost")
    assert adapter.build("schemas.get_schema", {"schema_id_text": "5"}) == "/schemas/ids/5"
    assert compiled == ["/schemas/ids/<schema_id_text>"]
    adapter.build("schemas.get_schema", {"schema_id_text": "6"})
    assert len(compiled) == 1, "compiled once per rule"


def test_every_route_builds_the_url_werkzeugs_rule_builds():
    routes = route_map()
    eager = Map([Rule(rule.rule, endpoint=rule.endpoint, methods=rule.methods) for rule in routes.iter_rules()],
                strict_slashes=False, merge_slashes=False, converters={"subject": SubjectConverter})
    ours, theirs = routes.bind("localhost"), eager.bind("localhost")
    for rule in routes.iter_rules():
        values = {name: "a:b/1" if name == "subject" else "7" for name in rule.arguments}
        for extra in ({}, {"q": "x y"}):
            args = {**values, **extra}
            method = sorted(rule.methods or {"GET"})[0]
            assert ours.build(rule.endpoint, args, method=method) == theirs.build(rule.endpoint, args, method=method)
