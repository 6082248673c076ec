"""The package layout of DESIGN.md, checked on the import graph of the source tree.

(That the client side imports nothing of the server is checked, with every way of
importing, by tests/unit/test_client_side_imports.py.)

Every `import` and `from ... import` counts, at module level or inside a function (an
import inside a function is still an arrow), except under `if TYPE_CHECKING:`.
"""
from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("store", "election", "registry")

# Client side: never the server (its modules, the store, the election, or their libraries).
CLIENT_SIDE = ("registry.client", "registry.serde", "registry.spark")
SERVER_ONLY_LIBRARIES = ("flask", "werkzeug", "granian", "httptools", "uvloop", "kazoo", "jproperties")
# Format knowledge both sides share: parsing and comparing schemas, nothing else.
SHARED_FORMATS = ("registry.schema_types", "registry.compatibility")
# The server's core, below its HTTP layer.
SERVER_CORE = ("registry.service", "registry.node", "registry.leader_gate", "registry.settings",
               "registry.errors", "registry.modes")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            found[module_name(path)] = path
    return found


MODULES = source_modules()


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(name: str) -> Iterator[str]:
    """Every module `name` imports, as written (absolute names; relative ones resolved)."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _type_checking_only(node):
            skip.update(id(child) for child in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            submodules = [f"{base}.{alias.name}" for alias in node.names
                          if f"{base}.{alias.name}" in MODULES]
            # `from registry.serde import wire` is an arrow to the submodule `wire`;
            # `from registry.serde import AvroSerializer` one to the package itself.
            yield from submodules
            if len(submodules) < len(node.names):
                yield base


def under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


@functools.cache
def arrows() -> tuple[tuple[str, str], ...]:
    return tuple((name, target) for name in MODULES for target in imports_of(name))


def test_store_and_election_import_nothing_of_ours():
    bad = [(a, b) for a, b in arrows() if under(a, ("store",)) and under(b, ("registry", "election"))]
    bad += [(a, b) for a, b in arrows() if under(a, ("election",)) and under(b, ("registry", "store"))]
    assert not bad, f"store/ and election/ must import nothing of ours: {bad}"


def test_shared_format_modules_know_no_server_and_no_client():
    bad = [(a, b) for a, b in arrows() if under(a, SHARED_FORMATS) and (
        (under(b, PACKAGES) and b != "registry" and not under(b, SHARED_FORMATS))
        or under(b, SERVER_ONLY_LIBRARIES))]
    assert not bad, f"schema types are shared by both sides and may depend on neither: {bad}"


def test_no_upward_arrows_into_http_or_the_cli():
    # registry.http may import the server core; the core never imports HTTP. The CLI is
    # the entry point at the top: nothing imports it.
    bad = [(a, b) for a, b in arrows()
           if under(b, ("registry.http",)) and not under(a, ("registry.http", "registry.cli"))]
    bad += [(a, b) for a, b in arrows() if under(b, ("registry.cli",)) and a != "registry.cli"]
    assert not bad, f"only the CLI sits above registry.http: {bad}"


def test_the_server_core_does_not_import_the_client_side():
    bad = [(a, b) for a, b in arrows() if under(a, SERVER_CORE + ("registry.http",)) and under(b, CLIENT_SIDE)]
    assert not bad, f"the server must not depend on the client library: {bad}"


def test_no_import_cycles():
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for a, b in arrows():
        if b in MODULES and b != a:
            graph[a].add(b)
        # `import registry.http.app` also runs the packages above it; those are not arrows
        # of their own unless they import back, which the walk of their modules shows.
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)
    assert not cycles, f"import cycles: {cycles[:5]}"


@pytest.mark.parametrize("package", PACKAGES)
def test_every_module_is_found(package):
    assert any(under(name, (package,)) for name in MODULES), f"no modules found under {package}/"
