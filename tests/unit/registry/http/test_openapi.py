"""Our API description describes exactly what we serve: every route and method, no more,
the query parameters each view reads, and docs/openapi.json is current."""
from __future__ import annotations

import inspect
import json
import re
import sys
from pathlib import Path

import pytest

from registry.http.app import _routed_app, route_map
from registry.http.openapi import DOCS, describe, served_operations
from tests.asgi_client import NodeClient

ROOT = Path(__file__).resolve().parents[4]
_READS = re.compile(r"""(?:(?:flag|int_arg|request\.args\.get|request\.args\.getlist|args\.get)\(|"""
                    r"""(?:flag_in|int_arg_in)\(\s*\w+,)\s*["'](\w+)["']""")
_CALLS = re.compile(r"\b(_?[a-z]\w*)\(")


def test_every_route_is_described_and_nothing_else():
    served = {(path, method.lower()) for path, method, _ in served_operations(route_map())}
    described = {(path, method) for path, operations in describe(route_map())["paths"].items()
                 for method in operations}
    assert served == described, f"served only: {served - described}; described only: {described - served}"
    endpoints = {(endpoint, method) for _, method, endpoint in served_operations(route_map())}
    assert endpoints == set(DOCS), (f"routes without an entry in openapi.DOCS: {endpoints - set(DOCS)}; "
                                    f"entries for routes we do not serve: {set(DOCS) - endpoints}")


def _source(function, seen: set[str]) -> str:
    """A view's source and that of the functions of its own module it calls."""
    module = sys.modules[function.__module__]
    text = inspect.getsource(function)
    for name in _CALLS.findall(text):
        helper = getattr(module, name, None)
        if inspect.isfunction(helper) and helper.__module__ == module.__name__ and name not in seen:
            seen.add(name)
            text += _source(helper, seen)
    return text


def test_each_operation_describes_the_query_parameters_its_view_reads():
    app = _routed_app()
    operations = {(path, method.lower()): operation for path, methods in describe(app.url_map)["paths"].items()
                  for method, operation in methods.items()}
    for path, method, endpoint in served_operations(app.url_map):
        read = set(_READS.findall(_source(app.view_functions[endpoint], {endpoint})))
        described = {p["name"] for p in operations[(path, method.lower())].get("parameters", [])
                     if p["in"] == "query"}
        assert read == described, f"{method} {path}: the view reads {sorted(read)}, described {sorted(described)}"


def test_operation_ids_are_unique():
    ids = [op["operationId"] for ops in describe(route_map())["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids)), "operationId must be unique"


def test_the_file_in_the_repository_is_current():
    committed = json.loads((ROOT / "docs" / "openapi.json").read_text())
    assert committed == describe(route_map()), \
        "docs/openapi.json is stale: run `.venv/bin/schema-registry openapi > docs/openapi.json`"


def test_the_node_serves_the_same_description():
    with NodeClient() as client:
        answer = client.get("/openapi.json")
    assert answer.status == 200 and answer.content_type == "application/json"
    assert answer.json() == describe(route_map()), "/openapi.json is the description of the routes"


@pytest.mark.parametrize("path", ["/subjects/{subject}/versions/{version}", "/schemas/ids/{id}"])
def test_path_templates_use_confluents_names(path: str):
    assert path in describe(route_map())["paths"], path
