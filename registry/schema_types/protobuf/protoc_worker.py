"""The protoc worker: a child process that compiles .proto files, one request at a time.

Started by `compiler.ProtocPool` as `python -I <this file> <scratch directory>
<include directory>...` (where the files schemas import without a reference are, see
includes.py); imports nothing of ours, so it starts without the registry's dependencies.
Why a separate process: protoc is C++, and a crash in it (a stack overflow on input we
failed to bound, a bug) must not take the registry down.

Protocol on stdin/stdout, all integers big-endian u32 (see `compiler.py`):
    request:  count, then per file: len(name), name, len(text), text (UTF-8);
              the last file is the one to compile, the others are what it may import.
    response: one status byte (0: compiled, 1: rejected), len(payload), payload:
              a serialized FileDescriptorSet (with imports and source info), or, if
              the worker itself could not run protoc, why (UTF-8 text).
protoc's diagnostics go to stderr (fd 2), a pipe the parent reads while protoc runs:
protoc holds the GIL, so no thread here could drain it, and the parent keeps only a
bounded prefix (a file here would grow with every error, in memory on /dev/shm).

Files are written under the scratch directory the parent made for this worker, and
removed after each compile. The worker removes the directory itself when it exits:
when stdin closes (its parent stopped it, or died) or on SIGTERM. If it is killed
outright, its parent, or the next pool to start, removes it (see compiler.py).
"""
from __future__ import annotations

import os
import shutil
import signal
import struct
import sys
from pathlib import Path
from typing import BinaryIO

from grpc_tools import _protoc_compiler

_U32 = struct.Struct(">I")


def _read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    data = stream.read(size)
    if len(data) != size:
        return None
    return data


def _read_request(stream: BinaryIO) -> list[tuple[str, bytes]] | None:
    header = _read_exactly(stream, 4)
    if header is None:
        return None
    (count,) = _U32.unpack(header)
    files: list[tuple[str, bytes]] = []
    for _ in range(count):
        parts: list[bytes] = []
        for _ in range(2):
            size_bytes = _read_exactly(stream, 4)
            if size_bytes is None:
                return None
            chunk = _read_exactly(stream, _U32.unpack(size_bytes)[0])
            if chunk is None:
                return None
            parts.append(chunk)
        files.append((parts[0].decode("utf-8"), parts[1]))
    return files


def _safe_path(root: Path, name: str) -> Path:
    """Where `name` goes under `root`; the parent has vetted names, this re-checks."""
    path = (root / name).resolve()
    if root.resolve() not in path.parents:
        raise ValueError(f"file name {name!r} leaves the source directory")
    return path


def _compile(root: Path, includes: list[Path], files: list[tuple[str, bytes]]) -> tuple[int, bytes]:
    # A fixed layout, so the parent knows which path prefix to strip from diagnostics.
    sources, output = root / "src", root / "out.pb"
    try:
        sources.mkdir()
        for name, text in files:
            path = _safe_path(sources, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text)
        status = _protoc_compiler.run_main([
            b"protoc",
            # The sources first, so a registered reference named like a
            # well-known file wins over it, as in Confluent.
            b"--proto_path=" + os.fsencode(sources),
            *(b"--proto_path=" + os.fsencode(include) for include in includes),
            b"--include_imports",
            b"--include_source_info",
            b"--descriptor_set_out=" + os.fsencode(output),
            files[-1][0].encode("utf-8"),
        ])
        if status == 0 and output.exists():
            return 0, output.read_bytes()
        return 1, b""  # protoc said why on stderr
    finally:
        shutil.rmtree(sources, ignore_errors=True)
        output.unlink(missing_ok=True)


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds through main's finally, which cleans up


def main() -> None:
    root, includes = Path(sys.argv[1]), [Path(arg) for arg in sys.argv[2:]]
    signal.signal(signal.SIGTERM, _stop)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    try:
        while True:
            files = _read_request(stdin)
            if files is None:
                return
            try:
                status, payload = _compile(root, includes, files)
            except (OSError, ValueError) as error:
                status, payload = 1, f"cannot compile: {error}".encode()
            stdout.write(bytes([status]) + _U32.pack(len(payload)) + payload)
            stdout.flush()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
