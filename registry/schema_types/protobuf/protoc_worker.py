"""The protoc worker: a child process that compiles .proto files, one request at a time.

Started by `compiler.ProtocPool` as `python -I <this file>`; imports nothing of ours, so
it starts without the registry's dependencies. Why a separate process: protoc is C++,
and a crash in it (a stack overflow on input we failed to bound, a bug) must not take
the registry down; its diagnostics go to the process's stderr (fd 2), which can only be
captured safely in a process that runs nothing else.

Protocol on stdin/stdout, all integers big-endian u32 (see `compiler.py`):
    request:  count, then per file: len(name), name, len(text), text (UTF-8);
              the last file is the one to compile, the others are what it may import.
    response: one status byte (0: compiled, 1: rejected), len(payload), payload:
              a serialized FileDescriptorSet (with imports and source info), or
              protoc's diagnostics as UTF-8 text.
The worker exits when stdin closes, i.e. when its parent goes away.
"""
from __future__ import annotations

import os
import struct
import sys
import tempfile
from pathlib import Path

from grpc_tools import _protoc_compiler

import grpc_tools

# The well-known types (google/protobuf/*.proto) that grpcio-tools ships beside protoc.
_WELL_KNOWN = Path(grpc_tools.__file__).parent / "_proto"
_U32 = struct.Struct(">I")


def _read_exactly(stream, size: int) -> bytes | None:
    data = stream.read(size)
    if len(data) != size:
        return None
    return data


def _read_request(stream) -> list[tuple[str, bytes]] | None:
    header = _read_exactly(stream, 4)
    if header is None:
        return None
    (count,) = _U32.unpack(header)
    files = []
    for _ in range(count):
        parts = []
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


def _scratch_root() -> str | None:
    """Where compiles write their files: memory (tmpfs) where there is one, since a
    directory on disk costs ~10 ms to create and remove; else the system default.
    Each compile gets its own directory in it, created private (0700) by mkdtemp."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK):
        return shm
    return None


_SCRATCH = _scratch_root()


def _compile(files: list[tuple[str, bytes]]) -> tuple[int, bytes]:
    with tempfile.TemporaryDirectory(prefix="protoc-", dir=_SCRATCH) as work:
        sources = Path(work) / "src"
        sources.mkdir()
        for name, text in files:
            path = _safe_path(sources, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text)
        output = Path(work) / "out.pb"
        diagnostics = Path(work) / "stderr"
        saved_stderr = os.dup(2)
        with open(diagnostics, "wb") as sink:
            os.dup2(sink.fileno(), 2)
            try:
                status = _protoc_compiler.run_main([
                    b"protoc",
                    # The sources first, so a registered reference named like a
                    # well-known file wins over it, as in Confluent.
                    b"--proto_path=" + os.fsencode(sources),
                    b"--proto_path=" + os.fsencode(_WELL_KNOWN),
                    b"--include_imports",
                    b"--include_source_info",
                    b"--descriptor_set_out=" + os.fsencode(output),
                    files[-1][0].encode("utf-8"),
                ])
            finally:
                os.dup2(saved_stderr, 2)
                os.close(saved_stderr)
        if status == 0 and output.exists():
            return 0, output.read_bytes()
        text = diagnostics.read_bytes().replace(os.fsencode(sources) + b"/", b"")
        return 1, text


def main() -> None:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        files = _read_request(stdin)
        if files is None:
            return
        try:
            status, payload = _compile(files)
        except (OSError, ValueError) as error:
            status, payload = 1, f"cannot compile: {error}".encode()
        stdout.write(bytes([status]) + _U32.pack(len(payload)) + payload)
        stdout.flush()


if __name__ == "__main__":
    main()
