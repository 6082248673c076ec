"""The admin commands' pure parts: import order, reference options, schema files, diffs."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from registry.admin.connection import ConnectionOptionError, client_conf, transport_for
from registry.admin.migration import MigrationError, selection_prefix, waves
from registry.admin.schema_diff import schema_diff
from registry.admin.schema_files import Reference, SchemaFileError, load_schema, parse_reference


def version(subject: str, number: int, schema_id: int, *refs: tuple[str, int]) -> dict:
    body = {"subject": subject, "version": number, "id": schema_id, "schema": "{}"}
    if refs:
        body["references"] = [{"name": s, "subject": s, "version": v} for s, v in refs]
    return body


def test_waves_put_referenced_versions_first():
    schemas = [version("c", 1, 9, ("b", 1)), version("b", 1, 5, ("a", 1)), version("a", 1, 7),
               version("d", 1, 1), version("e", 1, 2, ("outside", 3))]
    order = [[(s["subject"], s["id"]) for s in wave] for wave in waves(schemas)]
    assert order == [[("d", 1), ("e", 2), ("a", 7)], [("b", 5)], [("c", 9)]], \
        "a version comes in a wave after the versions it references; by id within a wave; " \
        "references outside the export do not wait"


def test_waves_refuse_a_cycle():
    with pytest.raises(MigrationError, match="cycle"):
        waves([version("a", 1, 1, ("b", 1)), version("b", 1, 2, ("a", 1))])


def test_waves_are_linear_on_a_long_chain():
    chain = [version(f"s{i}", 1, i + 1, *([(f"s{i - 1}", 1)] if i else [])) for i in range(20_000)]
    assert len(waves(chain)) == 20_000, "a chain of references is one version a wave (no recursion limit)"


def test_selection_prefix_of_a_context():
    assert selection_prefix("", ".staging") == ":.staging:", "a context selects its qualified subjects"
    assert selection_prefix("", "staging") == ":.staging:", "the leading dot is optional"
    assert selection_prefix("orders-", None) == "orders-", "without a context, the prefix"


def test_parse_reference():
    assert parse_reference("Money=money:3") == Reference("Money", "money", 3), "name=subject:version"
    assert parse_reference("Money=money") == Reference("Money", "money", "latest"), "no version: latest"
    assert parse_reference("m.proto=:.ctx:money:latest") == Reference("m.proto", ":.ctx:money", "latest"), \
        "a context-qualified subject splits at the last colon"
    with pytest.raises(SchemaFileError):
        parse_reference("no-equals-sign")


def test_load_schema_discovers_imports(tmp_path: Path):
    (tmp_path / "o.proto").write_text('syntax = "proto3";\nimport "a/b.proto";\nimport public "c.proto";\n'
                                      'import "google/protobuf/any.proto";\nimport "a/b.proto";\n')
    assert load_schema(tmp_path / "o.proto", None).imports == ["a/b.proto", "c.proto"], \
        "imports once each, well-known types left out"
    (tmp_path / "s.json").write_text(json.dumps({"properties": {"a": {"$ref": "x.json#/defs/A"},
                                                                "b": {"$ref": "#/local"},
                                                                "c": {"items": [{"$ref": "y.json"}]}}}))
    assert sorted(load_schema(tmp_path / "s.json", None).imports) == ["x.json", "y.json"], \
        "external $refs, without their fragment; local ones are not references"
    (tmp_path / "x.txt").write_text("{}")
    with pytest.raises(SchemaFileError, match="--type"):
        load_schema(tmp_path / "x.txt", None)
    (tmp_path / "broken.avsc").write_text("{")
    with pytest.raises(SchemaFileError, match="not JSON"):
        load_schema(tmp_path / "broken.avsc", None)


def test_schema_diff_ignores_formatting_and_shows_changes():
    old = {"subject": "s", "version": 1, "id": 1, "schema": '{"type":"record","name":"R","fields":[]}'}
    same = {**old, "version": 2, "schema": '{ "type": "record", "name": "R", "fields": [] }'}
    assert schema_diff(old, same) == [], "whitespace alone is no difference"
    changed = {**old, "version": 3, "schema": '{"type":"record","name":"R2","fields":[]}',
               "references": [{"name": "a", "subject": "a", "version": 1}]}
    lines = schema_diff(old, changed)
    assert lines[0] == "references: none -> a=a:1", "changed references are named"
    assert '-  "name": "R",' in lines and '+  "name": "R2",' in lines, "the changed line, both ways"


def test_connection_options():
    conf = client_conf("http://a:1,http://b:2", ["timeout=3", "max.retries=1"], user_info="u:p", ca="ca.pem")
    assert conf == {"url": "http://a:1,http://b:2", "timeout": 3, "max.retries": 1,
                    "basic.auth.user.info": "u:p", "ssl.ca.location": "ca.pem"}, \
        "--conf items typed, shorthands under confluent-kafka's names"
    transport = transport_for({"url": "http://a:1", "bearer.auth.credentials.source": "STATIC_TOKEN",
                               "bearer.auth.token": "t"})
    assert transport.session.headers["Authorization"] == "Bearer t", "a static bearer token is sent"
    transport.close()
    with pytest.raises(ConnectionOptionError):
        transport_for({"url": "ftp://nope"})
    with pytest.raises(ConnectionOptionError):
        client_conf("http://a", ["novalue"])


def test_admin_commands_without_the_admin_extra_say_which_extra(monkeypatch, capsys):
    import importlib.util

    from registry import cli

    real = importlib.util.find_spec
    monkeypatch.setattr(cli.importlib.util, "find_spec", lambda name, *a: None if name == "rich" else real(name, *a))
    assert cli.main(["subjects", "--url", "http://127.0.0.1:9"]) == 2, "a missing extra is an error (2)"
    assert "pip install 'schema-registry-py[admin]'" in capsys.readouterr().err, "the message names the extra"


class ScriptedTarget:
    """A transport answering as a target registry would: with or without our bulk
    import route (`bulk`), refusing the batch whole when `refuse_batch`. Records calls."""

    def __init__(self, bulk: bool, refuse_batch: bool = False) -> None:
        self.bulk, self.refuse_batch = bulk, refuse_batch
        self.calls: list[tuple[str, str]] = []
        self.mode = "READWRITE"
        self.settings_sent: list[tuple[str | None, str]] = []  # (subject, "config" or "mode")

    def request(self, method: str, path: str, *, query=None, body=None):
        from confluent_kafka.schema_registry.error import SchemaRegistryError
        self.calls.append((method, path))
        if path == "/schemas":
            return []
        if path == "/mode":
            if method == "PUT":
                self.mode = body["mode"]
            return {"mode": self.mode}
        if path == "/import/schemas":
            if not self.bulk:
                raise SchemaRegistryError(404, 404, "HTTP 404 Not Found")
            if self.refuse_batch:
                raise SchemaRegistryError(422, 42201, "no")
            return {"results": [{"error_code": 42205, "message": "taken"} if entry["id"] == 2 else
                                {"subject": entry["subject"], "version": entry["version"], "id": entry["id"]}
                                for entry in body["schemas"]]}
        if method == "POST" and path.endswith("/versions"):
            if body["id"] == 2:
                raise SchemaRegistryError(422, 42205, "taken")
            return {"id": body["id"]}
        if path == "/import/settings":
            if not self.bulk:
                raise SchemaRegistryError(404, 404, "HTTP 404 Not Found")
            if self.refuse_batch:
                raise SchemaRegistryError(422, 422, "no")
            self.settings_sent += [(entry["subject"], next(k for k in entry if k != "subject"))
                                   for entry in body["settings"]]
            return {"results": [{"error_code": 42203, "message": "bad level"} if entry["subject"] == "b" else
                                {"subject": entry["subject"]} for entry in body["settings"]]}
        if method == "PUT" and path.startswith(("/config", "/mode/")):
            subject = path.split("/", 2)[2] if path.count("/") > 1 else None
            self.settings_sent.append((subject, path.split("/")[1]))
            if subject == "b":
                raise SchemaRegistryError(422, 42203, "bad level")
            return {}
        raise AssertionError(f"unexpected {method} {path}")


@pytest.mark.parametrize("bulk, refuse_batch, per_version_posts", [
    (True, False, 0),    # ours: one POST /import/schemas for the lot
    (False, False, 3),   # Confluent or Karapace: 404 there, one POST per version
    (True, True, 3),     # a batch refused whole: each version on its own, to learn which fails
])
def test_import_uses_the_bulk_route_where_the_target_has_it(bulk, refuse_batch, per_version_posts):
    from registry.admin.migration import import_into
    target = ScriptedTarget(bulk, refuse_batch)
    schemas = [version("a", 1, 1), version("b", 1, 2), version("c", 1, 3)]
    summary = import_into(target, schemas, [], prefix="", force=False, keep_import_mode=False, workers=2)
    assert summary.imported == 2 and [f["id"] for f in summary.failed] == [2], vars(summary)
    assert sum(1 for m, p in target.calls if m == "POST" and p.endswith("/versions")) == per_version_posts
    assert sum(1 for m, p in target.calls if p == "/import/schemas") == 1
    assert target.mode == "READWRITE", "a failure puts back the mode the target had; a re-run resumes"


@pytest.mark.parametrize("bulk, refuse_batch, puts", [
    (True, False, 0),    # ours: one POST /import/settings per kind
    (False, False, 4),   # Confluent or Karapace: one PUT per setting (3 configs, 1 mode)
    (True, True, 4),     # a batch refused whole: each setting on its own, to learn which fails
])
def test_settings_use_the_bulk_route_where_the_target_has_it_configs_before_modes(bulk, refuse_batch, puts):
    from registry.admin.migration import import_into
    target = ScriptedTarget(bulk, refuse_batch)
    settings = [{"subject": None, "config": {"compatibilityLevel": "FULL", "normalize": None}, "mode": "READWRITE"},
                {"subject": "a", "config": {"compatibilityLevel": "NONE"}, "mode": "READONLY"},
                {"subject": "b", "config": {"compatibilityLevel": "NOPE"}}]
    summary = import_into(target, [version("a", 1, 1)], settings, prefix="", force=False, keep_import_mode=False,
                          workers=2)
    assert summary.settings == 3, ("3 configs and a's mode less b's refused config; the global mode is not "
                                   "applied while a setting failed")
    assert [(f["subject"], f["error_code"]) for f in summary.failed] == [("b", 42203)], summary.failed
    assert set(target.settings_sent[:3]) == {(None, "config"), ("a", "config"), ("b", "config")}
    assert target.settings_sent[3:] == [("a", "mode")], "modes last, and never the global mode"
    assert sum(1 for m, p in target.calls if m == "PUT" and p != "/mode") == puts
    assert sum(1 for m, p in target.calls if p == "/import/settings") == (2 if bulk else 1)
