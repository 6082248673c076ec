"""JSON Schema compatibility check time for a 200-field schema, against references.

Measured, all in this process, each the median of --runs rounds (paths interleaved):
  (a) ours, compatible: v2 adds an optional property to v1's closed content model
      (`v2.read_errors(v1)`, BACKWARD), 200 fields of mixed types;
  (b) ours, incompatible: v2 changes 20 of the 200 field types;
  (c) reference: our Avro checker on an equivalent 200-field record (v2 adds a field
      with a default), the check the registry already makes for Avro;
  (d) reference: `jsonschema` validating one 200-field instance against v1.
Parsing is done once beforehand (the service caches parsed schemas); parse time is
printed separately. Figures are CPU seconds of this process per check.

    .venv/bin/python bench/compat_json.py [--runs 15] [--count 200]
"""
from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from registry.schema_types.avro import AVRO  # noqa: E402
from registry.schema_types.json_schema import JSON  # noqa: E402

FIELDS = 200
KINDS = [
    ({"type": "string", "maxLength": 64}, "string", "x"),
    ({"type": "integer", "minimum": 0}, "long", 7),
    ({"type": "number"}, "double", 1.5),
    ({"type": "boolean"}, "boolean", True),
    ({"type": ["string", "null"]}, ["null", "string"], None),
    ({"type": "array", "items": {"type": "string"}}, {"type": "array", "items": "string"}, ["a"]),
    ({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
      "additionalProperties": False}, {"type": "record", "name": "Inner{i}", "fields": [
          {"name": "a", "type": "string"}, {"name": "b", "type": "long"}]}, {"a": "x", "b": 1}),
    ({"enum": ["RED", "GREEN", "BLUE"]}, {"type": "enum", "name": "Color{i}",
                                          "symbols": ["RED", "GREEN", "BLUE"]}, "RED"),
]


def json_schema(fields: int, extra: bool = False, changed: int = 0) -> dict[str, Any]:
    properties = {}
    for i in range(fields):
        schema = json.loads(json.dumps(KINDS[i % len(KINDS)][0]))
        if i < changed * (fields // max(changed, 1)) and i % (fields // max(changed, 1)) == 0:
            schema = {"type": "boolean"} if schema.get("type") != "boolean" else {"type": "string"}
        properties[f"field{i}"] = schema
    if extra:
        properties["added"] = {"type": "string"}
    return {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Wide", "type": "object",
            "properties": properties, "required": [f"field{i}" for i in range(0, fields, 2)],
            "additionalProperties": False}


def avro_schema(fields: int, extra: bool = False) -> dict[str, Any]:
    out = []
    for i in range(fields):
        avro = json.loads(json.dumps(KINDS[i % len(KINDS)][1]).replace("{i}", str(i)))
        out.append({"name": f"field{i}", "type": avro})
    if extra:
        out.append({"name": "added", "type": ["null", "string"], "default": None})
    return {"type": "record", "name": "Wide", "fields": out}


def instance(fields: int) -> dict[str, Any]:
    return {f"field{i}": KINDS[i % len(KINDS)][2] for i in range(fields)}


def cpu_seconds(paths: dict[str, Callable[[], Any]], count: int, runs: int) -> dict[str, float]:
    for fn in paths.values():
        fn()
    times: dict[str, list[float]] = {key: [] for key in paths}
    for _ in range(runs):
        for key, fn in paths.items():
            gc.collect()
            start = time.process_time()
            for _ in range(count):
                fn()
            times[key].append((time.process_time() - start) / count)
    return {key: statistics.median(values) for key, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--count", type=int, default=200, help="checks per timed run")
    args = parser.parse_args()

    v1_text = json.dumps(json_schema(FIELDS))
    start = time.process_time()
    v1 = JSON.parse(v1_text, {})
    parse_strict = time.process_time() - start
    start = time.process_time()
    JSON.parse(v1_text, {}, lenient=True)
    parse_lenient = time.process_time() - start
    v2_ok = JSON.parse(json.dumps(json_schema(FIELDS, extra=True)), {})
    v2_bad = JSON.parse(json.dumps(json_schema(FIELDS, changed=20)), {})
    a1 = AVRO.parse(json.dumps(avro_schema(FIELDS)), {})
    a2 = AVRO.parse(json.dumps(avro_schema(FIELDS, extra=True)), {})
    validator = v1.validator()
    datum = instance(FIELDS)

    assert v2_ok.read_errors(v1) == [], "the compatible variant must be compatible"
    bad_reasons = v2_bad.read_errors(v1)
    assert len(bad_reasons) == 20, bad_reasons
    assert a2.read_errors(a1) == [], "the Avro reference must be compatible"
    assert validator.is_valid(datum), "the reference instance must be valid"

    paths = {
        "ours: JSON compatible": lambda: v2_ok.read_errors(v1),
        "ours: JSON incompatible (20 reasons)": lambda: v2_bad.read_errors(v1),
        "reference: our Avro checker": lambda: a2.read_errors(a1),
        "reference: jsonschema validates 1 instance": lambda: validator.is_valid(datum),
    }
    figures = cpu_seconds(paths, args.count, args.runs)
    avro = figures["reference: our Avro checker"]
    validate = figures["reference: jsonschema validates 1 instance"]
    print(f"200-field schema; median of {args.runs} runs x {args.count} checks, CPU time per check")
    for name, seconds in figures.items():
        print(f"  {name:45s} {seconds * 1e6:9.1f} us   x{seconds / avro:5.2f} Avro   "
              f"x{seconds / validate:6.2f} one validation")
    print(f"  parse (meta-schema check, load, digest)        {parse_strict * 1e3:9.2f} ms "
          f"(lenient, no meta-schema check: {parse_lenient * 1e3:.2f} ms)")


if __name__ == "__main__":
    main()
