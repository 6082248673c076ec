"""The container tests' images, built locally and reused by the hash of their inputs.

    images = build_images(docker.from_env())
    images.kafka, images.zookeeper, images.registry    # tags such as schema-registry-py-test/kafka:1a2b..

Nothing comes from an image registry unless one answers:
- the Debian base is `debian:bookworm-slim` where it can be pulled, else a `debootstrap
  --variant=minbase` of bookworm imported as an image (needs root and debootstrap, which
  `make docker-engine` installs); it is tagged with the hash of that recipe;
- Kafka and ZooKeeper are the Maven Central jars `make infra-fetch` already put in
  .infra/jars, on Debian's JRE (docker/kafka, docker/zookeeper);
- the registry is docker/Dockerfile, the image users get, on `python:3.11-slim` where it
  can be pulled, else on the Debian base with Debian's Python 3.11, built as its own test
  builds it (`tests/cluster/registry_image.py`: the lock's wheels, downloaded on the host).
Each image's tag is the hash of its whole build context, Dockerfile and base image id: a
second run builds nothing, and a changed input builds only what depends on it. The
Debian package installs in the Dockerfiles (the JRE, Python) need Debian's mirror; the
engine's build cache keeps them, so they run once per engine.
"""
from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors

from tests.cluster.registry_image import ImageBuildError as RegistryImageBuildError, build_registry_image

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
    kafka = _build_from_folder(client, "kafka", debian, jars_dir / "kafka", log)
    zookeeper = _build_from_folder(client, "zookeeper", debian, jars_dir / "zookeeper", log)
    # The registry's image is the one users get (docker/Dockerfile: the wheel built with
    # its compiled modules, the lock's versions): built the way its own test builds it.
    log("images: the registry's image from docker/Dockerfile")
    try:
        registry = build_registry_image(client, python)
    except RegistryImageBuildError as exc:
        raise ImageBuildError(str(exc)) from exc
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
