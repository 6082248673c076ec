"""Text to descriptors: .proto schema text compiled by protoc into FileDescriptorProtos.

    compiled = compile_schema('syntax = "proto3"; message M { int32 a = 1; }', {})
    compiled.main          # the schema's FileDescriptorProto, named "default" as in Confluent
    compiled.files         # every file it needs, dependencies first (references, well-known)

The compiler is protoc from grpcio-tools (the same C++ front end Google ships), run in
worker processes (`protoc_worker.py`) rather than in ours:
- protoc reports errors only on stderr (fd 2); a worker runs one compile at a time, so
  it can point fd 2 at a file without touching the stderr of the registry's threads;
- protoc is C++: input it cannot handle (we found that aggregate option values nested
  ~10,000 deep overflow its stack) would kill the whole registry if it ran in-process;
  in a worker it kills the worker, which is replaced, and the schema is refused;
- a compile that runs too long is stopped by killing its worker.
The cost is one pipe round trip (~0.1 ms) per compile and a resident worker (~40 MB)
per pool slot; `bench/compat_protobuf.py` measures it against protoc in-process.

Input is bounded before it reaches protoc (`check_bounds`): size, bracket nesting and
the number of declarations, so hostile text is refused in time linear in its size
without ever starting the compiler.
"""
from __future__ import annotations

import atexit
import os
import queue
import re
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError

from registry.schema_types.base import InvalidSchema

MAIN_FILE: Final = "default"
"""The file name the schema itself compiles under: what Confluent names it in
`?format=serialized` (ProtobufSchema.DEFAULT_NAME)."""

MAX_SOURCE_BYTES: Final = 4 * 1024 * 1024
"""Schema plus references, UTF-8 encoded."""
MAX_NESTING: Final = 64
"""Brackets ({[(<) open at once. protoc itself refuses messages nested deeper than 32."""
MAX_TOKENS: Final = 200_000
"""Brackets, statements (;) and string literals in one file: ~65,000 fields and more."""
COMPILE_TIMEOUT: Final = 20.0
"""Seconds a single compile may take (the largest schemas within the bounds take ~1 s)."""

_WORKER_SCRIPT: Final = Path(__file__).with_name("protoc_worker.py")
_U32: Final = struct.Struct(">I")

# Structural tokens of .proto text. Strings and comments are matched whole so that the
# brackets inside them do not count; an unterminated one runs to the end of its line
# (strings) or of the text (comments). The alternatives are disjoint, so matching is
# linear in the length of the text.
_STRUCTURE: Final = re.compile(
    r"""
      "(?:[^"\\\n]|\\.)*"?
    | '(?:[^'\\\n]|\\.)*'?
    | //[^\n]*
    | /\*.*?(?:\*/|\Z)
    | [{\[(<]
    | [}\])>]
    | ;
    """,
    re.VERBOSE | re.DOTALL,
)
_OPENERS: Final = frozenset("{[(<")
_CLOSERS: Final = frozenset("}])>")


class CompileError(Exception):
    """protoc refused the files, crashed on them or ran out of time. The message says which."""


def check_bounds(text: str, what: str) -> bytes:
    """`text` as UTF-8, if it is within the bounds protoc is given. Raises InvalidSchema.

    Time and memory are linear in len(text): one regex pass that stops at the first
    excess.
    """
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InvalidSchema(f"{what} is not valid Unicode text: {error.reason} "
                            f"at character {error.start}") from None
    if len(encoded) > MAX_SOURCE_BYTES:
        raise InvalidSchema(f"{what} is {len(encoded)} bytes long; at most "
                            f"{MAX_SOURCE_BYTES} are accepted")
    depth = 0
    for count, match in enumerate(_STRUCTURE.finditer(text)):
        if count >= MAX_TOKENS:
            raise InvalidSchema(f"{what} has more than {MAX_TOKENS} declarations, "
                                f"brackets and strings; it is too large to compile")
        first = match.group()[0]
        if first in _OPENERS:
            depth += 1
            if depth > MAX_NESTING:
                line = text.count("\n", 0, match.start()) + 1
                raise InvalidSchema(f"{what} nests brackets more than {MAX_NESTING} deep "
                                    f"(line {line})")
        elif first in _CLOSERS:
            depth = max(depth - 1, 0)
    return encoded


def check_reference_name(name: str) -> None:
    """A reference name is an import path: relative, '/'-separated, no '.' or '..' parts.

    Anything else could make protoc read outside the private directory it compiles in
    (protoc itself refuses such imports; this keeps them from being written at all).
    Raises InvalidSchema.
    """
    problem = None
    if not name or len(name) > 1024:
        problem = "must be 1 to 1024 characters long"
    elif any(ord(c) < 0x20 or c in "\\\x7f" or 0xD800 <= ord(c) <= 0xDFFF for c in name):
        problem = "may not contain control characters, backslashes or lone surrogates"
    elif name.startswith("/"):
        problem = "must be a relative path"
    elif any(part in ("", ".", "..") for part in name.split("/")):
        problem = "may not contain empty, '.' or '..' path components"
    if problem:
        raise InvalidSchema(f"reference name {name!r} {problem}")


@dataclass(frozen=True)
class CompiledSchema:
    """What protoc made of a schema and its references."""

    files: tuple[descriptor_pb2.FileDescriptorProto, ...]
    """Every file, each after the files it imports; the schema's own file is last."""
    sources: Mapping[str, str]
    """Source text by file name, for the schema and its references (not well-known files)."""

    @property
    def main(self) -> descriptor_pb2.FileDescriptorProto:
        return self.files[-1]


def compile_schema(text: str, references: Mapping[str, str], *, lenient: bool = False,
                   pool: ProtocPool | None = None) -> CompiledSchema:
    """Compile `text`, which may import each reference by its name. Raises InvalidSchema.

    `lenient` skips the size and nesting bounds (for schemas already in the log, which
    must load whatever their size; the worker process keeps a protoc crash contained).
    Blocks while protoc runs, at most COMPILE_TIMEOUT seconds plus the wait for a free
    worker.
    """
    files: list[tuple[str, bytes]] = []
    sources: dict[str, str] = {}
    for name, reference_text in references.items():
        check_reference_name(name)
        files.append((name, _encode(reference_text, f"reference {name!r}", lenient)))
        sources[name] = reference_text
    main_name = MAIN_FILE
    while main_name in sources:  # a reference may be named "default" too
        main_name += "_"
    files.append((main_name, _encode(text, "the schema", lenient)))
    sources[main_name] = text
    try:
        payload = (pool or default_pool()).compile(files)
    except CompileError as error:
        raise InvalidSchema(_readable(str(error), main_name)) from None
    try:
        descriptor_set = descriptor_pb2.FileDescriptorSet.FromString(payload)
    except DecodeError:
        raise InvalidSchema("the Protobuf compiler returned an unreadable descriptor set") from None
    compiled = tuple(descriptor_set.file)
    if not compiled or compiled[-1].name != main_name:
        raise InvalidSchema("the Protobuf compiler did not return the schema's descriptor")
    return CompiledSchema(compiled, sources)


def _encode(text: str, what: str, lenient: bool) -> bytes:
    if lenient:
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise InvalidSchema(f"{what} is not valid Unicode text: {error.reason}") from None
    return check_bounds(text, what)


_DIAGNOSTIC: Final = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<column>\d+): (?P<message>.*)$")
_MAX_REASONS: Final = 10


def _readable(diagnostics: str, main_name: str) -> str:
    """protoc's stderr as one message: error lines only, positions spelled out."""
    reasons: list[str] = []
    for line in diagnostics.splitlines():
        match = _DIAGNOSTIC.match(line)
        if match is None:
            # absl's log preamble and warnings; a diagnostic without position remains.
            if line and not line.startswith(("WARNING:", "W0000", "I0000")) and "warning:" not in line:
                reasons.append(line.strip())
            continue
        if match["message"].startswith("warning:"):
            continue
        where = "" if match["file"] == main_name else f"reference {match['file']!r} "
        reasons.append(f"{where}line {match['line']}, column {int(match['column'])}: {match['message']}")
    if not reasons:
        return "the Protobuf compiler refused the schema without saying why"
    more = len(reasons) - _MAX_REASONS
    text = "; ".join(dict.fromkeys(reasons[:_MAX_REASONS]))
    return text + (f"; and {more} more" if more > 0 else "")


# --- Worker processes ------------------------------------------------------------------


class _Worker:
    """One protoc worker process and its pipes. Used by one thread at a time."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-I", str(_WORKER_SCRIPT)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            bufsize=0, close_fds=True,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin = self.process.stdin
        self.stdout_fd = self.process.stdout.fileno()

    def compile(self, files: Sequence[tuple[str, bytes]], timeout: float) -> bytes:
        """Send one request and wait for its answer. Raises CompileError; on a crash or
        timeout the worker is dead afterwards (`alive()` is False)."""
        request = bytearray(_U32.pack(len(files)))
        for name, text in files:
            encoded = name.encode("utf-8")
            request += _U32.pack(len(encoded)) + encoded + _U32.pack(len(text)) + text
        deadline = time.monotonic() + timeout
        try:
            self.stdin.write(request)
            header = self._read(5, deadline)
            payload = self._read(_U32.unpack(header[1:])[0], deadline)
        except (BrokenPipeError, EOFError):
            self.kill()
            status = self.process.returncode
            how = f"signal {-status}" if status is not None and status < 0 else f"exit {status}"
            raise CompileError(f"the Protobuf compiler crashed on this schema ({how})") from None
        except TimeoutError:
            self.kill()
            raise CompileError(f"compiling the schema took longer than {timeout:g} s") from None
        if header[0] != 0:
            raise CompileError(payload.decode("utf-8", errors="replace"))
        return bytes(payload)

    def _read(self, size: int, deadline: float) -> bytes:
        chunks = bytearray()
        while len(chunks) < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self.stdout_fd], [], [], remaining)
            if not ready:
                raise TimeoutError
            chunk = os.read(self.stdout_fd, min(size - len(chunks), 1 << 20))
            if not chunk:
                raise EOFError
            chunks += chunk
        return bytes(chunks)

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self._close_pipes()

    def stop(self, timeout: float = 2.0) -> None:
        """Close stdin (the worker exits on EOF); kill it if it does not within `timeout`."""
        try:
            self.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._close_pipes()

    def _close_pipes(self) -> None:
        for pipe in (self.process.stdin, self.process.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass


class ProtocPool:
    """Up to `size` protoc worker processes, started on first use, shared by threads.

        pool = ProtocPool(size=2)
        descriptor_set_bytes = pool.compile([("a.proto", b"..."), ("default", b"...")])
        pool.close()

    `compile` blocks while a worker compiles (and while all workers are busy). A worker
    that crashes or times out is killed and replaced by a fresh one on the next call.
    After a fork the child starts its own workers and never touches its parent's.
    """

    def __init__(self, size: int = 2, timeout: float = COMPILE_TIMEOUT) -> None:
        self.size = size
        self.timeout = timeout
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._idle: queue.LifoQueue[_Worker] = queue.LifoQueue()
        self._started = 0
        self._closed = False

    def compile(self, files: Sequence[tuple[str, bytes]]) -> bytes:
        """A serialized FileDescriptorSet for the last of `files` and everything it imports.

        Raises CompileError with protoc's diagnostics, or if it crashed or timed out.
        """
        worker = self._acquire()
        try:
            return worker.compile(files, self.timeout)
        finally:
            self._release(worker)

    def _acquire(self) -> _Worker:
        if os.getpid() != self._pid:
            self._reset()
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        with self._lock:
            if self._closed:
                raise CompileError("the Protobuf compiler pool is closed")
            start = self._started < self.size
            if start:
                self._started += 1
        if start:
            try:
                return _Worker()
            except OSError as error:
                with self._lock:
                    self._started -= 1
                raise CompileError(f"cannot start the Protobuf compiler: {error}") from None
        try:
            return self._idle.get(timeout=self.timeout)
        except queue.Empty:
            raise CompileError("no Protobuf compiler became free in time") from None

    def _release(self, worker: _Worker) -> None:
        if worker.alive() and not self._closed:
            self._idle.put(worker)
            return
        if worker.alive():
            worker.stop()
        with self._lock:
            self._started -= 1

    def close(self) -> None:
        """Stop the idle workers; busy ones stop when their compile returns."""
        with self._lock:
            self._closed = True
        while True:
            try:
                worker = self._idle.get_nowait()
            except queue.Empty:
                return
            worker.stop()
            with self._lock:
                self._started -= 1


_default_pool: ProtocPool | None = None
_default_pool_lock = threading.Lock()


def default_pool() -> ProtocPool:
    """The process-wide pool the Protobuf schema type compiles with (two workers, the
    machine's core count being the useful limit for CPU-bound compiles)."""
    global _default_pool
    with _default_pool_lock:
        if _default_pool is None:
            _default_pool = ProtocPool(size=min(2, os.cpu_count() or 1))
            atexit.register(_default_pool.close)
        return _default_pool
