"""Export, import and copy keep a registry whole (issue 48, item 9), as real processes.

A source registry holding every kind of state (Avro, JSON Schema and Protobuf versions
with references between them, soft-deleted versions, a hard-deleted id, subjects' own
configs and modes, the global config and mode, contexts and a context's own settings,
data contracts) is exported, imported into an empty registry and exported again: the two
exports must be the same, ids and versions included. `copy` must do the same, and an
import killed with SIGKILL halfway, stopped with SIGTERM, or failing on a target that
breaks midway must leave the target's global mode as it was and finish when run again.

Every command is the installed CLI (`.venv/bin/schema-registry`), against registries
started on loopback by tests/api/conftest.py. tests/integration/test_admin_round_trip_kafka.py
runs the same round trip on the Kafka store and imports this module's helpers.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.api.support import CLI, RegistryProcess, ok_json, path_of, wait_until

# ---- the state a registry can hold -------------------------------------------------------

MONEY = {"type": "record", "name": "Money", "namespace": "shop", "fields": [{"name": "cents", "type": "long"}]}
PRICE = {"type": "record", "name": "Price", "namespace": "shop", "fields": [{"name": "amount", "type": "shop.Money"}]}
ORDER_V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [{"name": "id", "type": "string"}]}
ORDER_V2 = {"type": "record", "name": "Order", "namespace": "shop",
            "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int", "default": 1}]}
ORDER_V3 = {"type": "record", "name": "Order", "namespace": "shop",
            "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int", "default": 1},
                       {"name": "note", "type": ["null", "string"], "default": None}]}
ADDRESS = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
           "properties": {"street": {"type": "string"}}}
CUSTOMER = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
            "properties": {"name": {"type": "string"}, "home": {"$ref": "address.json"}}}
MONEY_PROTO = 'syntax = "proto3";\npackage shop;\n\nmessage Cents {\n  int64 value = 1;\n}\n'
LINE_PROTO = ('syntax = "proto3";\npackage shop;\n\nimport "money.proto";\n\n'
              'message Line {\n  string sku = 1;\n  Cents price = 2;\n}\n')
RULES = {"domainRules": [{"name": "positive", "kind": "CONDITION", "mode": "WRITE", "type": "CEL",
                          "expr": "message.cents > 0"}],
         "migrationRules": [{"name": "rename", "kind": "TRANSFORM", "mode": "UPGRADE", "type": "JSONATA",
                             "expr": "$"}]}
CONTRACT_METADATA = {"properties": {"owner": "payments", "application.major.version": "2"},
                     "tags": {"cents": ["PII"]}, "sensitive": ["owner"]}


def _ok(response: requests.Response, what: str) -> Any:
    return ok_json(response, what)


def _register(server: RegistryProcess, subject: str, schema: Any, **extra: Any) -> dict[str, Any]:
    text = schema if isinstance(schema, str) else json.dumps(schema)
    return _ok(server.post(f"/subjects/{path_of(subject)}/versions", {"schema": text, **extra}),
               f"register under {subject}")


def populate_every_kind_of_state(server: RegistryProcess) -> None:
    """Through the REST API: every kind of state a registry holds that an export carries.

    Ids are made non-contiguous by a hard deletion, so an import that numbered anew
    instead of keeping ids would show."""
    _register(server, "throwaway", {"type": "fixed", "name": "Gone", "size": 3})
    _ok(server.delete("/subjects/throwaway"), "soft delete")
    _ok(server.delete("/subjects/throwaway?permanent=true"), "hard delete")
    # Avro, with a reference and a soft-deleted version.
    _register(server, "money", MONEY)
    _register(server, "price-value", PRICE, references=[{"name": "shop.Money", "subject": "money", "version": 1}])
    for schema in (ORDER_V1, ORDER_V2, ORDER_V3):
        _register(server, "orders-value", schema)
    _ok(server.delete("/subjects/orders-value/versions/2"), "soft delete version 2")
    # A whole subject soft-deleted.
    _register(server, "retired-value", {"type": "enum", "name": "Retired", "symbols": ["A"]})
    _ok(server.delete("/subjects/retired-value"), "soft delete a subject")
    # JSON Schema, with a reference.
    _register(server, "address.json", ADDRESS, schemaType="JSON")
    _register(server, "customer-value", CUSTOMER, schemaType="JSON",
              references=[{"name": "address.json", "subject": "address.json", "version": 1}])
    # Protobuf, with an import as a reference.
    _register(server, "money.proto", MONEY_PROTO, schemaType="PROTOBUF")
    _register(server, "line-value", LINE_PROTO, schemaType="PROTOBUF",
              references=[{"name": "money.proto", "subject": "money.proto", "version": 1}])
    # The same content under another subject shares its id.
    _register(server, "money-copy", MONEY)
    # A data contract: metadata and rules on the version, defaults in the subject's config.
    _register(server, "contract-value", MONEY, metadata=CONTRACT_METADATA, ruleSet=RULES)
    _ok(server.put("/config/contract-value", {"compatibility": "FULL", "compatibilityGroup": "application.major.version",
                                              "defaultMetadata": {"properties": {"team": "payments"}},
                                              "overrideRuleSet": RULES}), "a data contract config")
    # Contexts: subjects, a reference inside one, and a context's own config and mode.
    _register(server, ":.staging:money", MONEY)
    _register(server, ":.staging:price-value", PRICE,
              references=[{"name": "shop.Money", "subject": ":.staging:money", "version": 1}])
    _ok(server.put("/config/:.staging:", {"compatibility": "NONE"}), "a context's config")
    _ok(server.put("/mode/:.staging:", {"mode": "READONLY"}), "a context's mode")
    # Subjects' own configs and modes (READONLY is what an import sent wrongly).
    _ok(server.put("/config/money", {"compatibility": "NONE", "normalize": True}), "a subject's config")
    _ok(server.put("/mode/orders-value", {"mode": "READONLY"}), "a subject's READONLY mode")
    _ok(server.put("/mode/price-value", {"mode": "READWRITE"}), "a subject's explicit READWRITE")
    _ok(server.put("/mode/:.staging:money", {"mode": "READWRITE"}), "a context subject's mode")
    # Last, the global config and mode (READONLY would refuse the registrations above).
    _ok(server.put("/config", {"compatibility": "FULL_TRANSITIVE"}), "the global config")
    _ok(server.put("/mode", {"mode": "READONLY"}), "the global mode")


# ---- running the CLI -------------------------------------------------------------------

def cli_env(state_home: Path) -> dict[str, str]:
    """The CLI's environment: never the caller's SR_* settings, and its own state directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SR_")}
    env["XDG_STATE_HOME"] = str(state_home)
    return env


def cli(state_home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`schema-registry *args --no-progress --json`, run to its end; never retries a request."""
    return subprocess.run([CLI, *args, "--json"], capture_output=True, text=True, timeout=120,
                          env=cli_env(state_home))


def cli_ok(state_home: Path, *args: str) -> Any:
    done = cli(state_home, *args)
    assert done.returncode == 0, f"`{' '.join(args)}` failed ({done.returncode}): {done.stderr}{done.stdout}"
    return json.loads(done.stdout)


def export(state_home: Path, url: str, destination: Path) -> dict[str, Any]:
    """Export the registry at `url` into the directory `destination`; its files, read."""
    cli_ok(state_home, "export", str(destination), "--url", url)
    manifest = json.loads((destination / "manifest.json").read_text())
    return {
        "manifest": {k: v for k, v in manifest.items() if k not in ("source", "created")},
        "schemas": [json.loads(line) for line in (destination / "schemas.jsonl").read_text().splitlines()],
        "settings": [json.loads(line) for line in (destination / "settings.jsonl").read_text().splitlines()],
    }


def assert_same_export(before: dict[str, Any], after: dict[str, Any], what: str) -> None:
    """The two exports hold the same versions (ids, versions, texts, references,
    contracts, deletions) and the same settings; where they differ is named."""
    assert after["manifest"] == before["manifest"], f"{what}: the manifests differ"
    old = {(s["subject"], s["version"]): s for s in before["schemas"]}
    new = {(s["subject"], s["version"]): s for s in after["schemas"]}
    assert sorted(new) == sorted(old), f"{what}: other versions: lost {sorted(set(old) - set(new))}, " \
                                       f"gained {sorted(set(new) - set(old))}"
    for key, body in old.items():
        assert new[key] == body, f"{what}: {key} differs:\n{body}\n{new[key]}"
    assert after["schemas"] == before["schemas"], f"{what}: the versions are in another order"
    settings_before = {s["subject"]: s for s in before["settings"]}
    settings_after = {s["subject"]: s for s in after["settings"]}
    for subject in sorted(set(settings_before) | set(settings_after), key=str):
        assert settings_after.get(subject) == settings_before.get(subject), \
            f"{what}: the settings of {subject!r} differ: {settings_before.get(subject)} -> " \
            f"{settings_after.get(subject)}"
    assert after["settings"] == before["settings"], f"{what}: the settings are in another order"


def global_mode(server: RegistryProcess) -> str:
    return _ok(server.get("/mode"), "GET /mode")["mode"]


def journals(state_home: Path) -> list[Path]:
    """The CLI's records of imports under way (registry/admin/import_journal.py)."""
    return sorted((state_home / "schema-registry" / "imports").glob("*.json"))


# ---- a target that breaks midway ---------------------------------------------------------

class FaultyTarget:
    """A loopback proxy in front of a registry: passes every request on, until the
    `fail_from`-th schema write (`POST /import/schemas` or `POST /subjects/{s}/versions`,
    counted from 1); that one and every later one reach `fault` instead of the registry,
    which may kill the CLI or hold the request, and are answered 500 with Confluent's
    body. `fail_from = None` passes everything again."""

    def __init__(self, target: RegistryProcess, fail_from: int | None,
                 fault: Callable[[], None] = lambda: None) -> None:
        self.target = target
        self.fail_from = fail_from
        self.fault = fault
        self.schema_writes = 0
        self.refused = 0
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def handle_one(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if proxy.refuses(self.command, self.path):
                    proxy.fault()
                    self.answer(500, json.dumps({"error_code": 50001, "message": "the target broke"}).encode(),
                                "application/vnd.schemaregistry.v1+json")
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() in ("content-type", "accept")}
                response = requests.request(self.command, proxy.target.url + self.path, data=body, headers=headers,
                                            timeout=30)
                self.answer(response.status_code, response.content,
                            response.headers.get("Content-Type", "application/json"))

            def answer(self, status: int, content: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                try:
                    self.wfile.write(content)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the CLI was killed while it waited: nobody to answer

            do_GET = do_POST = do_PUT = do_DELETE = handle_one

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def refuses(self, method: str, path: str) -> bool:
        if method != "POST" or not (path.startswith("/import/schemas") or path.split("?")[0].endswith("/versions")):
            return False
        with self._lock:
            self.schema_writes += 1
            refused = self.fail_from is not None and self.schema_writes >= self.fail_from
            self.refused += refused
            return refused

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def faulty_targets() -> Iterator[Callable[..., FaultyTarget]]:
    started: list[FaultyTarget] = []

    def start(target: RegistryProcess, fail_from: int | None, fault: Callable[[], None] = lambda: None
              ) -> FaultyTarget:
        started.append(FaultyTarget(target, fail_from, fault))
        return started[-1]

    yield start
    for proxy in started:
        proxy.close()


def start_cli(state_home: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([CLI, *args, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=cli_env(state_home))


# ---- the tests ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RegistryProcess, dict[str, Any], Path]]:
    """A registry holding every kind of state, its export (read) and the export's directory."""
    from tests.api.support import RegistryFactory

    base = tmp_path_factory.mktemp("round-trip-source")
    factory = RegistryFactory(base)
    try:
        server = factory()
        populate_every_kind_of_state(server)
        exported = export(base, server.url, base / "export")
        yield server, exported, base / "export"
    finally:
        factory.close()


def test_the_export_holds_every_kind_of_state(source):
    _, exported, _ = source
    schemas = exported["schemas"]
    assert {s.get("schemaType", "AVRO") for s in schemas} == {"AVRO", "JSON", "PROTOBUF"}, "three formats"
    assert sum(1 for s in schemas if s.get("deleted")) == 2, "a soft-deleted version and a soft-deleted subject"
    assert any(s.get("references") for s in schemas if s["subject"].startswith(":.staging:")), \
        "a reference inside a context"
    assert any(s.get("metadata") and s.get("ruleSet") for s in schemas), "a data contract"
    settings = {s["subject"]: s for s in exported["settings"]}
    assert (settings[None]["config"]["compatibilityLevel"], settings[None]["mode"]) == ("FULL_TRANSITIVE", "READONLY"), \
        "the global config and mode"
    assert (settings[":.staging:"]["config"]["compatibilityLevel"], settings[":.staging:"]["mode"]) == \
        ("NONE", "READONLY"), "a context's own config and mode"
    assert settings["orders-value"]["mode"] == "READONLY" and settings["money"]["config"]["normalize"] is True, \
        "subjects' modes and configs"


def test_export_import_export_is_the_same_and_so_is_copy(source, start_registry, tmp_path):
    server, before, export_dir = source
    target = start_registry()
    done = cli_ok(tmp_path, "import", str(export_dir), "--url", target.url)
    assert (done["imported"], done["soft_deleted"], done["failed"]) == (len(before["schemas"]), 2, []), done
    assert_same_export(before, export(tmp_path, target.url, tmp_path / "again"), "export -> import -> export")
    assert global_mode(target) == "READONLY", "the target ends in the source's global mode, not IMPORT"
    again = cli_ok(tmp_path, "import", str(export_dir), "--url", target.url)
    assert (again["imported"], again["skipped"], again["failed"]) == (0, len(before["schemas"]), []), \
        f"a second import finds everything there and changes nothing: {again}"
    assert_same_export(before, export(tmp_path, target.url, tmp_path / "third"), "after a second import")

    copied_to = start_registry()
    copied = cli_ok(tmp_path, "copy", "--from", server.url, "--to", copied_to.url)
    assert (copied["imported"], copied["failed"]) == (len(before["schemas"]), []), copied
    assert_same_export(before, export(tmp_path, copied_to.url, tmp_path / "copied"), "copy -> export")
    assert not journals(tmp_path), "no record of an import under way is left behind"


def test_an_import_killed_halfway_is_finished_by_a_rerun(source, start_registry, faulty_targets, tmp_path):
    _, before, export_dir = source
    target = start_registry()
    running: list[subprocess.Popen[str]] = []

    def kill_the_cli() -> None:
        running[0].kill()  # SIGKILL: no clean-up of any kind runs
        running[0].wait(timeout=10)

    # The export's versions go in two waves (referenced versions first): killed at the second.
    proxy = faulty_targets(target, fail_from=2, fault=kill_the_cli)
    running.append(start_cli(tmp_path, "import", str(export_dir), "--url", proxy.url))
    running[0].wait(timeout=60)
    assert running[0].returncode == -signal.SIGKILL, "the CLI was killed mid-import"
    held = len(_ok(target.get("/schemas?deleted=true"), "GET /schemas"))
    assert 0 < held < len(before["schemas"]), f"the target holds part of the export: {held}"
    assert global_mode(target) == "IMPORT", "a killed import cannot put the mode back"
    assert len(journals(tmp_path)) == 1, "the killed import left its record of the mode it found"

    proxy.fail_from = None  # the same target URL, working again
    done = cli_ok(tmp_path, "import", str(export_dir), "--url", proxy.url)
    assert (done["skipped"], done["imported"], done["failed"]) == \
        (held, len(before["schemas"]) - held, []), f"the re-run imports the rest, no --force needed: {done}"
    assert_same_export(before, export(tmp_path, target.url, tmp_path / "after"), "killed, re-run, exported")
    assert global_mode(target) == "READONLY", "the re-run ends in the export's global mode"
    assert not journals(tmp_path), "the record is gone once the mode is set"


def test_a_killed_context_import_ends_in_the_mode_the_target_had(source, start_registry, faulty_targets,
                                                                  tmp_path):
    """A context's export carries no global mode: the target's own is put back, by the
    re-run of an import that was killed (from its record of it)."""
    server, _, _ = source
    context = cli_ok(tmp_path, "export", str(tmp_path / "staging"), "--context", ".staging", "--url", server.url)
    assert context["schemas"] == 2, "the context's two versions, one referencing the other"
    target = start_registry()
    _ok(target.put("/mode", {"mode": "READONLY"}), "the target's own global mode")
    running: list[subprocess.Popen[str]] = []
    proxy = faulty_targets(target, fail_from=2, fault=lambda: (running[0].kill(), running[0].wait(timeout=10)))
    running.append(start_cli(tmp_path, "import", str(tmp_path / "staging"), "--url", proxy.url))
    running[0].wait(timeout=60)
    assert running[0].returncode == -signal.SIGKILL and global_mode(target) == "IMPORT", "killed in IMPORT"
    proxy.fail_from = None
    done = cli_ok(tmp_path, "import", str(tmp_path / "staging"), "--url", proxy.url)
    assert (done["skipped"], done["imported"], done["mode_after"]) == (1, 1, "READONLY"), done
    assert global_mode(target) == "READONLY", "the target is back in the global mode it had before the first run"
    assert _ok(target.get("/mode/:.staging:"), "the context's mode")["mode"] == "READONLY", \
        "the context's own mode came with it"


def test_an_import_into_a_target_failing_midway_leaves_its_mode_and_a_rerun_finishes(
        source, start_registry, faulty_targets, tmp_path):
    server, before, export_dir = source
    target = start_registry()
    proxy = faulty_targets(target, fail_from=2)
    failed = cli(tmp_path, "import", str(export_dir), "--url", proxy.url, "--conf", "max.retries=0")
    assert failed.returncode == 2, f"a failed import exits 2: {failed.stdout} {failed.stderr}"
    summary = json.loads(failed.stdout)
    assert summary["failed"] and summary["imported"] > 0 and proxy.refused, "part went in, part failed"
    assert global_mode(target) == "READWRITE", "the target's global mode is the one it had, not IMPORT"
    assert target.get("/mode/orders-value").status_code == 404 and target.get("/config").json() == \
        {"compatibilityLevel": "BACKWARD"}, "no setting is applied before every version is in"
    assert not journals(tmp_path), "the mode was put back: nothing to remember"

    # `copy` through the same broken target fails the same way, and when it works, finishes.
    failed_copy = cli(tmp_path, "copy", "--from", server.url, "--to", proxy.url, "--to-conf", "max.retries=0")
    assert failed_copy.returncode == 2 and global_mode(target) == "READWRITE", failed_copy.stderr
    proxy.fail_from = None
    done = cli_ok(tmp_path, "copy", "--from", server.url, "--to", proxy.url)
    assert done["failed"] == [] and done["skipped"] > 0, f"the re-run skips what is there: {done}"
    assert_same_export(before, export(tmp_path, target.url, tmp_path / "after"), "failed, copied again, exported")


def test_an_import_stopped_with_sigterm_puts_the_mode_back(source, start_registry, faulty_targets, tmp_path):
    _, before, export_dir = source
    target = start_registry()
    _ok(target.put("/mode", {"mode": "READONLY"}), "the target's own global mode")
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        holding.set()
        release.wait(timeout=30)

    proxy = faulty_targets(target, fail_from=2, fault=hold)
    # The held request is never answered: the CLI gives up on it after its 2 s timeout,
    # long after the signal was taken.
    running = start_cli(tmp_path, "import", str(export_dir), "--url", proxy.url, "--conf", "max.retries=0",
                        "--timeout", "2")
    try:
        assert holding.wait(timeout=30), "the import reached its second wave"
        running.send_signal(signal.SIGTERM)
        out, err = running.communicate(timeout=60)
    finally:
        release.set()
    assert running.returncode == 2 and json.loads(out)["interrupted"] is True, \
        f"SIGTERM stops the import, as an error: {out} {err}"
    assert global_mode(target) == "READONLY", "the target's global mode is back to what it was"
    proxy.fail_from = None
    done = cli_ok(tmp_path, "import", str(export_dir), "--url", proxy.url)
    assert done["failed"] == [], done
    assert_same_export(before, export(tmp_path, target.url, tmp_path / "after"), "stopped, re-run, exported")
