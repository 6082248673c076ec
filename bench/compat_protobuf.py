"""Protobuf compatibility-check and parse time for a 200-field message, against Avro's
checker on the equivalent 200-field record and protoc's own compile time.

Figures, each the median of --runs timed runs (the paths interleaved run by run):
  check    `new.read_errors(old)` on parsed schemas: a compatible change (a field added,
           one renamed, one int32 -> int64) and an incompatible one (int32 -> string);
           Avro's `read_errors` on the same changes to an equivalent record. Timed
           cold (each schema's per-message field tables built, as for a newly parsed
           schema) and again with the tables cached (a stored version the service
           keeps parsed).
  parse    `PROTOBUF.parse` (protoc in a worker process, then the canonical and
           normalized texts), against protoc compiling the same file in this process
           (`grpc_tools` run_main to a descriptor set on tmpfs: the compiler alone) and
           `AVRO.parse` of the record.

    .venv/bin/python bench/compat_protobuf.py [--runs 15]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import grpc_tools  # noqa: E402
from grpc_tools import _protoc_compiler  # noqa: E402

from registry.schema_types.avro import AVRO  # noqa: E402
from registry.schema_types.protobuf import PROTOBUF  # noqa: E402

FIELDS = 200
PROTO_TYPES = ["int32", "int64", "string", "bool", "double", "bytes", "uint32", "float"]
AVRO_TYPES = {"int32": "int", "int64": "long", "string": "string", "bool": "boolean",
              "double": "double", "bytes": "bytes", "uint32": "int", "float": "float"}


def proto(fields: list[tuple[str, str, int]]) -> str:
    body = "".join(f"  {kind} {name} = {number};\n" for kind, name, number in fields)
    return f'syntax = "proto3";\npackage bench;\n\nmessage Wide {{\n{body}}}\n'


def avro(fields: list[tuple[str, str, int]]) -> str:
    return json.dumps({"type": "record", "name": "Wide", "namespace": "bench", "fields": [
        {"name": name, "type": AVRO_TYPES[kind], "default": "" if kind in ("string", "bytes") else
         (False if kind == "bool" else 0)} for kind, name, _ in fields]})


def variants() -> tuple[list, list, list]:
    base = [(PROTO_TYPES[i % len(PROTO_TYPES)], f"f{i}", i + 1) for i in range(FIELDS)]
    compatible = list(base) + [("string", "added", FIELDS + 1)]
    compatible[0] = ("int64", "f0", 1)           # int32 -> int64
    compatible[2] = ("string", "renamed", 3)     # a rename (Avro: drop + add with default)
    incompatible = list(base)
    incompatible[0] = ("string", "f0", 1)        # int32 -> string
    return base, compatible, incompatible


def median_seconds(action: Callable[[], object], loops: int, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(loops):
            action()
        samples.append((time.perf_counter() - start) / loops)
    return statistics.median(samples)


def protoc_in_process(text: str) -> Callable[[], None]:
    """protoc compiling `text` in this process, as cheaply as it can be asked to."""
    scratch = "/dev/shm" if os.path.isdir("/dev/shm") else None
    work = tempfile.mkdtemp(dir=scratch)
    Path(work, "wide.proto").write_text(text)
    output = os.path.join(work, "out.pb")
    args = [b"protoc", b"-I" + work.encode(), b"--include_source_info",
            b"--descriptor_set_out=" + output.encode(), b"wide.proto"]

    def run() -> None:
        if _protoc_compiler.run_main(args) != 0:
            raise RuntimeError("protoc failed")
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    base, compatible, incompatible = variants()
    p_old, p_ok, p_bad = (PROTOBUF.parse(proto(f), {}) for f in (base, compatible, incompatible))
    a_old, a_ok, a_bad = (AVRO.parse(avro(f), {}) for f in (base, compatible, incompatible))
    assert p_ok.read_errors(p_old) == [] and p_bad.read_errors(p_old), "protobuf verdicts"
    assert a_ok.read_errors(a_old) == [] and a_bad.read_errors(a_old), "avro verdicts"
    print(f"grpcio-tools {grpc_tools.__name__} protoc; {FIELDS}-field message; median of {runs} runs")

    def cold(new, old):
        """A check on schemas never compared before: their field tables are built first."""
        def run():
            new.compat_tables.clear()
            old.compat_tables.clear()
            return new.read_errors(old)
        return run

    rows = [
        ("check, compatible", cold(p_ok, p_old), lambda: a_ok.read_errors(a_old), 200),
        ("check, incompatible", cold(p_bad, p_old), lambda: a_bad.read_errors(a_old), 200),
        ("  again (tables cached)", lambda: p_ok.read_errors(p_old), lambda: a_ok.read_errors(a_old), 200),
    ]
    print(f"{'':24}{'protobuf':>12}{'avro':>12}{'ratio':>8}")
    for name, ours, reference, loops in rows:
        ours_s = median_seconds(ours, loops, runs)
        ref_s = median_seconds(reference, loops, runs)
        print(f"{name:24}{ours_s * 1e6:>10.0f}us{ref_s * 1e6:>10.0f}us{ours_s / ref_s:>7.2f}x")

    text = proto(base)
    parse = median_seconds(lambda: PROTOBUF.parse(text, {}), 20, runs)
    compile_only = median_seconds(protoc_in_process(text), 20, runs)
    avro_text = avro(base)
    avro_parse = median_seconds(lambda: AVRO.parse(avro_text, {}), 20, runs)
    print(f"{'parse':24}{'ours':>12}{'protoc':>12}{'ratio':>8}")
    print(f"{'protobuf parse':24}{parse * 1e3:>10.2f}ms{compile_only * 1e3:>10.2f}ms"
          f"{parse / compile_only:>7.2f}x   (protoc in-process, compile only)")
    print(f"{'avro parse (reference)':24}{avro_parse * 1e3:>10.2f}ms{'':>12}"
          f"{parse / avro_parse:>7.2f}x   (protobuf parse / avro parse)")


if __name__ == "__main__":
    main()
