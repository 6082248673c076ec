"""`infra` is a package of the repository, not of the product.

It runs before any virtualenv exists (``python3 -m infra fetch`` from the repository
root), so it may import nothing but the standard library; and the wheel must not carry it.
"""
from __future__ import annotations

import fnmatch
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

IMPORT_EVERY_MODULE = """
import importlib, pkgutil
import infra
for module in pkgutil.walk_packages(infra.__path__, "infra."):
    if module.name != "infra.__main__":  # that one runs the command line
        importlib.import_module(module.name)
"""


def test_every_infra_module_imports_with_the_standard_library_alone() -> None:
    # -S: no site-packages at all, as for the system python3 before `make install`.
    result = subprocess.run([sys.executable, "-S", "-c", IMPORT_EVERY_MODULE], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"infra must need only the standard library:\n{result.stderr}"


def test_the_command_line_runs_from_the_repository_root() -> None:
    result = subprocess.run([sys.executable, "-S", "-m", "infra", "--help"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"`python3 -m infra` is how the Makefile runs it:\n{result.stderr}"
    for command in ("fetch", "up", "down", "status"):
        assert command in result.stdout, f"the command line offers `{command}`"


def test_the_wheel_packages_the_product_and_not_infra() -> None:
    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    patterns = find["include"]

    def packaged(name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)

    assert not packaged("infra") and not packaged("infra.servers"), "infra is repository tooling, not product"
    assert all(packaged(name) for name in ("registry", "store", "election")), "the product is packaged"
