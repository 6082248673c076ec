"""Schemathesis against our own API description, served by a real registry with HTTP
Basic and authorization rules on: no server error, and every answer as described.

Bounded like the run against Confluent's description: a few examples per operation,
a fixed seed, about a minute.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from registry.http.app import route_map
from registry.http.openapi import describe
from registry.http.security.passwords import users_file_line
from tests.api.support import RegistryFactory, ok_json, record

pytestmark = pytest.mark.integration

CONFIG = Path(__file__).resolve().parent / "openapi" / "schemathesis-ours.toml"
SCHEMATHESIS = shutil.which("schemathesis", path=str(Path(sys.executable).parent)) or "schemathesis"


def test_our_description_finds_no_server_error_and_no_mismatch(start_registry: RegistryFactory, tmp_path: Path):
    users = tmp_path / "users.properties"
    users.write_text(users_file_line("fuzzer", "fuzz-pw", time_cost=1, memory_kib=8192) + "\n")
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"rules": [
        {"principal": "fuzzer", "operations": ["*"], "subject_regex": ".*", "global": True}]}))
    server = start_registry(env={"SCHEMA_REGISTRY_AUTHENTICATION_METHOD": "BASIC",
                                 "SCHEMA_REGISTRY_AUTHENTICATION_USERS_FILE": str(users),
                                 "SCHEMA_REGISTRY_AUTHORIZATION_RULES_FILE": str(rules)})
    server.session.auth = ("fuzzer", "fuzz-pw")
    for fields in ((("a", "int"),), (("a", "int"), ("b", "string"))):
        body = {"schema": record("OpenApi", *fields, defaults={"b": "x"})}
        ok_json(server.post("/subjects/openapi-subject/versions", body), "seed registration")
    ok_json(server.put("/config/openapi-subject", {"compatibility": "FULL"}), "seed config")
    ok_json(server.put("/mode/openapi-subject", {"mode": "READWRITE"}), "seed mode")
    served = server.get("/openapi.json")
    assert ok_json(served, "the description") == describe(route_map()), "the node serves our description"
    description = tmp_path / "openapi.json"
    description.write_text(served.text)
    run = subprocess.run(
        [SCHEMATHESIS, "--config-file", str(CONFIG), "run", str(description), "--url", server.url,
         "--auth", "fuzzer:fuzz-pw", "--max-examples", "5", "--phases", "examples,fuzzing", "--workers", "1",
         "--seed", "1", "--max-failures", "50"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900)
    output = run.stdout + run.stderr
    assert run.returncode == 0, f"schemathesis found problems:\n{output[-6000:]}"
    operations = sum(len(methods) for methods in describe(route_map())["paths"].values())
    assert f"Tested: {operations}" in output, f"every one of the {operations} operations is exercised:\n" \
                                              f"{output[-3000:]}"
    warnings = output[output.find("WARNINGS"):]
    for read in ("GET /schemas/ids/{id}", "GET /subjects/{subject}/versions", "GET /config/{subject}",
                 "GET /mode/{subject}"):
        assert read not in warnings, f"{read} reaches the seeded data:\n{warnings[:3000]}"
