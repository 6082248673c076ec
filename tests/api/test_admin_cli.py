"""The admin commands (`schema-registry subjects|get|register|check|...`, registry/admin)
run as real processes against real registry processes.

Each test runs the installed CLI, as an operator or a CI job would, and checks what it
printed, its exit code, and what the registry holds afterwards through the REST API.
"""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.api.support import CLI, ok_json, path_of, register

ORDER_V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [{"name": "id", "type": "string"}]}
ORDER_V2 = {"type": "record", "name": "Order", "namespace": "shop",
            "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int", "default": 1}]}
# Reading an int where version 2 wrote a string: incompatible under BACKWARD.
ORDER_BAD = {"type": "record", "name": "Order", "namespace": "shop", "fields": [{"name": "id", "type": "int"}]}


def cli(*args: str, url: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`schema-registry *args` (with `--url url`), its output captured; never the caller's SR_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SR_")}
    # An import's record of the target's mode (registry/admin/import_journal.py) goes in
    # the session's temporary directory, not the home directory.
    env["XDG_STATE_HOME"] = str(Path(tempfile.gettempdir()) / "cli-state")
    argv = [CLI, *args] + (["--url", url] if url else [])
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, cwd=cwd)


def cli_json(*args: str, url: str | None = None, cwd: Path | None = None) -> object:
    done = cli(*args, "--json", url=url, cwd=cwd)
    assert done.returncode == 0, f"{' '.join(args)} failed ({done.returncode}): {done.stderr}"
    return json.loads(done.stdout)


def write(path: Path, content: object) -> Path:
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


@pytest.fixture
def files(tmp_path: Path) -> Path:
    for name, schema in (("v1.avsc", ORDER_V1), ("v2.avsc", ORDER_V2), ("bad.avsc", ORDER_BAD)):
        write(tmp_path / name, schema)
    return tmp_path


def test_register_subjects_versions_and_get(registry, subject, files):
    url = registry.url
    first = cli_json("register", subject, str(files / "v1.avsc"), url=url)
    second = cli_json("register", subject, str(files / "v2.avsc"), url=url)
    assert (first["version"], second["version"]) == (1, 2), "register adds versions 1 and 2"
    assert subject in cli_json("subjects", "--prefix", subject, url=url), "subjects lists the new subject"
    assert cli_json("subjects", "--prefix", "no-such-prefix-", url=url) == [], "--prefix filters subjects"
    assert cli_json("versions", subject, url=url) == [1, 2], "versions lists both versions"
    got = cli_json("get", subject, "1", url=url)
    assert (got["id"], json.loads(got["schema"])) == (first["id"], ORDER_V1), "get SUBJECT 1 is version 1"
    by_id = cli_json("get", "--id", str(second["id"]), url=url)
    assert json.loads(by_id["schema"]) == ORDER_V2, "get --id finds the schema by id"
    table = cli("get", subject, url=url)
    assert table.returncode == 0 and '"qty"' in table.stdout and "version" in table.stdout, \
        f"without --json, get prints a table and the latest schema: {table.stdout}"
    raw = cli("get", subject, "2", "--schema-only", url=url)
    assert json.loads(raw.stdout) == ORDER_V2, "--schema-only prints the schema's text alone"
    listed = cli("subjects", "--prefix", subject, url=url)
    assert listed.returncode == 0 and subject in listed.stdout, "subjects prints a table for people"


class Recorder(BaseHTTPRequestHandler):
    """Answers every GET with one canned schema version and records what it was sent."""

    seen: list[tuple[str, dict[str, str]]] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        Recorder.seen.append((self.path, dict(self.headers)))
        body = json.dumps({"subject": "s", "version": 1, "id": 1, "schema": "{\"type\":\"string\"}"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[str]:
    """A loopback HTTP server standing in for a registry, to see exactly what the CLI sends
    (the registry itself does not check credentials or take `format` yet)."""
    Recorder.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_get_sends_format_and_the_client_auth_options(recorder):
    cli_json("get", "s", "1", "--format", "serialized", "--user-info", "alice:s3cret", url=recorder)
    path, headers = Recorder.seen[-1]
    assert path == "/subjects/s/versions/1?format=serialized", f"--format is passed as the query: {path}"
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"alice:s3cret").decode(), \
        "--user-info is sent as basic auth (basic.auth.user.info)"
    cli_json("get", "s", "--bearer-token", "tok-123", url=recorder)
    assert Recorder.seen[-1][1]["Authorization"] == "Bearer tok-123", "--bearer-token is sent as a bearer token"
    cli_json("get", "s", "--conf", "basic.auth.user.info=bob:pw", url=recorder)
    assert Recorder.seen[-1][1]["Authorization"] == "Basic " + base64.b64encode(b"bob:pw").decode(), \
        "--conf takes confluent-kafka's client setting names"
    both = cli("get", "s", "--user-info", "a:b", "--bearer-token", "t", url=recorder)
    assert both.returncode == 2 and "not both" in both.stderr, "basic and bearer together is refused"


def test_check_exit_codes_gate_a_pipeline(registry, subject, files):
    url = registry.url
    cli_json("register", subject, str(files / "v1.avsc"), url=url)
    good = cli("check", subject, str(files / "v2.avsc"), url=url)
    assert good.returncode == 0 and "compatible" in good.stdout, f"a compatible change exits 0: {good}"
    bad = cli("check", subject, str(files / "bad.avsc"), url=url)
    assert bad.returncode == 1, f"an incompatible change exits 1, so CI fails the merge: {bad}"
    assert "incompatible" in bad.stdout and "int" in bad.stdout, \
        f"the verbose reasons are printed: {bad.stdout}"
    as_json = cli("check", subject, str(files / "bad.avsc"), "--json", url=url)
    verdict = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and verdict["is_compatible"] is False and verdict["messages"], \
        "--json carries the verdict and the reasons, with the same exit code"
    against_one = cli("check", subject, str(files / "v2.avsc"), "--version", "1", url=url)
    assert against_one.returncode == 0, "--version checks against that version"
    missing = cli("check", subject, str(files / "missing.avsc"), url=url)
    assert missing.returncode == 2 and "missing.avsc" in missing.stderr, \
        "an unreadable file is an error (2), not a verdict"


def test_check_of_a_schema_the_registry_refuses_is_an_error_not_a_verdict(registry, subject, files, tmp_path):
    """Issue 48, item 10: exit 1 means incompatible, and only that; a refusal exits 2."""
    url = registry.url
    cli_json("register", subject, str(files / "v1.avsc"), url=url)
    unresolved = write(tmp_path / "priced.avsc", {"type": "record", "name": "Order", "namespace": "shop",
                                                  "fields": [{"name": "id", "type": "string"},
                                                             {"name": "price", "type": ["null", "shop.Missing"],
                                                              "default": None}]})
    refused = cli("check", subject, str(unresolved), "--ref", f"shop.Missing={subject}-nowhere:1", url=url)
    assert refused.returncode == 2, f"a schema refused for an unresolved reference is an error (2): {refused}"
    assert "422" in refused.stderr and "incompatible" not in refused.stdout, \
        f"the refusal is printed as the registry's error, not as an incompatibility: {refused}"
    as_json = cli("check", subject, str(unresolved), "--ref", f"shop.Missing={subject}-nowhere:1", "--json",
                  url=url)
    assert as_json.returncode == 2 and isinstance(json.loads(as_json.stderr)["error_code"], int), \
        f"--json: an error body with the registry's code, exit 2: {as_json}"
    garbage = write(tmp_path / "garbage.avsc", {"type": "record", "name": "Order", "fields": "not a list"})
    assert cli("check", subject, str(garbage), url=url).returncode == 2, "a schema the registry cannot parse: 2"
    incompatible = cli("check", subject, str(files / "bad.avsc"), url=url)
    assert incompatible.returncode == 1 and "int" in incompatible.stdout, \
        f"an incompatible schema still exits 1 with its reasons: {incompatible}"


class Failing(BaseHTTPRequestHandler):
    """Answers every request 500 with Confluent's body, as a registry whose store is down."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"error_code": 50001, "message": "Error in the backend data store"}).encode()
        self.send_response(500)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_check_exits_2_for_a_server_error_or_no_registry(files):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        failing = cli("check", "s", str(files / "v1.avsc"), "--no-discover", "--conf", "max.retries=0",
                      url=f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    assert failing.returncode == 2 and "50001" in failing.stderr, f"a 5xx is an error (2): {failing}"
    down = cli("check", "s", str(files / "v1.avsc"), "--no-discover", url="http://127.0.0.1:9")
    assert down.returncode == 2 and "unreachable" in down.stderr, f"no registry is an error (2): {down}"


def _requirement_closure(requirement: str) -> set[str]:
    """The distributions `pip install requirement` brings, from the installed ones'
    metadata (their declared requirements, extras and markers evaluated)."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: set[str] = set()
    todo = [Requirement(requirement)]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        req = todo.pop()
        key = (canonicalize_name(req.name), frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        found.add(key[0])
        for line in metadata.requires(req.name) or []:
            dep = Requirement(line)
            if dep.marker is None or any(dep.marker.evaluate({"extra": extra}) for extra in req.extras or {""}):
                todo.append(dep)
    return found


def test_make_install_gives_the_admin_commands(tmp_path):
    """Issue 48, item 8: what `make install` installs is all the admin commands import.

    `make -n` prints the install target's commands for a venv that does not exist yet;
    the extras its pip line names, resolved from the installed packages' metadata, must
    cover every third-party module the admin commands load."""
    from importlib import metadata

    from packaging.utils import canonicalize_name

    root = Path(__file__).resolve().parents[2]
    plan = subprocess.run(["make", "-n", "-B", "install", f"VENV={tmp_path / 'venv'}"], cwd=root,
                          capture_output=True, text=True, timeout=60)
    assert plan.returncode == 0, plan.stderr
    installs = [line for line in plan.stdout.splitlines() if "pip install" in line and " -e " in line]
    assert len(installs) == 1, f"make install installs the package once: {plan.stdout}"
    extras = installs[0].split("-e", 1)[1].strip().strip("'\"")
    assert extras.startswith(".["), f"an editable install of the checkout with extras: {installs[0]}"
    installed = _requirement_closure(f"schema-registry-py{extras[1:]}")

    loaded = subprocess.run([sys.executable, "-c", (
        "import sys, json\n"
        "import registry.cli, registry.admin.commands, registry.admin.migration, registry.admin.output\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")],
        capture_output=True, text=True, timeout=60, check=True)
    owners = metadata.packages_distributions()
    needed = {canonicalize_name(dist) for module in json.loads(loaded.stdout) for dist in owners.get(module, [])
              if module not in sys.stdlib_module_names}
    needed.discard("schema-registry-py")
    assert needed <= installed, \
        f"`make install` ({installs[0].strip()}) lacks what the admin commands import: {sorted(needed - installed)}"


def test_diff_between_two_versions(registry, subject, files):
    url = registry.url
    cli_json("register", subject, str(files / "v1.avsc"), url=url)
    cli_json("register", subject, str(files / "v2.avsc"), url=url)
    shown = cli("diff", subject, "1", "2", url=url)
    assert shown.returncode == 0, shown.stderr
    added = [line for line in shown.stdout.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert any('"qty"' in line for line in added), f"the added field shows as added lines: {shown.stdout}"
    assert not any(line.startswith("-") and not line.startswith("---") for line in shown.stdout.splitlines()), \
        "nothing was removed between the versions"
    same = cli_json("diff", subject, "2", "latest", url=url)
    assert same["identical"] is True and same["diff"] == [], "a version against itself has no differences"


def test_delete_soft_then_permanent(registry, subject, files):
    url = registry.url
    cli_json("register", subject, str(files / "v1.avsc"), url=url)
    cli_json("register", subject, str(files / "v2.avsc"), url=url)
    soft = cli_json("delete", subject, "1", url=url)
    assert soft["deleted"] == 1, "delete SUBJECT 1 soft-deletes version 1"
    assert cli_json("versions", subject, url=url) == [2], "a soft-deleted version is hidden"
    assert cli_json("versions", subject, "--deleted", url=url) == [1, 2], "...but listed with --deleted"
    cli_json("delete", subject, "1", "--permanent", url=url)
    assert cli_json("versions", subject, "--deleted", url=url) == [2], "--permanent removes it for good"
    gone = cli_json("delete", subject, "--permanent", url=url)
    assert gone["deleted"] == [2], "--permanent on a live subject soft-deletes then hard-deletes it"
    assert cli_json("subjects", "--prefix", subject, "--deleted", url=url) == [], "the subject is gone"


def test_config_and_mode_per_subject(registry, subject, files):
    url = registry.url
    cli_json("register", subject, str(files / "v1.avsc"), url=url)
    assert cli_json("config", subject, url=url)["compatibilityLevel"] == "BACKWARD", \
        "a subject without its own level shows the global one"
    cli_json("config", subject, "--set", "none", url=url)
    assert ok_json(registry.get(f"/config/{path_of(subject)}"), "GET config")["compatibilityLevel"] == "NONE", \
        "config --set stores the subject's level"
    assert cli("check", subject, str(files / "bad.avsc"), url=url).returncode == 0, \
        "with NONE the same change passes the check"
    cli_json("config", subject, "--delete", url=url)
    assert registry.get(f"/config/{path_of(subject)}").status_code == 404, "config --delete removes it"
    cli_json("mode", subject, "--set", "READONLY", url=url)
    refused = cli("register", subject, str(files / "v2.avsc"), url=url)
    assert refused.returncode == 2 and "42205" in refused.stderr, \
        f"a READONLY subject refuses registrations, reported with Confluent's code: {refused.stderr}"
    assert cli_json("mode", subject, url=url)["mode"] == "READONLY", "mode shows the subject's mode"
    cli_json("mode", subject, "--delete", url=url)
    assert cli_json("mode", subject, url=url)["mode"] == "READWRITE", "mode --delete falls back to global"
    assert cli_json("config", url=url)["compatibilityLevel"] == "BACKWARD", "config alone is the global level"


def test_several_urls_fail_over_to_a_live_node(registry, subject, files):
    cli_json("register", subject, str(files / "v1.avsc"), url=registry.url)
    found = cli_json("subjects", "--prefix", subject, url=f"http://127.0.0.1:9,{registry.url}")
    assert found == [subject], "with a dead first node, the command is answered by the next one"


def test_errors_are_one_line_with_the_confluent_code(registry):
    done = cli("get", "no-such-subject-anywhere", url=registry.url)
    assert done.returncode == 2, "an error exits 2"
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "40401" in lines[0], f"one line carrying error code 40401: {done.stderr}"
    as_json = cli("get", "no-such-subject-anywhere", "--json", url=registry.url)
    assert json.loads(as_json.stderr)["error_code"] == 40401, "--json errors are JSON with the code"
    down = cli("subjects", url="http://127.0.0.1:9", )
    assert down.returncode == 2 and len(down.stderr.strip().splitlines()) == 1 \
        and "unreachable" in down.stderr, f"an unreachable registry is one line too: {down.stderr}"


def test_register_protobuf_discovers_and_registers_imports(registry, tmp_path):
    # The import names the subject (Confluent's default reference subject strategy):
    # unique per test run, so the module's shared registry has no such subject yet.
    dep = f"dep{os.getpid()}_{tmp_path.name[-6:]}.proto".replace("-", "_")
    write(tmp_path / dep, 'syntax = "proto3";\npackage shop;\nmessage Money { int64 cents = 1; }\n')
    write(tmp_path / "order.proto", textwrap.dedent(f"""\
        syntax = "proto3";
        package shop;
        import "{dep}";
        import "google/protobuf/timestamp.proto";
        message Line {{ Money price = 1; google.protobuf.Timestamp at = 2; }}
    """))
    subject = f"lines-{tmp_path.name}"
    registered = cli_json("register", subject, str(tmp_path / "order.proto"), url=registry.url)
    assert registered["references"] == [{"name": dep, "subject": dep, "version": 1}], \
        "the import became a reference, the well-known type did not"
    assert cli_json("versions", dep, url=registry.url) == [1], \
        "the imported file, missing from the registry, was registered first under its name"


def test_register_with_explicit_reference(registry, subject, tmp_path):
    money = {"type": "record", "name": "Money", "namespace": "shop", "fields": [{"name": "cents", "type": "long"}]}
    write(tmp_path / "money.avsc", money)
    cli_json("register", f"{subject}-money", str(tmp_path / "money.avsc"), url=registry.url)
    write(tmp_path / "price.avsc", {"type": "record", "name": "Price", "namespace": "shop",
                                    "fields": [{"name": "amount", "type": "shop.Money"}]})
    registered = cli_json("register", subject, str(tmp_path / "price.avsc"),
                          "--ref", f"shop.Money={subject}-money:latest", url=registry.url)
    assert registered["references"] == [{"name": "shop.Money", "subject": f"{subject}-money", "version": 1}], \
        "--ref name=subject:latest is resolved to the version number and sent"


def test_json_schema_external_ref_is_discovered(registry, subject, tmp_path):
    name = f"{subject}-address.json"
    write(tmp_path / name, {"type": "object", "properties": {"street": {"type": "string"}}})
    write(tmp_path / "customer.json", {"type": "object", "properties": {"home": {"$ref": f"{name}#"}}})
    registered = cli_json("register", subject, str(tmp_path / "customer.json"), url=registry.url)
    assert registered["references"] == [{"name": name, "subject": name, "version": 1}], \
        "a $ref to another document becomes a reference to the subject of that name"


def test_from_dataclass_prints_and_registers(registry, subject, tmp_path):
    write(tmp_path / "events.py", textwrap.dedent("""\
        from dataclasses import dataclass
        from typing import Optional

        @dataclass
        class OrderPlaced:
            order_id: str
            quantity: int
            note: Optional[str] = None
    """))
    printed = cli_json("from-dataclass", "events:OrderPlaced", cwd=tmp_path)
    assert printed["name"] == "OrderPlaced" and printed["namespace"] == "events", "named after class and module"
    assert [f["name"] for f in printed["fields"]] == ["order_id", "quantity", "note"], "one field per attribute"
    registered = cli_json("from-dataclass", "events:OrderPlaced", "--register", subject, url=registry.url,
                          cwd=tmp_path)
    assert json.loads(ok_json(registry.get(f"/schemas/ids/{registered['id']}"), "GET id")["schema"]) == printed, \
        "--register stores the same schema it prints"
    as_json = cli_json("from-dataclass", "events:OrderPlaced", "--format", "json", cwd=tmp_path)
    assert as_json["title"] == "OrderPlaced" and set(as_json["properties"]) == {"order_id", "quantity", "note"}
    assert set(as_json["required"]) == {"order_id", "quantity"}, "a field with a default is optional"
    json_subject = subject + "-json"
    registered_json = cli_json("from-dataclass", "events:OrderPlaced", "--format", "json", "--register",
                               json_subject, url=registry.url, cwd=tmp_path)
    stored = ok_json(registry.get(f"/schemas/ids/{registered_json['id']}"), "GET id")
    assert stored["schemaType"] == "JSON" and json.loads(stored["schema"]) == as_json, \
        "--format json registers the JSON Schema it prints, as JSON"
    wrong = cli("from-dataclass", "events:Missing", cwd=tmp_path)
    assert wrong.returncode == 2 and "not a dataclass" in wrong.stderr, "a bad target is an error"


# ---- export, import, copy ----------------------------------------------------------------

def populate(server, tmp_path: Path) -> dict[str, dict[int, int]]:
    """Through the REST API (the commands themselves are tested above): two subjects in
    the default context, one in context .staging, a reference, a soft-deleted version and
    a per-subject level; ids made non-contiguous by a hard deletion."""
    write(tmp_path / "v1.avsc", ORDER_V1)
    money = json.dumps({"type": "record", "name": "Money", "fields": [{"name": "c", "type": "long"}]})
    price = json.dumps({"type": "record", "name": "Price", "fields": [{"name": "m", "type": "Money"}]})
    register(server, "throwaway", money)
    ok_json(server.delete("/subjects/throwaway"), "soft delete")
    ok_json(server.delete("/subjects/throwaway?permanent=true"), "hard delete")
    register(server, "orders-value", json.dumps(ORDER_V1))
    register(server, "orders-value", json.dumps(ORDER_V2))
    ok_json(server.delete("/subjects/orders-value/versions/1"), "soft delete version 1")
    register(server, "money", json.dumps(ORDER_V2))
    ok_json(server.put("/config/money", {"compatibility": "NONE"}), "level NONE")
    register(server, "money", money)
    register(server, "price-value", price, references=[{"name": "Money", "subject": "money", "version": 2}])
    register(server, ":.staging:orders-value", json.dumps(ORDER_V1))
    return ids_of(server)


def ids_of(server) -> dict[str, dict[int, int]]:
    """subject -> version -> id, soft-deleted versions included, as the REST API lists them."""
    found: dict[str, dict[int, int]] = {}
    for body in ok_json(server.get("/schemas?deleted=true"), "GET /schemas"):
        found.setdefault(body["subject"], {})[body["version"]] = body["id"]
    return found


@pytest.mark.parametrize("destination", ["export-dir", "export.tar.gz", "export.zip"])
def test_export_then_import_keeps_ids_versions_deletions_and_settings(start_registry, tmp_path, destination):
    source, target = start_registry(), start_registry()
    before = populate(source, tmp_path)
    assert before["orders-value"] == {1: 2, 2: 3}, "the source's ids start above the hard-deleted one"
    exported = cli_json("export", str(tmp_path / destination), url=source.url)
    assert exported["schemas"] == 6, "every version, the soft-deleted one and the context's included"
    done = cli_json("import", str(tmp_path / destination), url=target.url)
    assert (done["imported"], done["failed"]) == (6, []), f"all imported: {done}"
    assert ids_of(target) == before, "every subject, version and id is the same in the target"
    assert cli_json("versions", "orders-value", url=target.url) == [2], "the soft-deleted version stays deleted"
    assert cli_json("config", "money", url=target.url)["compatibilityLevel"] == "NONE", "per-subject level copied"
    assert cli_json("mode", url=target.url)["mode"] == "READWRITE", "the target's mode is restored afterwards"
    ref = cli_json("get", "price-value", "1", url=target.url)["references"]
    assert ref == [{"name": "Money", "subject": "money", "version": 2}], "references are kept"
    new = cli_json("register", "fresh", str(tmp_path / "v1.avsc"), url=target.url)
    assert new["id"] == before["orders-value"][1], "the same content registered anew shares the imported id"


def test_import_resumes_and_refuses_a_conflicting_id(start_registry, tmp_path):
    source, target = start_registry(), start_registry()
    before = populate(source, tmp_path)
    cli_json("export", str(tmp_path / "part"), "--prefix", "orders-", url=source.url)
    cli_json("export", str(tmp_path / "all"), url=source.url)
    first = cli_json("import", str(tmp_path / "part"), url=target.url)
    assert first["imported"] == 2, "the partial export holds orders-value's two versions"
    # The target holds nothing but versions of the export, with its ids: the import
    # goes on where the first stopped, without --force.
    second = cli_json("import", str(tmp_path / "all"), url=target.url)
    assert (second["skipped"], second["imported"], second["failed"]) == (2, 4, []), \
        f"versions already there are skipped, the rest imported: {second}"
    assert ids_of(target) == before, "the resumed import ends with the source's ids"

    # A registry holding schemas of its own is refused without --force, as Confluent
    # refuses IMPORT mode on a non-empty registry...
    other = start_registry()
    ok_json(other.put("/mode", {"mode": "IMPORT"}), "IMPORT on an empty registry")
    register(other, "its-own", json.dumps(ORDER_BAD), id=50, version=1)  # an id the export does not use
    ok_json(other.put("/mode", {"mode": "READWRITE"}), "back to READWRITE")
    refused = cli("import", str(tmp_path / "all"), url=other.url)
    assert refused.returncode == 2 and "--force" in refused.stderr, f"asks for --force: {refused.stderr}"
    assert cli_json("mode", url=other.url)["mode"] == "READWRITE", "a refused import changed nothing"
    forced = cli_json("import", str(tmp_path / "all"), "--force", url=other.url)
    assert (forced["imported"], forced["failed"]) == (6, []), f"...and with it goes ahead: {forced}"

    clash = start_registry()
    register(clash, "orders-value", json.dumps(ORDER_V2))  # version 1 with id 1, not the source's 2
    failed = cli("import", str(tmp_path / "all"), "--force", url=clash.url)
    assert failed.returncode == 2 and "orders-value" in failed.stderr, \
        f"a version the target holds with another id is a failure, named: {failed.stderr}"
    assert cli_json("mode", url=clash.url)["mode"] == "READWRITE", \
        "after a failure the target's global mode is the one it had before (issue 48, item 9)"
    assert clash.get("/config/money").status_code == 404, "no setting is applied while versions are missing"


def test_export_of_a_context_and_copy_between_registries(start_registry, tmp_path):
    source, target = start_registry(), start_registry()
    before = populate(source, tmp_path)
    staging = cli_json("export", str(tmp_path / "staging"), "--context", ".staging", url=source.url)
    assert staging["schemas"] == 1 and staging["subjects"] == 1, "--context selects that context's subjects"
    bare = cli_json("export", str(tmp_path / "bare"), "--no-subject-settings", url=source.url)
    assert bare["settings"] == 0 and (tmp_path / "bare" / "settings.jsonl").read_text().count("\n") == 1, \
        "--no-subject-settings keeps only the global settings"
    copied = cli("copy", "--from", source.url, "--to", target.url, "--json")
    assert copied.returncode == 0, copied.stderr
    assert json.loads(copied.stdout)["imported"] == 6, "copy moves every version"
    assert ids_of(target) == before, "copy keeps subjects, versions and ids"
