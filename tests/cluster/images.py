"""The container tests' images, built locally and reused by the hash of their inputs.

    images = build_images(docker.from_env())
    images.kafka, images.zookeeper, images.registry    # tags such as schema-registry-py-test/kafka:1a2b..

Nothing comes from an image registry unless one answers:
- the Debian base is `debian:bookworm-slim` where it can be pulled, else a `debootstrap
  --variant=minbase` of bookworm imported as an image (needs root and debootstrap, which
  `make docker-engine` installs); it is tagged with the hash of that recipe;
- Kafka and ZooKeeper are the Maven Central jars `make infra-fetch` already put in
  .infra/jars, on Debian's JRE (docker/kafka, docker/zookeeper);
- the registry is docker/Dockerfile on `python:3.11-slim` where it can be pulled, else on
  the Debian base with Debian's Python 3.11, its dependencies from a wheelhouse downloaded
  on the host for the engine's platform (so pip in the build needs no network).
Each image's tag is the hash of its whole build context, Dockerfile and base image id: a
second run builds nothing, and a changed input builds only what depends on it. The
Debian package installs in the Dockerfiles (the JRE, Python) need Debian's mirror; the
engine's build cache keeps them, so they run once per engine.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors

ROOT = Path(__file__).resolve().parents[2]
DOCKER_DIR = ROOT / "docker"
STATE_DIR = ROOT / ".infra" / "docker"
REPOSITORY = "schema-registry-py-test"
LABEL = "org.schema-registry-py.test-image"

DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
PUBLIC_DEBIAN = "debian:bookworm-slim"
PUBLIC_PYTHON = "python:3.11-slim"
# Bumped when the debootstrap recipe below changes, so the base is rebuilt.
_BASE_RECIPE = f"debootstrap --variant=minbase {DEBIAN_SUITE} {DEBIAN_MIRROR}; no apt caches; v1"

Log = Callable[[str], None]


class ImagesUnavailable(RuntimeError):
    """The images cannot be made on this machine (tests skip, giving this reason)."""


class ImageBuildError(RuntimeError):
    """A build ran and failed: a defect in our Dockerfiles or their inputs."""


@dataclass(frozen=True)
class ClusterImages:
    kafka: str
    zookeeper: str
    registry: str


def build_images(client: docker.DockerClient, jars_dir: Path, log: Log = print) -> ClusterImages:
    """Make sure the three images exist in `client`'s engine; return their tags.

    `jars_dir` is infra's JARS_DIR (fetched jars in kafka/ and zookeeper/). Blocks for
    the builds: minutes on a fresh engine, about a second when every tag exists.
    Raises ImagesUnavailable when no Debian base can be had here, ImageBuildError when a
    build fails.
    """
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    debian = debian_base(client, log)
    python = PUBLIC_PYTHON if _available(client, PUBLIC_PYTHON) else debian
    arch = client.info().get("Architecture", "x86_64")
    wheels = wheelhouse(arch, log)
    kafka = _build_from_folder(client, "kafka", debian, jars_dir / "kafka", log)
    zookeeper = _build_from_folder(client, "zookeeper", debian, jars_dir / "zookeeper", log)
    registry_files = [("docker/Dockerfile", DOCKER_DIR / "Dockerfile"),
                      ("pyproject.toml", ROOT / "pyproject.toml"), ("README.md", ROOT / "README.md")]
    for package in ("registry", "store", "election"):
        registry_files += _tree(ROOT / package, package)
    registry_files += [(f"docker/wheels/{w.name}", w) for w in sorted((wheels / "runtime").glob("*.whl"))]
    registry_files += [(f"docker/wheels/build/{w.name}", w) for w in sorted((wheels / "build").glob("*.whl"))]
    registry = _build(client, "registry", python, registry_files, "docker/Dockerfile", log)
    return ClusterImages(kafka=kafka, zookeeper=zookeeper, registry=registry)


# ---------------------------------------------------------------------------- bases


def debian_base(client: docker.DockerClient, log: Log) -> str:
    """A Debian bookworm image: ours by debootstrap if built before, else the public one
    if it is present or can be pulled, else a new debootstrap. Raises ImagesUnavailable.
    """
    local = f"{REPOSITORY}/debian:{DEBIAN_SUITE}-{_digest(_BASE_RECIPE.encode())}"
    if _present(client, local):
        return local
    if _available(client, PUBLIC_DEBIAN):
        return PUBLIC_DEBIAN
    if os.geteuid() != 0 or shutil.which("debootstrap") is None:
        raise ImagesUnavailable(
            f"no Debian base image: {PUBLIC_DEBIAN} cannot be pulled, and making one with debootstrap "
            "needs root and the debootstrap package (`make docker-engine` installs it)")
    _debootstrap(client, local, log)
    return local


def _debootstrap(client: docker.DockerClient, tag: str, log: Log) -> None:
    log(f"images: no base image can be pulled; building {tag} with debootstrap (about a minute)")
    work = Path(tempfile.mkdtemp(prefix="rootfs-", dir=STATE_DIR))
    rootfs, archive, output = work / "rootfs", work / "rootfs.tar", STATE_DIR / "debootstrap.log"
    try:
        with open(output, "wb") as out:
            done = subprocess.run(["debootstrap", "--variant=minbase", DEBIAN_SUITE, str(rootfs), DEBIAN_MIRROR],
                                  stdout=out, stderr=subprocess.STDOUT)
        if done.returncode != 0:
            raise ImageBuildError(f"debootstrap failed (exit {done.returncode}); see {output}:\n{_tail(output)}")
        # The downloaded .debs and package lists are half the tree and useless in an image.
        for leftover in (rootfs / "var/cache/apt/archives", rootfs / "var/lib/apt/lists"):
            for path in leftover.glob("*"):
                if path.is_file():
                    path.unlink()
        subprocess.run(["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(archive), "."], check=True)
        client.api.import_image(src=str(archive), repository=tag.rsplit(":", 1)[0], tag=tag.rsplit(":", 1)[1],
                                changes=[f"LABEL {LABEL}=debian", "CMD [\"/bin/bash\"]"])
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _present(client: docker.DockerClient, ref: str) -> bool:
    try:
        client.images.get(ref)
        return True
    except docker.errors.ImageNotFound:
        return False


def _available(client: docker.DockerClient, ref: str) -> bool:
    """Present, or pulled now. A failed pull (no registry reachable) fails fast."""
    if _present(client, ref):
        return True
    try:
        client.images.pull(ref)
        return True
    except docker.errors.APIError:
        return False


# ---------------------------------------------------------------------------- wheels


def wheelhouse(arch: str, log: Log) -> Path:
    """The registry's dependencies (in runtime/), and what building it needs (in build/),
    as Linux wheels for CPython 3.11 on `arch`, in a folder named by the hash of what was
    asked for. Downloads with pip (blocks for it) only when that folder is not complete yet.
    """
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    runtime = [*project["project"]["dependencies"],
               *project["project"].get("optional-dependencies", {}).get("server", [])]
    # Resolved apart: pip builds the project in an isolated environment of its own, so
    # the build's pins need not agree with the runtime's (grpcio-tools wants a newer setuptools).
    build = project["build-system"]["requires"]
    # Binary wheels for the engine's Linux, whatever the host runs (a Mac, say).
    platforms = [f"manylinux_2_{minor}_{arch}" for minor in range(17, 37)] + [f"manylinux2014_{arch}"]
    folder = STATE_DIR / f"wheels-{_digest(json.dumps([runtime, build, platforms]).encode())}"
    if (folder / ".complete").exists():
        return folder
    log(f"images: downloading the registry's dependencies into {folder}")
    staging = Path(tempfile.mkdtemp(prefix="wheels-", dir=STATE_DIR))
    for subfolder, wanted in (("runtime", runtime), ("build", build)):
        try:
            _download(staging / subfolder, list(wanted), platforms)
        except ImageBuildError:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    (staging / ".complete").touch()
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)
    return folder


_NO_WHEEL = re.compile(r"No matching distribution found for ([A-Za-z0-9._-]+)==([^\s;]+)")


def _download(dest: Path, wanted: list[str], platforms: list[str]) -> None:
    """Wheels of `wanted` and their dependencies for the engine's platform into `dest`.
    pip only downloads for another platform with --only-binary, so a pin published as
    a source distribution alone (pure-sasl) is built into a wheel here, once, and must
    come out pure Python (any platform); then the rest is downloaded again without it."""
    built: set[str] = set()
    while True:
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--dest", str(dest),
                   "--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
                   *(arg for platform in platforms for arg in ("--platform", platform)), *wanted]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode == 0:
            return
        missing = _NO_WHEEL.search(done.stdout + done.stderr)
        pin = f"{missing.group(1)}=={missing.group(2)}" if missing else None
        if pin is None or pin.lower() in built or pin not in wanted:
            raise ImageBuildError(f"pip could not download the registry's wheels:\n{done.stdout}{done.stderr}")
        before = set(dest.glob("*.whl"))
        wheel = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir",
                                str(dest), pin], capture_output=True, text=True)
        made = set(dest.glob("*.whl")) - before
        if wheel.returncode != 0 or not made or not all(w.name.endswith("-none-any.whl") for w in made):
            raise ImageBuildError(f"{pin} has no wheel for the engine's platform and does not build into a "
                                  f"pure-Python one:\n{wheel.stdout}{wheel.stderr}")
        built.add(pin.lower())
        wanted.remove(pin)


# ---------------------------------------------------------------------------- builds


def _build_from_folder(client: docker.DockerClient, name: str, base: str, jars: Path, log: Log) -> str:
    jar_files = sorted(jars.glob("*.jar"))
    if not jar_files:
        raise ImageBuildError(f"no jars in {jars}: run `make infra-fetch` first")
    files = [(path.name, path) for path in sorted((DOCKER_DIR / name).iterdir()) if path.is_file()]
    files += [(f"jars/{jar.name}", jar) for jar in jar_files]
    return _build(client, name, base, files, "Dockerfile", log)


def _build(client: docker.DockerClient, name: str, base: str, files: list[tuple[str, Path]],
           dockerfile: str, log: Log) -> str:
    """Build `files` (archive name, source) with BASE=`base` unless the tag for their hash exists."""
    context = _context(files)
    base_id = client.images.get(base).id
    tag = f"{REPOSITORY}/{name}:{_digest(context.getvalue() + base_id.encode() + dockerfile.encode())}"
    if _present(client, tag):
        return tag
    log(f"images: building {tag} on {base}")
    output: list[str] = []
    try:
        for chunk in client.api.build(fileobj=context, custom_context=True, dockerfile=dockerfile, tag=tag,
                                      buildargs={"BASE": base}, network_mode="host", rm=True, forcerm=True,
                                      decode=True, labels={LABEL: name}):
            output.append(chunk.get("stream", "") or chunk.get("status", ""))
            if "error" in chunk:
                raise ImageBuildError(f"building {tag} failed: {chunk['error']}\n{''.join(output)[-4000:]}")
    except docker.errors.APIError as exc:
        raise ImageBuildError(f"building {tag} failed: {exc}\n{''.join(output)[-4000:]}") from exc
    (STATE_DIR / f"build-{name}.log").write_text("".join(output))
    _prune(client, f"{REPOSITORY}/{name}", keep=tag)
    return tag


def _prune(client: docker.DockerClient, repository: str, keep: str, kept: int = 3) -> None:
    """Remove this repository's images but `keep` and the `kept` newest (best effort).

    Several newest survive because sessions of other checkouts may share the engine and
    still be using theirs.
    """
    others = sorted((image for image in client.images.list(name=repository) if keep not in image.tags),
                    key=lambda image: image.attrs.get("Created", ""), reverse=True)
    for image in others[kept:]:
        try:
            client.images.remove(image.id, noprune=False)
        except docker.errors.APIError:
            pass  # still used by a container: left for a later build


def _tree(folder: Path, prefix: str) -> list[tuple[str, Path]]:
    return [(f"{prefix}/{path.relative_to(folder).as_posix()}", path) for path in sorted(folder.rglob("*"))
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"]


def _context(files: Iterable[tuple[str, Path]]) -> io.BytesIO:
    """A build context whose bytes depend only on the files' names, contents and modes."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, path in sorted(files):
            info = tarfile.TarInfo(name)
            info.size = path.stat().st_size
            info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
            with open(path, "rb") as data:
                archive.addfile(info, data)
    buffer.seek(0)
    return buffer


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _tail(path: Path, lines: int = 30) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
