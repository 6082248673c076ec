"""The wheel we ship carries the fast paths, on every supported Python (issue 50).

The sdist and the wheel are built once per session as `make dist` builds them (the wheel
from the sdist, so the sdist is proven to build one). Then, for each supported CPython
found here (3.11, 3.12, 3.13: pyenv's or python3.X on PATH), the one cp311-abi3 wheel is
installed into fresh venvs, with the locked versions: the client side alone, and with
the `server` extra. In each:
- the serializers import, and an Avro datum decodes through the native decoder, which
  is the installed wheel's compiled module (not the checkout's, not fastavro);
- with [server], `schema-registry serve` from the install answers /ready on 127.0.0.1,
  registers a schema, and says at start-up that its replay is the compiled one.
Every command runs outside the checkout, whose packages would shadow the install.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"
SUPPORTED = ("3.11", "3.12", "3.13")
UV = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
TWINE_VERSION = re.search(r"^TWINE_VERSION := (\S+)$", (ROOT / "Makefile").read_text(), re.M).group(1)
# Cargo's work kept between sessions: a second session compiles nothing new.
CARGO_TARGET = ROOT / ".venv" / "cargo-target-wheel"

CLIENT = textwrap.dedent('''
    import io, json, sys
    import fastavro
    from registry.serde import AvroDeserializer, AvroSerializer  # the serializers import
    from registry.serde import avro_codec, avro_program
    import registry.serde._avro_native as native

    schema = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
        {"name": "id", "type": "long"}, {"name": "item", "type": "string"},
        {"name": "tags", "type": {"type": "array", "items": "string"}}]}
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), {"id": 7, "item": "tea", "tags": ["green"]})
    data = b"\\0\\0\\0\\0\\1" + out.getvalue()
    decode = avro_codec.decoder(avro_codec.parse(schema), None, 5)
    print(json.dumps({
        "native_file": native.__file__,
        "decoder": type(getattr(decode, "__self__", None)).__name__,
        "available": avro_program.AVAILABLE, "self_test": avro_codec.NATIVE,
        "value": decode(data),
        "python": "%d.%d" % sys.version_info[:2],
    }))
''')


def python_for(version: str) -> str | None:
    found = sorted(Path.home().glob(f".pyenv/versions/{version}.*/bin/python"))
    return str(found[-1]) if found else shutil.which(f"python{version}")


def run(args: list[str], cwd: Path, timeout: float, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, **kwargs)


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """dist/ with the sdist and the wheel built from it (blocks for the build: a minute or
    two, more on a cold cargo cache); returns the wheel."""
    out = tmp_path_factory.mktemp("dist")
    pyspark = run([sys.executable, "-c", "import os, pyspark; print(os.path.dirname(pyspark.__file__))"],
                  out, 60)
    env = {**os.environ, "CARGO_TARGET_DIR": str(CARGO_TARGET)}
    if pyspark.returncode == 0:
        env["SPARK_HOME"] = pyspark.stdout.strip()
    built = run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], out, 1800, env=env)
    assert built.returncode == 0, f"the sdist and wheel build:\n{built.stdout[-3000:]}\n{built.stderr[-3000:]}"
    wheels = list(out.glob("*.whl"))
    assert len(wheels) == 1 and len(list(out.glob("*.tar.gz"))) == 1, f"one sdist, one wheel: {list(out.iterdir())}"
    # twine in a venv of its own, as `make dist` runs it (the Makefile pins its version).
    checked = run([UV, "tool", "run", "--quiet", "--from", f"twine=={TWINE_VERSION}", "twine", "check", "--strict",
                   *map(str, out.iterdir())], out, 300)
    assert checked.returncode == 0, f"twine check passes:\n{checked.stdout}{checked.stderr}"
    return wheels[0]


def test_the_wheel_is_abi3_and_carries_the_compiled_modules_and_the_jar(dist: Path) -> None:
    assert "-cp311-abi3-" in dist.name, f"one wheel for every CPython from 3.11: {dist.name}"
    names = zipfile.ZipFile(dist).namelist()
    assert "store/_replay_native.abi3.so" in names, "the compiled replay is in the wheel"
    assert "registry/serde/_avro_native.abi3.so" in names, "the native Avro decoder is in the wheel"
    if shutil.which("javac"):
        assert "registry/spark/jvm/registry-spark.jar" in names, "registry.spark's jar is built into the wheel"
    assert not [n for n in names if n.endswith((".rs", ".java", "Cargo.toml"))], "sources stay in the sdist"


@pytest.fixture(scope="session", params=SUPPORTED)
def python(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(version, interpreter) of one supported Python; skips where it is missing."""
    found = python_for(request.param)
    if found is None:
        pytest.skip(f"no Python {request.param} on this machine (pyenv install {request.param})")
    return request.param, found


def make_venv(python: str, wheel: Path, extra: str, where: Path) -> Path:
    """A fresh venv of `python` with `wheel[extra]` and the locked versions; its bin/."""
    assert UV is not None, "uv is in the test extra (make test installs it)"
    made = run([UV, "venv", "--quiet", "--python", python, str(where)], where.parent, 120)
    assert made.returncode == 0, made.stderr
    requirement = f"{wheel}[{extra}]" if extra else str(wheel)
    installed = run([UV, "pip", "install", "--quiet", "--python", str(where / "bin" / "python"),
                     "-c", str(LOCK), requirement], where.parent, 900)
    assert installed.returncode == 0, f"installing {requirement}:\n{installed.stdout}{installed.stderr}"
    return where / "bin"


@pytest.fixture(scope="session")
def server_bin(dist: Path, python: tuple[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bin/ of a venv with the wheel's [server] extra on `python`, once per Python."""
    return make_venv(python[1], dist, "server", tmp_path_factory.mktemp(f"server-{python[0]}") / "venv")


@pytest.mark.parametrize("extra", ["", "server"], ids=["client-only", "server"])
def test_the_installed_wheel_decodes_natively(dist: Path, python: tuple[str, str], extra: str,
                                              request: pytest.FixtureRequest, tmp_path: Path) -> None:
    bin_dir = request.getfixturevalue("server_bin") if extra else make_venv(python[1], dist, "", tmp_path / "venv")
    done = run([str(bin_dir / "python"), "-c", CLIENT], tmp_path, 120)
    assert done.returncode == 0, f"the client side in the installed wheel:\n{done.stderr}"
    result = json.loads(done.stdout)
    assert Path(result["native_file"]).is_relative_to(bin_dir.parent), \
        f"the install's compiled decoder ran, not the checkout's: {result['native_file']}"
    assert result["native_file"].endswith(".abi3.so"), "the abi3 module, the one the wheel ships"
    assert result["available"] and result["self_test"], "the native decoder loaded and passed its self-test"
    assert result["decoder"] == "Decoder", "the deserializer's decoder is the native one, not fastavro"
    assert result["value"] == {"id": 7, "item": "tea", "tags": ["green"]}, "and decodes what fastavro wrote"
    assert result["python"] == python[0], "the venv runs the Python asked for"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def served(server_bin: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`schema-registry serve` from a [server] install on 127.0.0.1; (its URL, its log)."""
    bin_dir = server_bin
    port, log = free_port(), tmp_path / "serve.log"
    env = {**os.environ, "SCHEMA_REGISTRY_LISTENERS": f"http://127.0.0.1:{port}",
           "SCHEMA_REGISTRY_EMBEDDED_STORE_PATH": str(tmp_path / "store")}
    with open(log, "wb") as out:
        process = subprocess.Popen([str(bin_dir / "schema-registry"), "serve"], cwd=tmp_path, env=env,
                                   stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, f"serve exited {process.returncode}:\n{log.read_text()}"
            try:
                with urllib.request.urlopen(f"{url}/ready", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, f"/ready within 60 s:\n{log.read_text()}"
            time.sleep(0.2)
        yield url, log
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_serve_from_the_installed_wheel_registers_and_replays_natively(served: tuple[str, Path]) -> None:
    url, log = served
    body = json.dumps({"schema": json.dumps({"type": "record", "name": "Order", "fields": [
        {"name": "id", "type": "long"}]})}).encode()
    request = urllib.request.Request(f"{url}/subjects/orders-value/versions", data=body, method="POST",
                                     headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200 and json.loads(answer.read())["id"] >= 1, "the installed server registers"
    text = log.read_text()
    assert "replay: compiled (store._replay_native)" in text, \
        f"the node from the wheel replays with the compiled module, and says so at start-up:\n{text}"
