"""Schemathesis against Confluent's OpenAPI description of its registry (47 operations).

Bounded: a few examples per operation with a fixed seed, so a run is repeatable and
takes about a minute. No response may be a 5xx, and every documented response body must
match the description, except where Confluent's own code answers otherwise (listed in
openapi/schemathesis.toml and asserted below the way the code answers).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.api.support import RegistryProcess, ok_json, record

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
# Confluent's description is reference material beside the repository (../shared), not in it.
DESCRIPTION = Path(os.environ.get("CONFLUENT_OPENAPI",
                                  ROOT.parent / "shared" / "reference" / "confluent-schema-registry-openapi.yaml"))
CONFIG = Path(__file__).resolve().parent / "openapi" / "schemathesis.toml"
SCHEMATHESIS = shutil.which("schemathesis", path=str(Path(sys.executable).parent)) or "schemathesis"


def seed_registry(server: RegistryProcess) -> None:
    """What the description's reads are pointed at (see schemathesis.toml): ids 1 and 2."""
    for fields in ((("a", "int"),), (("a", "int"), ("b", "string"))):
        body = {"schema": record("OpenApi", *fields, defaults={"b": "x"})}
        ok_json(server.post("/subjects/openapi-subject/versions", body), "seed registration")
    ok_json(server.put("/config/openapi-subject", {"compatibility": "FULL"}), "seed config")


def test_confluents_description_finds_no_server_error_and_no_shape_mismatch(fresh_registry: RegistryProcess,
                                                                            tmp_path: Path):
    if not DESCRIPTION.exists():
        pytest.skip(f"Confluent's API description is not beside this checkout ({DESCRIPTION}); "
                    "set CONFLUENT_OPENAPI to its path")
    seed_registry(fresh_registry)
    run = subprocess.run(
        [SCHEMATHESIS, "--config-file", str(CONFIG), "run", str(DESCRIPTION), "--url", fresh_registry.url,
         "--max-examples", "5", "--phases", "examples,fuzzing", "--workers", "1", "--seed", "1",
         "--suppress-health-check", "filter_too_much",
         "--max-failures", "50"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    output = run.stdout + run.stderr
    assert run.returncode == 0, f"schemathesis found problems:\n{output[-6000:]}"
    assert "47 passed" in output, f"every one of the 47 operations must be exercised:\n{output[-3000:]}"


def test_where_the_code_and_the_description_differ_we_answer_as_the_code(registry: RegistryProcess):
    # ConfigResource.deleteTopLevelConfig returns the Config that was removed.
    ok_json(registry.put("/config", {"compatibility": "FULL"}), "set the global level")
    deleted = ok_json(registry.delete("/config"), "delete the global level")
    assert deleted == {"compatibilityLevel": "FULL"}, deleted
    # RootResource: an empty map for GET / and POST /.
    assert ok_json(registry.get("/"), "root") == {}
    assert ok_json(registry.post("/", {"anything": "at all"}), "root") == {}
    # getSchemaOnly: the schema text itself, not a JSON string holding it.
    text = record("RawText", ("a", "int"))
    answer = ok_json(registry.post("/subjects/raw-text/versions", {"schema": text}), "register")
    for path in (f"/schemas/ids/{answer['id']}/schema", "/subjects/raw-text/versions/1/schema"):
        raw = registry.get(path)
        assert raw.status_code == 200 and json.loads(raw.text) == json.loads(text), raw.text
