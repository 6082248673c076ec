"""Texts Confluent's clients match on, and what the audit log names (issue 48, items 6
and 11)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from registry.http.security.passwords import users_file_line
from tests.asgi_client import NodeClient
from tests.unit.polling import wait_until
from tests.unit.registry.http.test_request_guarantees import basic

RECORD = '{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}'


def test_a_referenced_version_cannot_be_deleted_and_the_message_names_its_key_as_confluent_does():
    with NodeClient() as client:
        assert client.post("/subjects/ra/versions", {"schema": RECORD}).status == 200
        referring = {"schema": '{"type":"record","name":"T","fields":[{"name":"r","type":"R"}]}',
                     "references": [{"name": "R", "subject": "ra", "version": 1}]}
        assert client.post("/subjects/rb/versions", referring).status == 200
        for target in ("/subjects/ra/versions/1", "/subjects/ra"):
            answer = client.delete(target)
            assert answer.status == 422, answer.body
            assert answer.json() == {"error_code": 42206, "message": "One or more references exist to the schema "
                                     "{magic=1,keytype=SCHEMA,subject=ra,version=1}."}, answer.body


def test_a_registration_refused_as_an_import_is_audited_as_an_import(tmp_path: Path):
    users, rules, audit = tmp_path / "users", tmp_path / "rules.json", tmp_path / "audit.log"
    users.write_text(users_file_line("alice", "a-pw", time_cost=1, memory_kib=8192) + "\n")
    rules.write_text(json.dumps({"rules": [{"principal": "alice", "operations": ["read", "write"],
                                            "subject_prefix": "team-a."}]}))
    with NodeClient(**{"authentication.method": "BASIC", "authentication.users.file": str(users),
                       "authorization.rules.file": str(rules), "audit.log.file": str(audit)}) as client:
        answer = client.post("/subjects/team-a.x/versions", {"schema": RECORD, "id": 77},
                             headers=basic("alice", "a-pw"))
        assert answer.status == 403, answer.body
        wait_until(lambda: audit.exists() and audit.read_text().strip(), "the refusal is audited")
        event = json.loads(audit.read_text().splitlines()[-1])
        assert (event["operation"], event["result"], event["principal"]) == ("import", "denied", "alice"), event


def test_format_resolved_writes_an_avro_schemas_referenced_types_inline():
    with NodeClient() as client:
        address = '{"type":"record","name":"Address","namespace":"com.acme","fields":[{"name":"city","type":"string"}]}'
        assert client.post("/subjects/address/versions", {"schema": address}).status == 200
        user = {"schema": '{"type":"record","name":"User","namespace":"com.acme","fields":['
                          '{"name":"home","type":"Address"},{"name":"work","type":"Address"}]}',
                "references": [{"name": "com.acme.Address", "subject": "address", "version": 1}]}
        schema_id = client.post("/subjects/user/versions", user).json()["id"]
        inline = ('{"type":"record","name":"User","namespace":"com.acme","fields":[{"name":"home","type":'
                  '{"type":"record","name":"Address","fields":[{"name":"city","type":"string"}]}},'
                  '{"name":"work","type":"Address"}]}')
        for target in (f"/schemas/ids/{schema_id}?format=resolved", "/subjects/user/versions/1?format=resolved"):
            body = client.get(target).json()
            assert body["schema"] == inline, (target, body)
        assert client.get(f"/schemas/ids/{schema_id}/schema?format=resolved").body.decode() == inline
        plain = client.get(f"/schemas/ids/{schema_id}").json()["schema"]
        assert '"type":"Address"' in plain and "city" not in plain, "without the format: as stored"


@pytest.mark.parametrize("accept", ["text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2", "*/does_not_matter",
                                    "application/json; q=.5", "*"])
def test_accept_headers_read_as_jersey_reads_them(accept: str):
    with NodeClient() as client:
        for target in ("/subjects", "/schemas/types", "/config"):
            answer = client.get(target, headers={"Accept": accept})
            assert answer.status == 200, (accept, target, answer.body)


def test_what_is_not_json_answers_whatever_the_accept_header_says():
    with NodeClient() as client:
        missing = client.get("/no/such/path", headers={"Accept": "text/html"})
        assert missing.status == 404 and missing.json()["error_code"] == 404, "a path no route names: 404 first"
        assert client.get("/subjects", headers={"Accept": "text/html"}).status == 406, "JSON routes still negotiate"
        metrics = client.get("/metrics", headers={"Accept": "text/plain;version=0.0.4"})
        assert metrics.status == 200 and metrics.content_type.startswith("text/plain"), metrics.headers
        text = metrics.body.decode()
        assert "process_resident_memory_bytes" in text and "process_cpu_seconds_total" in text
        assert 'schema_registry_build_info{python="' in text
        for target, accept in (("/ui", "text/html"), ("/ui/app.js", "application/javascript")):
            answer = client.get(target, headers={"Accept": accept})
            assert answer.status in (200, 404) and answer.status != 406, (target, answer.status)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-8-sig"])
def test_a_json_body_in_utf16_or_utf32_is_read_as_jackson_reads_it(encoding: str):
    with NodeClient() as client:
        body = json.dumps({"schema": '{"type":"record","name":"R","doc":"Ü ä","fields":[{"name":"a","type":"int"}]}'},
                          ensure_ascii=False).encode(encoding)
        charset = encoding.split("-sig")[0]
        answer = client.post("/subjects/wide/versions", body,
                             headers={"Content-Type": f"application/vnd.schemaregistry.v1+json; charset={charset}"})
        assert answer.status == 200, answer.body
        assert json.loads(client.get("/subjects/wide/versions/1").json()["schema"])["doc"] == "Ü ä"


def test_an_unsupported_body_type_answers_jerseys_415():
    with NodeClient() as client:
        answer = client.post("/subjects/s/versions", '{"schema":"\\"int\\""}', headers={"Content-Type": "text/xml"})
        assert answer.status == 415
        assert answer.json() == {"error_code": 415, "message": "HTTP 415 Unsupported Media Type"}
