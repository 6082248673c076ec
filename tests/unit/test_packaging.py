"""pyproject.toml and requirements.lock: what a user may install, and what we install.

The rule (issue 50): pyproject declares ranges, whose lower bound is the oldest version
CI tests (`make test-lowest` installs the client side at those bounds) and whose upper
bound exists only where a known break does; requirements.lock holds the exact versions
the server, the image and CI install, and agrees with pyproject. A client-only install
has no server dependency, and the extras stay in step.
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]
EXTRAS: dict[str, list[str]] = PROJECT["optional-dependencies"]
LOCK = ROOT / "requirements.lock"
SERVER_ONLY = {"flask", "werkzeug", "granian", "httptools", "uvloop", "kazoo", "jproperties", "grpcio-tools",
               "protobuf", "jsonschema", "google-re2"}
# An upper bound needs a known break, named here and beside the requirement in pyproject.
KNOWN_BREAKS = {
    "pyspark": "registry.spark's jar is compiled against Catalyst's internal classes of one Spark minor",
}
SUPPORTED = ("3.11", "3.12", "3.13")
# What the extras the lock covers are: the Makefile installs [server,admin] and [server,test].
LOCKED_EXTRAS = {"server", "admin", "spark", "test"}


def names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def declared() -> list[Requirement]:
    """Every requirement pyproject declares, self-references to other extras left out."""
    found = [Requirement(r) for r in [*PROJECT["dependencies"], *(r for e in EXTRAS.values() for r in e)]]
    return [r for r in found if r.name != PROJECT["name"]]


def locked() -> list[tuple[str, str, Marker | None]]:
    """(name, exact version, marker) of each requirements.lock line; asserts each is `==`."""
    entries = []
    for line in LOCK.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        requirement = Requirement(line)
        specs = list(requirement.specifier)
        assert len(specs) == 1 and specs[0].operator == "==" and "*" not in specs[0].version, \
            f"requirements.lock pins each package exactly: {line!r}"
        entries.append((canonicalize_name(requirement.name), specs[0].version, requirement.marker))
    return entries


def environments() -> list[dict[str, str]]:
    """The environments the lock must serve: Linux x86_64 on each supported CPython."""
    return [{"python_version": v, "python_full_version": f"{v}.0", "sys_platform": "linux",
             "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
             "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}
            for v in SUPPORTED]


def test_the_base_dependencies_are_the_client_sides_only() -> None:
    assert names(PROJECT["dependencies"]) & SERVER_ONLY == set(), \
        "a producer's `pip install` must not bring the server's libraries"


def test_every_dependency_is_a_range_from_a_tested_lower_bound() -> None:
    for requirement in declared():
        operators = sorted(spec.operator for spec in requirement.specifier)
        assert "==" not in operators and "~=" not in operators and "===" not in operators, \
            f"{requirement}: pyproject declares ranges; exact versions belong in requirements.lock"
        assert ">=" in operators, f"{requirement}: a lower bound, the oldest version CI tests"
        uppers = [spec for spec in requirement.specifier if spec.operator in ("<", "<=", "!=")]
        if uppers:
            assert canonicalize_name(requirement.name) in KNOWN_BREAKS, \
                f"{requirement}: an upper bound only where a known break exists (KNOWN_BREAKS)"


def test_the_lock_pins_exactly_and_satisfies_pyproject_on_every_supported_python() -> None:
    entries = locked()
    assert entries, "requirements.lock lists the packages it pins"
    for environment in environments():
        chosen: dict[str, str] = {}
        for name, version, marker in entries:
            if marker is None or marker.evaluate(environment):
                assert chosen.setdefault(name, version) == version, \
                    f"requirements.lock pins {name} twice for Python {environment['python_version']}"
        for requirement in declared():
            if requirement.marker is not None and not requirement.marker.evaluate(environment):
                continue
            name = canonicalize_name(requirement.name)
            assert name in chosen, \
                f"{requirement} is not in requirements.lock for Python {environment['python_version']}: run make lock"
            assert requirement.specifier.contains(Version(chosen[name]), prereleases=True), \
                f"requirements.lock's {name}=={chosen[name]} is outside pyproject's {requirement}: run make lock"


def test_the_lock_covers_the_extras_the_server_the_image_and_ci_install() -> None:
    header = LOCK.read_text().split("\n", 3)[:3]
    command = next((line for line in header if "uv pip compile" in line), "")
    assert command, "requirements.lock says the uv command that wrote it (make lock)"
    extras = set(re.findall(r"--extra (\S+)", command))
    assert extras == LOCKED_EXTRAS, f"the lock resolves the extras the Makefile installs: {command}"
    assert "--universal" in command, "one lock for every supported Python, markers where they differ"


def test_the_makefile_installs_from_the_lock() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^LOCK := requirements\.lock$", makefile, re.M), "the Makefile names the lock once"
    installs = [line for line in makefile.splitlines() if "pip install" in line and " -e " in line]
    assert installs and all("-c $(LOCK)" in line for line in installs), \
        f"every editable install of the checkout is constrained by the lock: {installs}"


def test_python_3_11_and_later_are_supported_and_claimed() -> None:
    assert SpecifierSet(PROJECT["requires-python"]) == SpecifierSet(">=3.11"), \
        "every CPython from 3.11 (one abi3 wheel); no upper bound"
    claimed = {c.rsplit(" :: ", 1)[1] for c in PROJECT["classifiers"]
               if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)}
    assert claimed == set(SUPPORTED), \
        f"the classifiers claim the Pythons CI tests, 3.14 only once every dependency has wheels: {claimed}"


def test_the_native_modules_are_built_by_the_backend_as_abi3() -> None:
    modules = {m["target"]: m for m in PYPROJECT["tool"]["setuptools-rust"]["ext-modules"]}
    assert set(modules) == {"store._replay_native", "registry.serde._avro_native"}, \
        "the two Rust extensions are built by setuptools-rust into the wheel"
    for target, module in modules.items():
        assert module["py-limited-api"] == "auto" and module["optional"] is True, \
            f"{target}: abi3, and a build without Rust still installs (the Python fallback)"
        cargo = tomllib.loads((ROOT / module["path"]).read_text())
        assert "abi3-py311" in cargo["dependencies"]["pyo3"]["features"], \
            f"{module['path']}: pyo3's abi3-py311, one binary for every CPython from 3.11"
    assert PYPROJECT["tool"]["distutils"]["bdist_wheel"]["py-limited-api"] == "cp311"


def test_the_server_extra_holds_the_schema_types_requirements_without_a_self_reference() -> None:
    server = set(EXTRAS["server"])
    assert set(EXTRAS["schema-types"]) <= server, \
        "the server parses every schema type: its extra repeats schema-types', same ranges"
    assert PROJECT["name"] not in names(EXTRAS["server"]), \
        "tests/cluster/images.py downloads the server extra's list as is: no self-reference"


def test_the_image_builds_the_wheel_apart_and_runs_it_as_a_user_from_the_lock() -> None:
    dockerfile = (ROOT / "docker" / "Dockerfile").read_text()
    stages = re.findall(r"^FROM (\S+)(?: AS (\S+))?$", dockerfile, re.M)
    assert [name for _, name in stages][:2] == ["python", "builder"] and stages[-1][1] == "", \
        f"a builder stage with the Rust toolchain, then the runtime without it: {stages}"
    runtime = dockerfile.rsplit("\nFROM ", 1)[1]
    assert "rustup" not in runtime and "COPY --from=builder /dist/" in runtime, "the runtime gets the wheel only"
    assert "-c /opt/schema-registry/requirements.lock" in runtime, "the image installs the locked versions"
    assert re.search(r"^USER registry$", runtime, re.M), "the node runs as a user, not root"
    assert "HEALTHCHECK" in runtime and "/ready" in (ROOT / "docker" / "healthcheck.py").read_text(), \
        "the health check asks /ready"
