"""Bounded work for Protobuf (issue 47): every check costs time and memory bounded by the
size of what it is given, hostile input is refused early with a readable reason, and the
compiler's helper processes leave nothing behind however they end.

Timings are asserted only as generous bounds (2 cores); what each test protects is the
correctness assertion beside them.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from registry import errors
from registry.node import build_node
from registry.schema_types import CheckTooCostly, InvalidSchema
from registry.schema_types.protobuf import PROTOBUF, ProtobufType, compatibility, compiler
from registry.schema_types.protobuf import schema as protobuf_schema
from registry.schema_types.protobuf.compiler import CompileError, ProtocPool
from registry.service import NewSchema, RegisterRequest
from registry.settings import load_settings
from store.memory_log import MemoryLog
from tests.unit.polling import wait_until


# Time bounds are generous: these run on 2 cores, beside another suite at times (`make
# test-pythons` runs two at once), where 2 s was missed by the fixed code (2.6 s); the
# code before the fixes took 6-20 s on each, which this still catches.
BOUND_SECONDS = 5.0

def nested_fan_out(depth: int, fan_out: int, leaf_extra: str = "") -> str:
    """Each message holds `fan_out` fields of the message below it, `depth` levels deep:
    `fan_out ** depth` paths to the leaf in about a kilobyte."""
    parts = ['syntax = "proto3";', "package p;", f"message M0 {{ int32 a = 1; {leaf_extra} }}"]
    for level in range(1, depth + 1):
        fields = " ".join(f"M{level - 1} f{i} = {i};" for i in range(1, fan_out + 1))
        parts.append(f"message M{level} {{ {fields} }}")
    return "\n".join(parts)


# --- Compatibility: each pair of message types compared once, within a budget ----------


def test_compatibility_of_a_deep_fan_out_is_linear_not_exponential():
    old = PROTOBUF.parse(nested_fan_out(7, 12), {})
    new = PROTOBUF.parse(nested_fan_out(7, 12, "string b = 2;"), {})
    started = time.perf_counter()
    backward, forward = new.read_errors(old), old.read_errors(new)
    elapsed = time.perf_counter() - started
    assert backward == [] and forward == [], "a field added at the leaf is compatible both ways"
    assert elapsed < BOUND_SECONDS, f"12**7 paths to one changed leaf must not be walked one by one ({elapsed:.1f} s)"


def test_a_leaf_difference_is_reported_once_under_its_own_type():
    old = PROTOBUF.parse(nested_fan_out(7, 12), {})
    new = PROTOBUF.parse(nested_fan_out(7, 12).replace("int32 a = 1;", "string a = 1;"), {})
    differences = compatibility.compare(old, new)
    leaf = [d for d in differences if d.type is compatibility.DifferenceType.FIELD_SCALAR_KIND_CHANGED]
    assert [d.path for d in leaf] == ["#/M0/1"], "the leaf's change is named once, at its type"
    named = [d for d in differences if d.type is compatibility.DifferenceType.FIELD_NAMED_TYPE_CHANGED]
    assert len(named) == 7 * 12, "every field of every level that reaches the leaf is named once"
    assert len(differences) == len(set(differences)), "no difference is reported twice"


def test_a_spent_budget_ends_the_comparison():
    old = PROTOBUF.parse(nested_fan_out(3, 4), {})
    new = PROTOBUF.parse(nested_fan_out(3, 4, "string b = 2;"), {})
    with pytest.raises(compatibility.TooMuchWork):
        compatibility.compare(old, new, budget=5)
    assert compatibility.compare(old, new, budget=1_000) == compatibility.compare(old, new), \
        "a budget that suffices changes nothing"


def test_a_spent_budget_is_an_incompatibility_that_says_why(monkeypatch):
    monkeypatch.setattr(protobuf_schema, "MIN_WORK", 0)
    monkeypatch.setattr(protobuf_schema, "WORK_PER_ELEMENT", 0)
    old = PROTOBUF.parse(nested_fan_out(2, 2), {})
    new = PROTOBUF.parse(nested_fan_out(2, 2, "string b = 2;"), {})
    with pytest.raises(CheckTooCostly, match="deciding compatibility would take more than"):
        new.read_errors(old)  # refused with a reason (422 from the service), never a 500 or a hang


# --- Text over the bounds never reaches the compiler; a refusal is compiled once --------

SCRATCH = Path("/dev/shm")


@pytest.fixture
def pool() -> Iterator[ProtocPool]:
    the_pool = ProtocPool(size=1)
    yield the_pool
    the_pool.close()


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A private directory in /dev/shm for a pool's workers: what is listed in it before
    and after is this test's alone, whatever else runs on the machine."""
    if not SCRATCH.is_dir():
        pytest.skip("no /dev/shm here: the issue is about memory it leaks")
    directory = Path(tempfile.mkdtemp(prefix="pb-bounded-test-", dir=SCRATCH))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def listing(directory: Path) -> set[str]:
    return set(os.listdir(directory))


@pytest.mark.parametrize("what, text", [
    ("1.5 MB of closing braces", "}" * 1_500_000),
    ("nesting past the bound", 'syntax = "proto3";' + "message M {" * 1_000 + "}" * 1_000),
])
@pytest.mark.parametrize("lenient", [False, True])
def test_over_bound_text_is_refused_before_any_compile(pool, what, text, lenient):
    started = time.perf_counter()
    with pytest.raises(InvalidSchema):
        ProtobufType(pool).parse(text, {}, lenient=lenient)
    elapsed = time.perf_counter() - started
    assert pool._started == 0, f"{what}: refused by the bounds, leniently too, without starting protoc"
    assert elapsed < BOUND_SECONDS, f"{what}: refused in time linear in its size ({elapsed:.1f} s)"


def test_a_refused_schema_is_compiled_once(pool, monkeypatch):
    """The service parses a refused schema again leniently (is it stored already?): the
    compiler's verdict on the same files is remembered, not asked for twice."""
    compiles: list[int] = []
    original = compiler._Worker.compile
    monkeypatch.setattr(compiler._Worker, "compile",
                        lambda self, *args: compiles.append(1) or original(self, *args))
    bad = 'syntax = "proto3"; message M { Missing a = 1; }'
    reasons = []
    for lenient in (False, True):
        with pytest.raises(InvalidSchema) as refused:
            ProtobufType(pool).parse(bad, {}, lenient=lenient)
        reasons.append(str(refused.value))
    assert reasons[0] == reasons[1] and '"Missing" is not defined' in reasons[0], "the same reason both times"
    assert len(compiles) == 1, "one compile for both parses of the same refused text"


# --- Names and diagnostics: no amplification --------------------------------------------


def test_an_over_long_name_is_refused_before_the_compiler(pool):
    name = "N" * 30_000
    fields = " ".join(f"int32 f{i} = 1;" for i in range(3_000))
    text = f'syntax = "proto3"; message {name} {{ {fields} }}'
    started = time.perf_counter()
    with pytest.raises(InvalidSchema, match="name 30000 characters long"):
        ProtobufType(pool).parse(text, {})
    assert time.perf_counter() - started < BOUND_SECONDS, "refused in one pass over the text"
    assert pool._started == 0, "a name the compiler would repeat in every error never reaches it"


@pytest.mark.parametrize("what, text", [
    ("150,000 stray braces (within the bounds)", "}" * 150_000),
    ("3,000 duplicates named 10 kB deep", 'syntax = "proto3";'
     + "".join(f" message {chr(65 + level) * 1_000} {{" for level in range(10))
     + " ".join(f"int32 f{i} = 1;" for i in range(3_000)) + " }" * 10),
])
def test_diagnostics_read_back_are_bounded(pool, what, text):
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(InvalidSchema) as refused:
            ProtobufType(pool).parse(text, {})
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < len(text) * 4 + 4_000_000, \
        f"{what}: the compiler's megabytes of errors are not read into the server ({peak >> 20} MiB)"
    assert len(str(refused.value)) < 40_000, f"{what}: the reason is a bounded excerpt"
    assert "and more" in str(refused.value), f"{what}: the reason says there were more errors"
    assert elapsed < BOUND_SECONDS, f"{what}: the compiler is stopped once it has said enough ({elapsed:.1f} s)"
    assert ProtobufType(pool).parse('syntax = "proto3"; message M {}', {}), "the pool compiles again"


# --- Helper processes leave nothing behind ---------------------------------------------

SLOW = [("default", ('syntax = "proto3"; message M {'
                     + "".join(f"int32 f{i} = {i + 1};" for i in range(120_000)) + "}").encode())]
"""Within no bound (sent to the pool directly) and slow to compile: a second or more."""


def test_a_timed_out_compile_leaves_nothing_in_dev_shm(scratch):
    pool = ProtocPool(size=1, timeout=0.2, scratch=str(scratch))
    try:
        with pytest.raises(CompileError, match="longer than"):
            pool.compile(SLOW)
        assert listing(scratch) == set(), "the killed worker's scratch directory is gone"
    finally:
        pool.close()


def test_a_worker_killed_mid_compile_leaves_nothing_in_dev_shm(scratch, monkeypatch):
    pool = ProtocPool(size=1, scratch=str(scratch))
    busy: list[compiler._Worker] = []
    original = compiler._Worker.compile
    monkeypatch.setattr(compiler._Worker, "compile",
                        lambda self, *args: busy.append(self) or original(self, *args))
    outcome: list[BaseException] = []

    def compile_slowly() -> None:
        try:
            pool.compile(SLOW)
        except CompileError as error:
            outcome.append(error)

    thread = threading.Thread(target=compile_slowly)
    try:
        thread.start()
        wait_until(lambda: busy, "the compile started")
        assert listing(scratch), "a live worker has its scratch directory"
        os.kill(busy[0].process.pid, signal.SIGKILL)
        thread.join(10)
        assert outcome and "crashed" in str(outcome[0]), "the compile is refused as a crash"
        assert listing(scratch) == set(), "kill -9 of the worker leaves nothing behind"
    finally:
        thread.join(10)
        pool.close()


def test_closing_the_pool_leaves_nothing_in_dev_shm(scratch):
    pool = ProtocPool(size=2, scratch=str(scratch))
    pool.compile([("default", b'syntax = "proto3"; message M {}')])
    assert listing(scratch), "the idle worker keeps its scratch directory"
    pool.close()
    assert listing(scratch) == set(), "server shutdown leaves nothing behind"


SERVER = """
import os, signal, sys
sys.path.insert(0, {root!r})
from registry.schema_types.protobuf.compiler import ProtocPool
pool = ProtocPool(size=1, scratch={scratch!r})
pool.compile([("default", b'syntax = "proto3"; message M {{}}')])
worker = pool._idle.get_nowait()
if {kill_worker}:
    os.kill(worker.process.pid, signal.SIGKILL)
    worker.process.wait()
print(worker.process.pid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def run_killed_server(scratch: Path, kill_worker: bool) -> None:
    """A process that compiles once, then is killed with -9 (its worker first, if asked)."""
    code = SERVER.format(root=str(Path(__file__).resolve().parents[5]), scratch=str(scratch),
                         kill_worker=kill_worker)
    server = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = server.communicate(timeout=60)
    assert server.returncode == -signal.SIGKILL and out.strip(), err.decode()


def test_a_killed_server_leaves_nothing_in_dev_shm(scratch):
    """kill -9 of the server: its worker reads the end of its input and cleans up."""
    run_killed_server(scratch, kill_worker=False)
    wait_until(lambda: listing(scratch) == set(), "the orphaned worker removes its scratch directory")


def test_what_a_server_and_worker_both_killed_leave_is_swept_by_the_next_pool(scratch):
    run_killed_server(scratch, kill_worker=True)
    orphans = listing(scratch)
    assert orphans, "nobody was left to clean up (what this test is about)"
    pool = ProtocPool(size=1, scratch=str(scratch))
    try:
        pool.compile([("default", b'syntax = "proto3"; message M {}')])
        assert not orphans & listing(scratch), "a new pool removes scratch no live worker holds"
    finally:
        pool.close()


# --- Through the service: the issue's requests -------------------------------------------


@pytest.fixture
def node():
    the_node = build_node(load_settings(environ={}), MemoryLog())
    assert the_node.writer.wait_ready(5)
    yield the_node
    the_node.close()


def test_registering_over_a_deep_fan_out_is_answered_at_once(node):
    def register(text: str) -> int:
        return node.service.register("deep", RegisterRequest(NewSchema(text, schema_type="PROTOBUF"))).version

    assert register(nested_fan_out(7, 12)) == 1
    started = time.perf_counter()
    assert register(nested_fan_out(7, 12, "string b = 2;")) == 2, "a field added at the leaf is BACKWARD compatible"
    with pytest.raises(errors.IncompatibleSchema):
        register(nested_fan_out(7, 12, "string b = 2;").replace("int32 a = 1;", "string a = 1;"))
    assert time.perf_counter() - started < BOUND_SECONDS, "both checks are linear in the schemas' sizes"


def test_over_bound_text_is_a_422_at_once_through_the_service(node):
    started = time.perf_counter()
    with pytest.raises(errors.InvalidSchema) as refused:
        node.service.register("braces", RegisterRequest(NewSchema("}" * 1_500_000, schema_type="PROTOBUF")))
    assert refused.value.http_status == 422, "refused as an invalid schema"
    assert time.perf_counter() - started < BOUND_SECONDS, "without the compiler's 20 s (the lenient retry is bounded too)"
