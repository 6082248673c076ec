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

Input is bounded before it reaches protoc (`check_bounds`): size, bracket nesting, the
number of declarations and the length of names, so hostile text is refused in time
linear in its size without ever starting the compiler. The bounds hold for every
compile, schemas read from the log included: they protect the compiler, and text past
them costs it tens of seconds whoever sent it.

What protoc says back is bounded too: its diagnostics are read from a pipe while it
runs, only the first MAX_DIAGNOSTIC_BYTES are kept, and past
DIAGNOSTICS_BEFORE_STOPPING the worker is stopped and the schema refused with them (an error repeating a long name per duplicate field otherwise
grew the server by 870 MB). A refusal is remembered for a while by the exact files
refused, so the lenient second parse the service makes of a refused schema does not
compile it again.

Each worker compiles in its own scratch directory, made by the pool and locked by it
and the worker for the worker's life (flock, inherited by the worker). Whoever sees the
worker end removes it: the pool (timeouts, crashes, kill -9 of the worker, close), the
worker (stdin closed because its parent died, SIGTERM), or, if both were killed at
once, the next pool to start, which removes scratch directories nobody holds locked.
"""
from __future__ import annotations

import atexit
import fcntl
import hashlib
import os
import queue
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Final

from cachetools import TTLCache
from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError

from registry.schema_types.base import InvalidSchema
from registry.schema_types.protobuf.custom_options import (
    compile_without_unknown_options,
    only_unknown_options,
)
from registry.schema_types.protobuf.imports import stand_ins
from registry.schema_types.protobuf.includes import INCLUDE_PATHS

MAIN_FILE: Final = "default"
"""The file name the schema itself compiles under: what Confluent names it in
`?format=serialized` (ProtobufSchema.DEFAULT_NAME)."""

MAX_SOURCE_BYTES: Final = 4 * 1024 * 1024
"""Schema plus references, UTF-8 encoded."""
MAX_NESTING: Final = 64
"""Brackets ({[(<) open at once. protoc itself refuses messages nested deeper than 32."""
MAX_TOKENS: Final = 200_000
"""Brackets, statements (;) and string literals in one file: ~65,000 fields and more."""
MAX_NAME_LENGTH: Final = 1024
"""Characters in one identifier (or number). protoc repeats names in its errors, once
per offending declaration: a 30,000-character name with 3,000 duplicate fields grew
the server by 870 MB reading them. No schema needs names this long."""
COMPILE_TIMEOUT: Final = 20.0
"""Seconds a single compile may take (the largest schemas within the bounds take ~1 s)."""
MAX_DIAGNOSTIC_BYTES: Final = 64 * 1024
"""protoc's diagnostics kept per compile: its first errors are what a user needs, and at
most _MAX_REASONS of them are reported. The rest is read and dropped."""
DIAGNOSTICS_BEFORE_STOPPING: Final = 1024 * 1024
"""protoc's diagnostics read in one compile before it is stopped and the schema refused:
more than any valid schema's warnings, and protoc takes ~0.5 s to write them; a flood of
errors (150,000 stray braces) otherwise kept it busy for seconds."""
_MAX_REASON_CHARS: Final = 2 * MAX_NAME_LENGTH + 500
"""One reported reason: a message of protoc's naming two names at most, and its position."""
REFUSALS_REMEMBERED: Final = 256
REFUSAL_MEMORY_SECONDS: Final = 300.0
"""How long a refusal is remembered: long enough for the service's second, lenient
parse of the same text; short enough that a compile that timed out under load is
tried again by a client's retry a few minutes later."""

_SCRATCH_LOCK: Final = "lock"
"""The file in each worker's scratch directory that the pool and the worker hold locked."""

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
    | (?<![A-Za-z0-9_])[A-Za-z0-9_]{%d,}
    """ % (MAX_NAME_LENGTH + 1),
    re.VERBOSE | re.DOTALL,
)
# The last alternative matches only names over the bound, and only from their first
# character (the lookbehind fails at once elsewhere in a word), so names within the
# bound cost the scan nothing more and no word is scanned more than once.
_OPENERS: Final = frozenset("{[(<")
_CLOSERS: Final = frozenset("}])>")


class CompileError(Exception):
    """protoc refused the files, crashed on them or ran out of time. The message says which.

    `cut_short`: protoc said more than MAX_DIAGNOSTIC_BYTES (and may have been stopped),
    so the message is the beginning of what it said."""

    def __init__(self, message: str, *, cut_short: bool = False) -> None:
        super().__init__(message)
        self.cut_short = cut_short


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
        if first.isalnum() or first == "_":  # only an over-long name matches so
            line = text.count("\n", 0, match.start()) + 1
            raise InvalidSchema(f"{what} has a name {len(match.group())} characters long "
                                f"(line {line}); at most {MAX_NAME_LENGTH} are accepted")
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
    """Every file, each after the files it imports; the schema's own file is last. Stand-ins
    for imported names no reference has (imports.py) are among them."""
    sources: Mapping[str, str]
    """Source text by file name, for the schema and its references (not well-known files
    or stand-ins)."""

    @property
    def main(self) -> descriptor_pb2.FileDescriptorProto:
        return self.files[-1]


def compile_schema(text: str, references: Mapping[str, str], *,
                   pool: ProtocPool | None = None) -> CompiledSchema:
    """Compile `text`, which may import each reference by its name, and whose imports of
    names no reference has resolve across all the references (imports.py). Raises
    InvalidSchema.

    Every file is checked against the bounds first (`check_bounds`): text past them is
    refused without starting the compiler. Blocks while protoc runs, at most
    COMPILE_TIMEOUT seconds in all plus the wait for a free worker.
    """
    files: list[tuple[str, bytes]] = []
    sources: dict[str, str] = {}
    for name, reference_text in references.items():
        check_reference_name(name)
        files.append((name, check_bounds(reference_text, f"reference {name!r}")))
        sources[name] = reference_text
    main_name = MAIN_FILE
    while main_name in sources:  # a reference may be named "default" too
        main_name += "_"
    encoded = check_bounds(text, "the schema")
    # Imports no reference is named for, resolved across all of them, as Confluent does
    # (imports.py). Stand-ins are compiled, not sources: they hold no definitions.
    for name, stand_in in stand_ins({**sources, main_name: text}, references).items():
        files.append((name, stand_in.encode("utf-8")))
    files.append((main_name, encoded))
    sources[main_name] = text
    pool = pool or default_pool()
    deadline = time.monotonic() + pool.timeout
    try:
        descriptor_set = _descriptor_set(pool.compile(files))
    except CompileError as error:
        # Custom options nothing defines are accepted, as Confluent accepts them. The
        # compiles that takes share the first one's time limit: a schema protoc needs
        # long for costs no more than the limit, unknown options or not.
        kept = None
        if not error.cut_short and only_unknown_options(str(error)):
            kept = compile_without_unknown_options(
                files, sources, partial(_compiled_or_none, pool, deadline))
        if kept is None:
            raise InvalidSchema(_readable(str(error), main_name, error.cut_short)) from None
        descriptor_set = kept
    compiled = tuple(descriptor_set.file)
    if not compiled or compiled[-1].name != main_name:
        raise InvalidSchema("the Protobuf compiler did not return the schema's descriptor")
    return CompiledSchema(compiled, sources)


def _descriptor_set(payload: bytes) -> descriptor_pb2.FileDescriptorSet:
    try:
        return descriptor_pb2.FileDescriptorSet.FromString(payload)
    except DecodeError:
        raise InvalidSchema("the Protobuf compiler returned an unreadable descriptor set") from None


def _compiled_or_none(pool: ProtocPool, deadline: float, files: list[tuple[str, bytes]]
                      ) -> descriptor_pb2.FileDescriptorSet | None:
    """`files` compiled by `deadline` (time.monotonic), or None if protoc refused them,
    crashed or ran out of time."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return None
    try:
        return _descriptor_set(pool.compile(files, remaining))
    except CompileError:
        return None


_DIAGNOSTIC: Final = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<column>\d+): (?P<message>.*)$")
_MAX_REASONS: Final = 10


def _readable(diagnostics: str, main_name: str, cut_short: bool = False) -> str:
    """protoc's stderr as one message: error lines only, positions spelled out, at most
    _MAX_REASONS reasons of at most _MAX_REASON_CHARS each."""
    lines = diagnostics.splitlines()
    if cut_short and lines:
        lines.pop()  # most likely cut mid-line
    reasons: list[str] = []
    for line in lines:
        match = _DIAGNOSTIC.match(line)
        if match is None:
            # absl's log preamble and warnings; a diagnostic without position remains.
            if line and not line.startswith(("WARNING:", "W0000", "I0000")) and "warning:" not in line:
                reasons.append(_shortened(line.strip()))
            continue
        if match["message"].startswith("warning:"):
            continue
        where = "" if match["file"] == main_name else f"reference {match['file']!r} "
        reasons.append(_shortened(f"{where}line {match['line']}, column {int(match['column'])}: "
                                  f"{match['message']}"))
    if not reasons:
        if cut_short:
            return "the Protobuf compiler was stopped after too many diagnostics"
        return "the Protobuf compiler refused the schema without saying why"
    more = len(reasons) - _MAX_REASONS
    text = "; ".join(dict.fromkeys(reasons[:_MAX_REASONS]))
    if cut_short:
        return text + (f"; and more than {more} more" if more > 0 else "; and more")
    return text + (f"; and {more} more" if more > 0 else "")


def _shortened(reason: str) -> str:
    if len(reason) <= _MAX_REASON_CHARS:
        return reason
    return reason[:_MAX_REASON_CHARS] + f"... ({len(reason) - _MAX_REASON_CHARS} characters more)"


# --- Worker processes ------------------------------------------------------------------


def _request(files: Sequence[tuple[str, bytes]]) -> bytes:
    """The request for a worker (see protoc_worker.py for the protocol)."""
    request = bytearray(_U32.pack(len(files)))
    for name, text in files:
        encoded = name.encode("utf-8")
        request += _U32.pack(len(encoded)) + encoded + _U32.pack(len(text)) + text
    return bytes(request)


def default_scratch() -> str:
    """Where workers write their files: memory (tmpfs) where there is one, since a
    directory on disk costs ~10 ms to create and remove; else the system default."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK):
        return shm
    return tempfile.gettempdir()


def sweep_orphans(scratch: str) -> None:
    """Remove the scratch directories in `scratch` that no live worker or pool holds
    locked: left by a server killed together with its workers. Directories without our
    lock file (another program's, or being set up) are left alone."""
    try:
        entries = list(os.scandir(scratch))
    except OSError:
        return
    uid = os.getuid()
    for entry in entries:
        if not entry.name.startswith("protoc-"):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != uid:
                continue
            lock = os.open(os.path.join(entry.path, _SCRATCH_LOCK), os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(lock)  # held: its worker, or its pool, is alive
            continue
        try:
            shutil.rmtree(entry.path, ignore_errors=True)
        finally:
            os.close(lock)


class _Worker:
    """One protoc worker process, its pipes and its scratch directory. Used by one thread
    at a time. Its stderr is a pipe read during each compile (see protoc_worker.py)."""

    def __init__(self, scratch: str) -> None:
        # Named after this process, so that a person (or a test) can tell whose it is.
        self.scratch = tempfile.mkdtemp(prefix=f"protoc-{os.getpid()}-", dir=scratch)
        self._lock = -1
        try:
            self._lock = os.open(os.path.join(self.scratch, _SCRATCH_LOCK),
                                 os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            fcntl.flock(self._lock, fcntl.LOCK_EX)
            # The worker inherits the locked descriptor: the lock lasts while either lives.
            self.process = subprocess.Popen(
                [sys.executable, "-I", str(_WORKER_SCRIPT), self.scratch, *map(str, INCLUDE_PATHS)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                bufsize=0, close_fds=True, pass_fds=(self._lock,),
            )
        except BaseException:
            self._remove_scratch()
            raise
        assert self.process.stdin and self.process.stdout and self.process.stderr
        self.stdin = self.process.stdin
        self.stdout_fd = self.process.stdout.fileno()
        self.stderr_fd = self.process.stderr.fileno()
        os.set_blocking(self.stderr_fd, False)
        self._stderr_closed = False
        self._diagnostics_seen = 0  # bytes read from stderr this compile, kept or not
        self._sources_prefix = os.fsencode(os.path.join(self.scratch, "src")) + b"/"

    def compile(self, request: bytes, timeout: float) -> bytes:
        """Send one request and wait for its answer. Raises CompileError; on a crash, a
        timeout or too many diagnostics the worker is dead afterwards (`alive()` is False)."""
        deadline = time.monotonic() + timeout
        self._read_diagnostics(bytearray())  # what it wrote between compiles is no one's
        diagnostics = bytearray()
        self._diagnostics_seen = 0
        try:
            self.stdin.write(request)
            header = self._read(5, deadline, diagnostics)
            payload = self._read(_U32.unpack(header[1:])[0], deadline, diagnostics)
        except (BrokenPipeError, EOFError):
            self.kill()
            status = self.process.returncode
            how = f"signal {-status}" if status is not None and status < 0 else f"exit {status}"
            raise CompileError(f"the Protobuf compiler crashed on this schema ({how})") from None
        except TimeoutError:
            self.kill()
            raise CompileError(f"compiling the schema took longer than {timeout:g} s") from None
        except _TooManyDiagnostics:
            self.kill()
            raise CompileError(self._text(diagnostics), cut_short=True) from None
        if header[0] != 0:
            # Everything protoc wrote came before the answer, so it is in the pipe now.
            self._read_diagnostics(diagnostics)
            raise CompileError(self._text(diagnostics + payload),
                               cut_short=self._diagnostics_seen > len(diagnostics))
        return payload

    def _read(self, size: int, deadline: float, diagnostics: bytearray) -> bytes:
        """`size` bytes of the answer on stdout, reading diagnostics from stderr meanwhile
        (protoc would block on a full stderr pipe otherwise). Raises TimeoutError,
        EOFError, or _TooManyDiagnostics past DIAGNOSTICS_BEFORE_STOPPING."""
        chunks = bytearray()
        watched = [self.stdout_fd, self.stderr_fd]
        while len(chunks) < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select(watched, [], [], remaining)
            if not ready:
                raise TimeoutError
            if self.stderr_fd in ready:
                self._read_diagnostics(diagnostics)
                if self._diagnostics_seen > DIAGNOSTICS_BEFORE_STOPPING:
                    raise _TooManyDiagnostics
                if self._stderr_closed:
                    watched = [self.stdout_fd]
            if self.stdout_fd in ready:
                chunk = os.read(self.stdout_fd, min(size - len(chunks), 1 << 20))
                if not chunk:
                    raise EOFError
                chunks += chunk
        return bytes(chunks)

    def _read_diagnostics(self, into: bytearray) -> None:
        """Whatever stderr holds now, appended to `into` up to MAX_DIAGNOSTIC_BYTES (the
        rest is read and dropped). Never blocks."""
        while True:
            try:
                chunk = os.read(self.stderr_fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self._stderr_closed = True
                return
            self._diagnostics_seen += len(chunk)
            room = MAX_DIAGNOSTIC_BYTES - len(into)
            if room > 0:
                into += chunk[:room]

    def _text(self, diagnostics: bytes) -> str:
        return diagnostics.replace(self._sources_prefix, b"").decode("utf-8", errors="replace")

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self._close_pipes()
        self._remove_scratch()

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
        self._remove_scratch()

    def _close_pipes(self) -> None:
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass

    def _remove_scratch(self) -> None:
        """Remove the scratch directory (the worker is gone), then give up the lock."""
        shutil.rmtree(self.scratch, ignore_errors=True)
        if self._lock >= 0:
            os.close(self._lock)
            self._lock = -1


class _TooManyDiagnostics(Exception):
    """protoc said more than DIAGNOSTICS_BEFORE_STOPPING during one compile."""


class ProtocPool:
    """Up to `size` protoc worker processes, started on first use, shared by threads.

        pool = ProtocPool(size=2)
        descriptor_set_bytes = pool.compile([("a.proto", b"..."), ("default", b"...")])
        pool.close()

    `compile` blocks while a worker compiles (and while all workers are busy). A worker
    that crashes, times out or says too much is killed, its scratch directory removed,
    and a fresh one started on the next call. After a fork the child starts its own
    workers and never touches its parent's. Workers write in a directory of their own
    under `scratch` (default: /dev/shm where there is one); the first worker a pool
    starts removes what dead ones left there (`sweep_orphans`).
    """

    def __init__(self, size: int = 2, timeout: float = COMPILE_TIMEOUT,
                 scratch: str | None = None) -> None:
        self.size = size
        self.timeout = timeout
        self.scratch = scratch or default_scratch()
        self._swept = False
        # Refusals by the digest of the request refused: protoc's verdict on the same
        # bytes is the same (cachetools' TTLCache; not thread-safe, hence the lock).
        self._refusals: TTLCache[bytes, tuple[str, bool]] = TTLCache(
            maxsize=REFUSALS_REMEMBERED, ttl=REFUSAL_MEMORY_SECONDS)
        self._refusals_lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._idle: queue.LifoQueue[_Worker] = queue.LifoQueue()
        self._started = 0
        self._closed = False

    def compile(self, files: Sequence[tuple[str, bytes]], timeout: float | None = None) -> bytes:
        """A serialized FileDescriptorSet for the last of `files` and everything it imports.

        Raises CompileError with protoc's diagnostics, or if it crashed or took longer than
        `timeout` seconds (default: the pool's); the same files refused lately are
        refused again without compiling them.
        """
        request = _request(files)
        key = hashlib.sha256(request).digest()
        with self._refusals_lock:
            refused = self._refusals.get(key)
        if refused is not None:
            raise CompileError(refused[0], cut_short=refused[1])
        worker = self._acquire()
        try:
            return worker.compile(request, self.timeout if timeout is None else timeout)
        except CompileError as error:
            with self._refusals_lock:
                self._refusals[key] = (str(error), error.cut_short)
            raise
        finally:
            self._release(worker)

    def _acquire(self) -> _Worker:
        if os.getpid() != self._pid:
            self._reset()
        while True:
            try:
                idle = self._idle.get_nowait()
            except queue.Empty:
                break
            if idle.alive():
                return idle
            self._release(idle)  # died idle (killed from outside): cleaned up, not used
        with self._lock:
            if self._closed:
                raise CompileError("the Protobuf compiler pool is closed")
            start = self._started < self.size
            if start:
                self._started += 1
            sweep, self._swept = not self._swept, True
        if start:
            try:
                if sweep:
                    sweep_orphans(self.scratch)
                return _Worker(self.scratch)
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
        else:
            worker.kill()  # reaps it and removes its scratch directory, whatever ended it
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
