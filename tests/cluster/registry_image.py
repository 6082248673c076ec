"""docker/Dockerfile built as the image users get: the files `docker build .` sends (as
.dockerignore chooses them), with the inputs a build needs where the engine has no way
out or only one through a TLS-intercepting proxy:

    tag = build_registry_image(client, base)     # schema-registry-py-test/registry-image:<hash>

- docker/wheels: Linux CPython 3.11 wheels at requirements.lock's versions, downloaded on
  the host (the image installs from the lock, so the wheelhouse follows the lock);
- docker/ca-certificates: the host's locally added CAs, which the builder stage trusts
  to fetch the Rust toolchain and the crates.
The tag is the hash of that context and the base image: a second call builds nothing.
tests/cluster/images.py can build the cluster's registry image the same way
(`build_registry_image(client, python_base)`): this module imports nothing of it.
"""
from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import docker
import docker.errors
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
REPOSITORY = "schema-registry-py-test/registry-image"
LABEL = "org.schema-registry-py.test-image"
STATE_DIR = ROOT / ".infra" / "docker"
# The context `docker build .` sends, as .dockerignore chooses it.
TOP_FILES = ("pyproject.toml", "setup.py", "MANIFEST.in", "requirements.lock", "README.md",
             "docker/Dockerfile", "docker/healthcheck.py")
PACKAGES = ("registry", "store", "election")
# The host's locally added CAs (Debian's place for them): where the host reaches PyPI and
# static.rust-lang.org through a TLS-intercepting proxy, the builder must trust it too.
LOCAL_CAS = Path("/usr/local/share/ca-certificates")


# Published as a source distribution only: built into a (pure-Python) wheel on the host.
SOURCE_ONLY = ("pure-sasl",)


class ImageBuildError(RuntimeError):
    """A download for the build, or the build itself, failed: a defect in docker/Dockerfile
    or its inputs. (Nothing here imports tests/cluster/images.py, so that it can use this.)"""


def locked_wheelhouse(arch: str) -> Path:
    """Linux CPython 3.11 wheels of what the image installs at requirements.lock's versions
    (runtime/) and of the build backend (build/), downloaded on the host once per lock
    and pyproject: the image's pip then needs no network. Raises ImageBuildError."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    runtime = [*project["project"]["dependencies"], *project["project"]["optional-dependencies"]["server"]]
    build = project["build-system"]["requires"]
    key = hashlib.sha256((ROOT / "requirements.lock").read_bytes() + json.dumps([runtime, build, arch]).encode())
    folder = STATE_DIR / f"locked-wheels-{key.hexdigest()[:16]}"
    if (folder / ".complete").exists():
        return folder
    platforms = [f"manylinux_2_{minor}_{arch}" for minor in range(17, 37)] + [f"manylinux2014_{arch}"]
    binary = ["--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
              *(arg for platform in platforms for arg in ("--platform", platform))]
    sourced = [r for r in runtime if Requirement(r).name in SOURCE_ONLY]
    lock = ["-c", str(ROOT / "requirements.lock")]
    for sub, wanted, extra in (("runtime", [r for r in runtime if r not in sourced], lock), ("build", build, [])):
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--dest", str(folder / sub),
                               *binary, *extra, *wanted], capture_output=True, text=True)
        if done.returncode != 0:
            raise ImageBuildError(f"downloading the image's {sub} wheels:\n{done.stdout}{done.stderr}")
    for requirement in sourced:
        done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-c",
                               str(ROOT / "requirements.lock"), "--wheel-dir", str(folder / "runtime"), requirement],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise ImageBuildError(f"building {requirement}'s wheel:\n{done.stdout}{done.stderr}")
    (folder / ".complete").touch()
    return folder


def build_context(wheels: Path) -> tuple[io.BytesIO, str]:
    """The build context as a tar (bytes that depend only on the files), and its digest."""
    files = [(name, ROOT / name) for name in TOP_FILES]
    for package in PACKAGES:
        files += [(path.relative_to(ROOT).as_posix(), path) for path in sorted((ROOT / package).rglob("*"))
                  if path.is_file() and "__pycache__" not in path.parts and "target" not in path.parts
                  and path.suffix not in (".pyc", ".so")]
    files += [(f"docker/wheels/{w.name}", w) for w in sorted((wheels / "runtime").glob("*.whl"))]
    files += [(f"docker/wheels/build/{w.name}", w) for w in sorted((wheels / "build").glob("*.whl"))]
    files += [(f"docker/ca-certificates/{c.name}", c) for c in sorted(LOCAL_CAS.glob("*.crt"))]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, path in sorted(files):
            info = tarfile.TarInfo(name)
            info.size = path.stat().st_size
            info.mode = 0o644
            with open(path, "rb") as data:
                archive.addfile(info, data)
    buffer.seek(0)
    return buffer, hashlib.sha256(buffer.getvalue()).hexdigest()[:16]


def build_registry_image(client: docker.DockerClient, base: str) -> str:
    """docker/Dockerfile on `base`, unless the tag for its inputs exists; returns the tag.
    Blocks for the build (minutes: the Rust toolchain and the crates; the engine's layer
    cache keeps the toolchain). Raises ImageBuildError when a download or the build fails."""
    wheels = locked_wheelhouse(client.info().get("Architecture", "x86_64"))
    context, digest = build_context(wheels)
    tag = f"{REPOSITORY}:{digest}-{client.images.get(base).id[7:19]}"
    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    output: list[str] = []
    try:
        for chunk in client.api.build(fileobj=context, custom_context=True, dockerfile="docker/Dockerfile",
                                      tag=tag, buildargs={"BASE": base}, network_mode="host", rm=True,
                                      forcerm=True, decode=True, labels={LABEL: "registry-image"}):
            output.append(chunk.get("stream", "") or chunk.get("status", ""))
            if "error" in chunk:
                raise ImageBuildError(f"docker/Dockerfile does not build: {chunk['error']}\n{''.join(output)[-4000:]}")
    except docker.errors.APIError as exc:
        raise ImageBuildError(f"docker/Dockerfile does not build: {exc}\n{''.join(output)[-4000:]}") from exc
    (STATE_DIR / "build-registry-image.log").write_text("".join(output))
    return tag
