"""The interop client programs, the plan they are given and how to run them.

Each program (Node.js, Go, Python) reads a JSON plan on stdin and prints a JSON report
`{"steps": {name: {"ok": true, "value": ...} | {"ok": false, "error": ..., ...}}}` on
stdout. A failed step is data for the assertions, not a crash; a program that exits
non-zero or prints something else is broken, and `run` fails the test saying so.

Names a program derives from the plan's `prefix` (the tests assert on the same ones):
  `<prefix>-api`             the subject of the API steps
  `<prefix>-rt`              the topic of the round trip (and of the cross-reading matrix)
  `<prefix>-mirror`          a topic with no subject at all (a mirrored topic)
  `<prefix>-other`           a topic whose `-value` subject holds another schema
  `<prefix>-gone`, `-keep`   the writer's subject hard-deleted, the id kept under `-keep`
  `<prefix>-rule`            a subject with a CEL data-contract rule set
  `<prefix>-assoc`, `<prefix>-assoc-target`   a topic associated with a subject
  `<prefix>-json`, `<prefix>-proto`   the topic written in mode "json" / "protobuf"

Modes "json" and "protobuf" (Confluent's JS and Go programs) write the plan's value, then
read every writer's bytes in `read`; with `"write": false` they only read
(tests/interop/exchange.py says who reads what, and when).
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
JS_DIR = HERE / "js"
GO_BINARY = ROOT / ".infra" / "interop" / "go-client"
PYTHON_PROGRAM = HERE / "python" / "client.py"
# A program talks to a local registry and nothing else; a minute is generous even for
# the Go binary's and Node's start-up on a busy two-core machine.
PROGRAM_TIMEOUT = 120.0

# ---- the scenario's data ------------------------------------------------------------

NAMESPACE = "interop.orders"
V1 = {
    "type": "record", "name": "Order", "namespace": NAMESPACE, "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": "string"},
        {"name": "total", "type": "double"},
        {"name": "paid", "type": "boolean"},
        {"name": "lines", "type": {"type": "array", "items": "string"}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "SHIPPED"]}},
        {"name": "note", "type": ["null", "string"], "default": None},
    ]}
# Adds a field with a default: compatible under BACKWARD.
V2 = dict(V1, fields=[*V1["fields"], {"name": "email", "type": ["null", "string"], "default": None}])
# Adds a field without a default: a reader of V2 cannot read V1 data, BACKWARD refuses it.
INCOMPATIBLE = dict(V1, fields=[*V1["fields"], {"name": "age", "type": "int"}])
OTHER = {"type": "record", "name": "Unrelated", "namespace": NAMESPACE,
         "fields": [{"name": "x", "type": "int"}]}
# Every value is exact in JSON, in a JavaScript number and in each Avro library.
VALUE = {"id": 1_234_567_890_123, "customer": "Ada ünïcødé", "total": 99.75, "paid": True,
         "lines": ["book", "pen"], "status": "SHIPPED", "note": "leave at door"}

# Field names Go can export: confluent-kafka-go's CEL executor evaluates a Go struct by its
# field names (cel-go native types) and fails on the *map its serializer would take.
PAYMENT = {"type": "record", "name": "Payment", "namespace": "interop.rules", "fields": [
    {"name": "Id", "type": "long"},
    {"name": "Amount", "type": "double"},
    {"name": "Payee", "type": "string"},
]}
# A CEL CONDITION on the whole message, and a CEL_FIELD TRANSFORM on one field; both on
# WRITE, so the serializer runs them and the bytes carry the transformed value.
RULE_SET = {"domainRules": [
    {"name": "amount-positive", "kind": "CONDITION", "mode": "WRITE", "type": "CEL",
     "expr": "message.Amount > 0.0"},
    {"name": "payee-prefixed", "kind": "TRANSFORM", "mode": "WRITE", "type": "CEL_FIELD",
     "expr": "name == 'Payee' ; 'acct-' + value"},
]}
RULE_GOOD = {"Id": 7, "Amount": 12.5, "Payee": "bob"}
RULE_GOOD_WRITTEN = dict(RULE_GOOD, Payee="acct-bob")
RULE_BAD = {"Id": 8, "Amount": -1.0, "Payee": "eve"}


def schema_text(schema: dict[str, Any]) -> str:
    return json.dumps(schema, separators=(",", ":"))


def plan(url: str, prefix: str, **extra: Any) -> dict[str, Any]:
    """The plan a program runs: the scenario by default, `mode="read"` with `read=[...]`."""
    return {
        "url": url, "prefix": prefix, "mode": "scenario",
        "schemas": {"v1": schema_text(V1), "v2": schema_text(V2), "incompatible": schema_text(INCOMPATIBLE),
                    "other": schema_text(OTHER), "rule": schema_text(PAYMENT)},
        "value": VALUE, "rule_set": RULE_SET, "rule_good": RULE_GOOD, "rule_bad": RULE_BAD,
        **extra,
    }


# ---- the programs -----------------------------------------------------------------------

API_STEPS = ("register", "get_by_id", "get_version", "get_latest", "lookup", "compat_ok", "compat_bad",
             "register_v2", "versions", "config_set", "config_get", "soft_delete", "hard_delete")
SERDE_STEPS = ("roundtrip", "mirror_topic", "mirror_other_subject", "deleted_subject")


@dataclass(frozen=True)
class Client:
    """One interop program: what runs it and which steps its library can take."""

    name: str
    argv: tuple[str, ...]
    steps: tuple[str, ...]
    # What has to exist first, and the sentence that says how to get it.
    needs: tuple[tuple[Path, str], ...] = field(default_factory=tuple)
    tool: str | None = None  # an executable looked up on PATH
    modules: tuple[str, ...] = ()  # Python modules the program imports beyond the test extra
    # Whether its register, version and lookup calls answer versions and schemas, or ids only.
    full_answers: bool = True

    def command(self) -> list[str]:
        """The argv to run, or an AssertionError that says what is missing and how to get it."""
        for module in self.modules:
            if importlib.util.find_spec(module) is None:
                raise AssertionError(f"{self.name}: Python module {module!r} is missing: run `make interop-deps` "
                                     f"(pip install -r tests/interop/python/requirements.txt)")
        if self.tool is not None and shutil.which(self.tool) is None:
            raise AssertionError(f"{self.name}: `{self.tool}` is not on PATH; the interop suite needs "
                                 f"Node.js 20+ and Go (see docs/development.md)")
        for path, how in self.needs:
            if not path.exists():
                raise AssertionError(f"{self.name}: {path} is missing: {how}")
        return [shutil.which(self.argv[0]) or self.argv[0], *self.argv[1:]]


def content_key(*paths: Path) -> str:
    """The Makefile's key for installed dependencies: sha256 of the files, concatenated."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


GO_DIR = HERE / "go"
# `make interop-deps` writes these stamps, named by the content of what it installed from:
# a missing one means the install is missing or stale (a lock file changed since).
NPM_STAMP = JS_DIR / "node_modules" / f".interop-{content_key(JS_DIR / 'package.json', JS_DIR / 'package-lock.json')}"
GO_STAMP = GO_BINARY.parent / ("go-client-" + content_key(
    GO_DIR / "go.mod", GO_DIR / "go.sum", *sorted(GO_DIR.glob("*.go"), key=lambda p: p.name)))
NPM_DEPS = (NPM_STAMP, "run `make interop-deps` (npm ci in tests/interop/js, from its package-lock.json)")
GO_DEPS = (GO_STAMP, "run `make interop-deps` (go build of tests/interop/go into .infra/interop/)")
ALL_STEPS = (*API_STEPS, *SERDE_STEPS, "rule", "associated")


def _python(client: str, serde: str) -> tuple[str, ...]:
    return (sys.executable, str(PYTHON_PROGRAM), "--client", client, "--serde", serde)


# confluent-kafka's CEL executors, from tests/interop/python/requirements.txt.
CEL_MODULES = ("celpy", "google.type")


CLIENTS = {
    c.name: c for c in [
        Client("confluent-js", ("node", str(JS_DIR / "confluent.js")), ALL_STEPS, (NPM_DEPS,), "node"),
        # kafkajs's client has no delete, no full lookup answer, no subject in its
        # deserializer (so no mirror case) and no data contracts.
        Client("kafkajs", ("node", str(JS_DIR / "kafkajs.js")),
               ("register", "get_by_id", "get_version", "get_latest", "lookup", "compat_ok", "compat_bad",
                "register_v2", "config_set", "config_get", "roundtrip"), (NPM_DEPS,), "node", full_answers=False),
        # confluent-kafka-go v2.11.1 (the newest on the Go proxy) has no associations API.
        Client("go", (str(GO_BINARY),), tuple(s for s in ALL_STEPS if s != "associated"), (GO_DEPS,)),
        Client("python-confluent", _python("confluent", "confluent"), ALL_STEPS, modules=CEL_MODULES),
        # confluent-kafka's serdes on our client (whose API steps are python-ours's).
        Client("python-confluent-serde-our-client", _python("ours", "confluent"),
               (*SERDE_STEPS, "rule", "associated"), modules=CEL_MODULES),
        # registry.serde does not execute rule sets and has no ASSOCIATED strategy.
        Client("python-ours", _python("ours", "ours"), (*API_STEPS, *SERDE_STEPS), modules=CEL_MODULES),
        Client("python-ours-serde-confluent-client", _python("confluent", "ours"), SERDE_STEPS,
               modules=CEL_MODULES),
    ]
}


def run(client: Client, the_plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Run `client`'s program on `the_plan`; its steps, by name.

    Blocks until the program exits (PROGRAM_TIMEOUT at most). Raises AssertionError,
    with the program's stderr, if it times out, exits non-zero or prints no report.
    """
    argv = client.command()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    try:
        done = subprocess.run(argv, input=json.dumps(the_plan).encode(), capture_output=True,
                              timeout=PROGRAM_TIMEOUT, cwd=ROOT, env=env)
    except subprocess.TimeoutExpired as timeout:
        raise AssertionError(f"{client.name} did not finish within {PROGRAM_TIMEOUT}s; stderr:\n"
                             f"{(timeout.stderr or b'').decode(errors='replace')[-3000:]}") from None
    stderr = done.stderr.decode(errors="replace")[-3000:]
    if done.returncode != 0:
        raise AssertionError(f"{client.name} exited with {done.returncode}; stderr:\n{stderr}")
    try:
        report = json.loads(done.stdout)
    except ValueError:
        raise AssertionError(f"{client.name} printed no JSON report: {done.stdout[-2000:]!r}; "
                             f"stderr:\n{stderr}") from None
    assert isinstance(report, dict) and isinstance(report.get("steps"), dict), \
        f"{client.name}: a report is {{'steps': {{...}}}}, got {report!r}"
    return report["steps"]
