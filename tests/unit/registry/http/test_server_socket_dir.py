"""The private directories of granian's Unix socket: a killed registry's are removed by
the next start, and nothing else is (tests/api/test_tls.py runs it with real processes)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from registry.http.server import remove_orphaned_socket_dirs


def gone_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def socket_dir(parent: Path, name: str, *entries: str) -> Path:
    path = parent / name
    path.mkdir()
    for entry in entries:
        (path / entry).touch()
    return path


def test_only_a_gone_registrys_own_directory_is_removed(tmp_path: Path):
    dead = gone_pid()
    orphan = socket_dir(tmp_path, f"schema-registry-{dead}-abc", "granian.sock")
    empty_orphan = socket_dir(tmp_path, f"schema-registry-{dead}-def")
    kept = [
        socket_dir(tmp_path, f"schema-registry-{os.getpid()}-abc", "granian.sock"),  # running
        socket_dir(tmp_path, f"schema-registry-{dead}-xyz", "granian.sock", "data.db"),  # not only the socket
        socket_dir(tmp_path, "schema-registry-copy-abc"),  # another of our temporary directories
        socket_dir(tmp_path, "schema-registry-²-abc"),  # a digit, but not a pid
        socket_dir(tmp_path, "schema-registry-abcdefgh"),  # named before pids were
        socket_dir(tmp_path, "elsewhere"),
    ]
    (tmp_path / f"schema-registry-{dead}-link").symlink_to(kept[-1])
    (tmp_path / f"schema-registry-{dead}-file").touch()

    remove_orphaned_socket_dirs(tmp_path)

    assert not orphan.exists() and not empty_orphan.exists()
    assert all(path.is_dir() for path in kept)
    assert (tmp_path / f"schema-registry-{dead}-link").is_symlink()
    assert (tmp_path / f"schema-registry-{dead}-file").is_file()
