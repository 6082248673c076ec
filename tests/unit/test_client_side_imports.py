"""The client side imports nothing of the server (DESIGN.md, "Packages and what each may import").

registry/client, registry/serde and registry/spark may import each other,
registry/schema_types (Avro knowledge both sides share) and registry/__init__, and
third-party libraries other than the server's. Every import statement is checked,
at module level and inside functions (a lazy import still needs the server installed
when it runs), relative ones resolved, and `importlib.import_module("...")` too.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT_SIDE = ("registry.client", "registry.serde", "registry.spark", "registry.admin")
ALLOWED_OURS = (*CLIENT_SIDE, "registry.schema_types")
# The server's own packages and the `server` extra's libraries.
FORBIDDEN = ("store", "election", "flask", "werkzeug", "granian", "kazoo", "jproperties")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """(line, full module name) of every import in `tree`, wherever it sits."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            yield node.lineno, base
            # `from registry import service` imports the module registry.service.
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            yield node.lineno, node.args[0].value


def init_names() -> frozenset[str]:
    """Names registry/__init__.py itself defines (`__version__`): importing them is allowed."""
    tree = ast.parse((ROOT / "registry" / "__init__.py").read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.AnnAssign,)) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
    return frozenset(names)


INIT_NAMES = init_names()


def is_forbidden(name: str) -> bool:
    parts = name.split(".")
    if parts[0] in FORBIDDEN:
        return True
    if parts[0] != "registry" or name == "registry" or (len(parts) == 2 and parts[1] in INIT_NAMES):
        return False
    return not any(name == ok or name.startswith(ok + ".") for ok in ALLOWED_OURS)


def violations(source: str, module: str, is_package: bool = False) -> list[str]:
    tree = ast.parse(source)
    return [f"{module}:{line} imports {name}" for line, name in imported(tree, module, is_package)
            if is_forbidden(name)]


def client_side_files() -> list[Path]:
    found = sorted(p for pkg in CLIENT_SIDE for p in (ROOT / pkg.replace(".", "/")).rglob("*.py"))
    assert len(found) >= 15, f"the client side's modules were found: {found}"
    return found


@pytest.mark.parametrize("path", client_side_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_client_side_module_imports_the_server(path: Path) -> None:
    found = violations(path.read_text(), module_name(path), path.name == "__init__.py")
    assert found == [], f"the client side must install and run without the server: {found}"


@pytest.mark.parametrize("source, module", [
    ("import flask", "registry.serde.avro"),
    ("def f():\n    from registry import service", "registry.client.lookup"),
    ("from registry.http.app import create_app", "registry.spark.decode"),
    ("from ..node import build_node", "registry.client.transport"),
    ("from .. import forward", "registry.serde.wire"),
    ("import store.log", "registry.client.caches"),
    ("from election.zookeeper import ZooKeeperElector", "registry.spark.schemas"),
    ("import importlib\nimportlib.import_module('kazoo.client')", "registry.client.config"),
    ("from registry.settings import load_settings", "registry.serde.naming"),
])
def test_the_check_catches_server_imports(source: str, module: str) -> None:
    assert violations(source, module) != [], "each way of importing the server is caught"


@pytest.mark.parametrize("source, module", [
    ("from registry.client.lookup import SchemaLookup", "registry.serde.avro"),
    ("from . import wire", "registry.serde.avro"),
    ("from .transport import Transport", "registry.client.schema_registry_client"),
    ("from registry.schema_types.avro import AVRO", "registry.spark.schemas"),
    ("from registry import __version__", "registry.client.transport"),
    ("import requests, orjson, fastavro", "registry.client.transport"),
])
def test_the_check_allows_the_client_sides_own_imports(source: str, module: str) -> None:
    assert violations(source, module) == [], "what the client side may import is not flagged"
