"""pyproject.toml: a client-only install has no server dependency, and the extras stay in step."""
from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
EXTRAS: dict[str, list[str]] = PROJECT["optional-dependencies"]
SERVER_ONLY = {"flask", "werkzeug", "granian", "httptools", "uvloop", "kazoo", "jproperties", "grpcio-tools",
               "protobuf", "jsonschema", "google-re2"}


def names(requirements: list[str]) -> set[str]:
    return {Requirement(r).name.lower() for r in requirements}


def test_the_base_dependencies_are_the_client_sides_only() -> None:
    assert names(PROJECT["dependencies"]) & SERVER_ONLY == set(), \
        "a producer's `pip install` must not bring the server's libraries"


def test_every_dependency_is_pinned_exactly() -> None:
    for requirement in [*PROJECT["dependencies"], *(r for extra in EXTRAS.values() for r in extra)]:
        parsed = Requirement(requirement)
        if parsed.name == PROJECT["name"]:
            continue  # a self-reference to other extras
        assert [spec.operator for spec in parsed.specifier] == ["=="], f"{requirement} is not pinned exactly"


def test_the_server_extra_holds_the_schema_types_pins_without_a_self_reference() -> None:
    server = set(EXTRAS["server"])
    assert set(EXTRAS["schema-types"]) <= server, \
        "the server parses every schema type: its extra repeats schema-types' pins, same versions"
    assert PROJECT["name"] not in names(EXTRAS["server"]), \
        "tests/cluster/images.py downloads the server extra's list as is: pins only"
