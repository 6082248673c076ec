"""A producer installs the client side without the server's dependencies, and it works.

A fresh virtualenv gets `pip install <this project>` with no extras, dependencies
resolved by pip from PyPI (pip's cache makes it quick; about 20 s in all). In that
venv: registry.client and registry.serde import, no module of the `server` extra (nor
of `schema-types`, JSON Schema and Protobuf) is importable, and an Avro record
serialized by our serializer against a real registry process (started from the test
venv) deserializes back. `schema-registry serve` there names the missing extra.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.support import RegistryFactory, RegistryProcess

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
# The modules of the `server` and `schema-types` extras: a producer needs none of them.
SERVER_EXTRA = ("flask", "werkzeug", "granian", "kazoo", "jproperties", "grpc_tools", "jsonschema", "re2")

PRODUCER = textwrap.dedent('''
    import importlib.util, json, sys

    import registry
    from registry.client import Schema, SchemaRegistryClient
    from registry.serde import AvroDeserializer, AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    url = sys.argv[1]
    SERVER_SIDE = {"registry.service", "registry.node", "registry.api", "registry.routes", "registry.http",
                   "registry.server", "registry.asgi", "registry.forward", "registry.leader_gate"}
    schema = json.dumps({"type": "record", "name": "Order", "namespace": "shop", "fields": [
        {"name": "id", "type": "long"}, {"name": "item", "type": "string"}]})
    order = {"id": 7, "item": "tea"}
    ctx = SerializationContext("orders", MessageField.VALUE)
    with SchemaRegistryClient({"url": url}) as client:
        data = AvroSerializer(client, schema)(order, ctx)
        back = AvroDeserializer(client)(data, ctx)
        latest = client.get_latest_version("orders-value")
    print(json.dumps({
        "importable": [m for m in sys.argv[2:] if importlib.util.find_spec(m) is not None],
        "loaded": sorted(m for m in sys.modules if m.split(".")[0] in sys.argv[2:]
                         or m.split(".")[0] in ("store", "election")
                         or ".".join(m.split(".")[:2]) in SERVER_SIDE),
        "registry": registry.__file__,
        "header": data[:5].hex(), "back": back, "schema_id": latest.schema_id,
        "registered": json.loads(latest.schema.schema_str),
    }))
''')


def run(args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """`args` run in `cwd`: never the worktree, whose `registry/` would shadow the installed one."""
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with this project installed without extras; returns its bin directory."""
    base = tmp_path_factory.mktemp("client-only")
    # A copy of what the wheel is built from, so the build leaves nothing in the worktree.
    source = base / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for package in ("registry", "store", "election"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    venv = base / "venv"
    # Without a pip of its own (seconds saved): the test venv's pip installs into it, resolving
    # the dependencies for that empty environment alone.
    made = run([sys.executable, "-m", "venv", "--without-pip", str(venv)], base, timeout=120)
    assert made.returncode == 0, f"cannot create a venv: {made.stderr}"
    installed = run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                     "--quiet", "--disable-pip-version-check", str(source)], base, timeout=600)
    assert installed.returncode == 0, f"pip install without extras failed:\n{installed.stdout}\n{installed.stderr}"
    return venv / "bin"


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[RegistryProcess]:
    factory = RegistryFactory(tmp_path)
    try:
        yield factory()
    finally:
        factory.close()


def test_the_client_side_installs_and_works_without_the_server_extra(client_venv: Path,
                                                                       registry: RegistryProcess) -> None:
    done = run([str(client_venv / "python"), "-c", PRODUCER, registry.url, *SERVER_EXTRA], client_venv,
               timeout=120)
    assert done.returncode == 0, f"the producer failed in the client-only venv:\n{done.stderr}"
    result = json.loads(done.stdout)
    assert Path(result["registry"]).is_relative_to(client_venv.parent), \
        f"the venv's installed copy ran, not the worktree's: {result['registry']}"
    assert result["importable"] == [], \
        f"a plain install pulls in none of the server extra's packages: {result['importable']}"
    assert result["loaded"] == [], f"the client side loaded server modules: {result['loaded']}"
    assert result["back"] == {"id": 7, "item": "tea"}, "the record round-trips through our serializers"
    assert result["header"] == "00" + result["schema_id"].to_bytes(4, "big").hex(), \
        "framed with magic byte 0 and the id the real registry assigned"
    assert result["registered"]["name"] == "Order", "the serializer registered the schema in the registry"


def test_serve_without_the_server_extra_names_it(client_venv: Path) -> None:
    done = run([str(client_venv / "schema-registry"), "serve"], client_venv, timeout=60)
    assert done.returncode == 2, f"serve must refuse to start: {done.stdout}{done.stderr}"
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "`server` extra" in lines[0] and "schema-registry-py[server]" in lines[0], \
        f"one line naming the extra to install, not a traceback: {done.stderr}"
