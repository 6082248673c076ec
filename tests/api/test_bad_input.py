"""Malformed requests: each gets a 4xx with Confluent's error body, never a 5xx, and
writes nothing (DESIGN invariant 6).

Every case compares the registry's whole visible state before and after: every schema
(soft-deleted included), every subject, the global config and mode, and the largest id.
"""
from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.support import RegistryProcess, assert_error, ok_json, path_of, record, register

SEED = "bad-input-seed"
SEED_SCHEMA = record("Seed", ("id", "long"))
GOOD = record("Good", ("id", "long"))  # a valid schema no case manages to register


def seed(server: RegistryProcess) -> RegistryProcess:
    """A subject with one version and a subject-level config, for requests to aim at."""
    assert register(server, SEED, SEED_SCHEMA) == 1, "the seed schema is the registry's first"
    ok_json(server.put(f"/config/{SEED}", {"compatibility": "FULL"}), "seed subject config")
    return server


@pytest.fixture(scope="module")
def server(registry: RegistryProcess) -> RegistryProcess:
    return seed(registry)


def state(server: RegistryProcess) -> dict[str, Any]:
    return {
        "schemas": ok_json(server.get("/schemas", params={"deleted": "true"}), "GET /schemas"),
        "subjects": ok_json(server.get("/subjects", params={"deleted": "true"}), "GET /subjects"),
        "config": ok_json(server.get("/config"), "GET /config"),
        "mode": ok_json(server.get("/mode"), "GET /mode"),
        "seed_config": ok_json(server.get(f"/config/{SEED}"), "GET /config/seed"),
        "max_id": ok_json(server.get("/schemas/ids/1", params={"fetchMaxId": "true"}), "max id").get("maxId"),
    }


def check(server: RegistryProcess, method: str, path: str, status: int | tuple[int, ...],
          codes: tuple[int, ...], what: str, **kwargs: Any) -> None:
    """Send the request; it must be refused with `status` and one of `codes`, changing nothing."""
    before = state(server)
    response = server.request(method, path, **kwargs)
    assert response.status_code < 500, f"{what}: a malformed request must never be a 5xx: " \
                                       f"{response.status_code} {response.text[:300]}"
    statuses = status if isinstance(status, tuple) else (status,)
    assert response.status_code in statuses, f"{what}: expected HTTP {statuses}, got " \
                                             f"{response.status_code}: {response.text[:300]}"
    assert_error(response, response.status_code, codes, what)
    assert state(server) == before, f"{what}: a refused request must write nothing"


REGISTER = f"/subjects/{SEED}/versions"
LOOKUP = f"/subjects/{SEED}"
COMPAT = f"/compatibility/subjects/{SEED}/versions/latest"
BODY_ENDPOINTS = [("POST", REGISTER), ("POST", LOOKUP), ("POST", COMPAT), ("POST", "/subjects/bad-input-new/versions")]


# ---- bodies that are not a JSON object ------------------------------------------------------

NOT_AN_OBJECT = [
    ("truncated", '{"schema": ', 400, (400,)),
    ("garbage", "schema please", 400, (400,)),
    ("trailing-garbage", json.dumps({"schema": GOOD}) + " x", 400, (400,)),
    ("not-utf8", b"\xff\xfe{\x00", 400, (400,)),
    ("empty", "", 422, (422,)),
    ("null", "null", 422, (422,)),
    ("array", json.dumps([{"schema": GOOD}]), 422, (422,)),
    ("number", "42", 422, (422,)),
    ("string", json.dumps(GOOD), 422, (422,)),
    ("deep-array", "[" * 100_000 + "]" * 100_000, 400, (400,)),
    ("deep-object", '{"a":' * 100_000 + "1" + "}" * 100_000, 400, (400,)),
    ("huge-int-id", '{"schema": %s, "id": %s}' % (json.dumps(GOOD), "9" * 400), (400, 422), (400, 422, 42205)),
]


@pytest.mark.parametrize(("method", "path"), BODY_ENDPOINTS, ids=["register", "lookup", "compat", "register-new"])
@pytest.mark.parametrize(("name", "raw", "status", "codes"), NOT_AN_OBJECT, ids=[c[0] for c in NOT_AN_OBJECT])
def test_bodies_that_are_not_a_json_object(server, method, path, name, raw, status, codes):
    check(server, method, path, status, codes, f"{method} {path} with a {name} body", raw=raw)


@pytest.mark.parametrize(("path", "name", "raw"), [
    ("/config", "truncated", '{"compatibility": '), ("/config", "array", '["FULL"]'),
    (f"/config/{SEED}", "garbage", "FULL"), ("/mode", "truncated", '{"mode": '), ("/mode", "number", "1"),
    (f"/mode/{SEED}", "array", '["READONLY"]'), ("/config", "deep", "[" * 50_000 + "]" * 50_000),
])
def test_config_and_mode_bodies_that_are_not_a_json_object(server, path, name, raw):
    check(server, "PUT", path, (400, 422), (400, 422, 42203, 42204), f"PUT {path} with a {name} body", raw=raw)


# ---- wrong field types -----------------------------------------------------------------------

WRONG_FIELDS = [
    ("schema-number", {"schema": 1}, (42201, 422)),
    ("schema-object", {"schema": {"type": "string"}}, (42201, 422)),
    ("schema-list", {"schema": ["int"]}, (42201, 422)),
    ("schema-missing", {}, (42201, 422)),
    ("schema-null", {"schema": None}, (42201, 422)),
    ("schema-empty", {"schema": ""}, (42201, 422)),
    ("schema-blank", {"schema": "   "}, (42201, 422)),
    ("references-object", {"schema": GOOD, "references": {}}, (422,)),
    ("references-string", {"schema": GOOD, "references": "none"}, (422,)),
    ("reference-number", {"schema": GOOD, "references": [1]}, (422,)),
    ("reference-no-name", {"schema": GOOD, "references": [{"subject": SEED, "version": 1}]}, (422,)),
    ("reference-version-string", {"schema": GOOD, "references": [{"name": "x", "subject": SEED, "version": "1"}]},
     (422, 42201, 42202)),
    ("reference-version-zero", {"schema": GOOD, "references": [{"name": "x", "subject": SEED, "version": 0}]},
     (422, 42201, 42202)),
    ("reference-missing-subject", {"schema": GOOD, "references": [{"name": "x", "subject": "bad-input-none",
                                                                   "version": 1}]}, (42201,)),
    ("schema-type-unknown", {"schema": GOOD, "schemaType": "XML"}, (42201, 422)),
    ("schema-type-number", {"schema": GOOD, "schemaType": 7}, (42201, 422)),
]


@pytest.mark.parametrize(("name", "body", "codes"), WRONG_FIELDS, ids=[c[0] for c in WRONG_FIELDS])
@pytest.mark.parametrize(("method", "path"), BODY_ENDPOINTS, ids=["register", "lookup", "compat", "register-new"])
def test_wrong_field_types(server, method, path, name, body, codes):
    check(server, method, path, 422, codes, f"{method} {path} with {name}", body=body)


REGISTER_ONLY_FIELDS = [
    ("version-string", {"schema": GOOD, "version": "1"}, (422, 42205)),
    ("version-float", {"schema": GOOD, "version": 1.5}, (422, 42205)),
    ("version-zero", {"schema": GOOD, "version": 0}, (422, 42202, 42205)),
    ("version-huge", {"schema": GOOD, "version": 2**31}, (422, 42202, 42205)),
    ("id-string", {"schema": GOOD, "id": "one"}, (422, 42205)),
    ("id-bool", {"schema": GOOD, "id": True}, (422, 42205)),
    ("id-huge", {"schema": GOOD, "id": 2**31}, (422, 42205)),
    ("id-very-huge", {"schema": GOOD, "id": 2**63 - 1}, (422, 42205)),
]


@pytest.mark.parametrize(("name", "body", "codes"), REGISTER_ONLY_FIELDS, ids=[c[0] for c in REGISTER_ONLY_FIELDS])
def test_wrong_id_and_version_fields(server, name, body, codes):
    check(server, "POST", REGISTER, 422, codes, f"register with {name}", body=body)


# ---- invalid schemas -------------------------------------------------------------------------

INVALID_AVRO = [
    ("not-json", "this is not json"),
    ("unknown-type", '{"type": "nope"}'),
    ("unknown-named-type", record("R", ("a", "com.nowhere.Missing"))),
    ("record-without-name", '{"type": "record", "fields": []}'),
    ("record-without-fields", '{"type": "record", "name": "R"}'),
    ("bad-name", '{"type": "record", "name": "1R", "fields": []}'),
    ("duplicate-field", record("R", ("a", "int"), ("a", "string"))),
    ("enum-duplicate-symbols", '{"type": "enum", "name": "E", "symbols": ["A", "A"]}'),
    ("enum-bad-symbol", '{"type": "enum", "name": "E", "symbols": ["1A"]}'),
    ("fixed-without-size", '{"type": "fixed", "name": "F"}'),
    ("fixed-huge-size", '{"type": "fixed", "name": "F", "size": %s}' % ("9" * 30)),
    ("array-without-items", '{"type": "array"}'),
    ("map-without-values", '{"type": "map"}'),
    ("union-duplicate", '["int", "int"]'),
    ("union-nested", '["null", ["int", "string"]]'),
    ("redefined-name", '{"type": "record", "name": "R", "fields": [{"name": "a", "type": '
                       '{"type": "record", "name": "R", "fields": []}}]}'),
    ("number", "42"),
    ("deeply-nested", '{"type": "array", "items": ' * 5000 + '"int"' + "}" * 5000),
    ("deep-json", "[" * 100_000 + "]" * 100_000),
]


@pytest.mark.parametrize(("name", "schema"), INVALID_AVRO, ids=[c[0] for c in INVALID_AVRO])
@pytest.mark.parametrize(("method", "path"), BODY_ENDPOINTS, ids=["register", "lookup", "compat", "register-new"])
def test_invalid_avro_schemas_are_42201(server, method, path, name, schema):
    check(server, method, path, 422, (42201,), f"{method} {path} with an invalid Avro schema ({name})",
          body={"schema": schema})


# ---- invalid versions and ids in paths --------------------------------------------------------

BAD_VERSIONS = ["0", "-2", "abc", "2147483648", "99999999999999999999", "1.5", "0x10", "latest1", "%20"]
VERSION_ROUTES = [
    ("GET", f"/subjects/{SEED}/versions/{{v}}", None),
    ("GET", f"/subjects/{SEED}/versions/{{v}}/schema", None),
    ("GET", f"/subjects/{SEED}/versions/{{v}}/referencedby", None),
    ("DELETE", f"/subjects/{SEED}/versions/{{v}}", None),
    ("DELETE", f"/subjects/{SEED}/versions/{{v}}?permanent=true", None),
    ("POST", f"/compatibility/subjects/{SEED}/versions/{{v}}", {"schema": SEED_SCHEMA}),
]


@pytest.mark.parametrize("version", BAD_VERSIONS)
@pytest.mark.parametrize(("method", "template", "body"), VERSION_ROUTES,
                         ids=["get", "get-schema", "referencedby", "delete", "delete-permanent", "compat"])
def test_invalid_versions_in_paths_are_42202(server, method, template, body, version):
    check(server, method, template.format(v=version), 422, (42202,), f"{method} version {version!r}", body=body)


BAD_IDS = ["0", "-1", "abc", "2147483648", "99999999999999999999", "1.0", "%20"]


@pytest.mark.parametrize("schema_id", BAD_IDS)
@pytest.mark.parametrize("suffix", ["", "/schema", "/subjects", "/versions"])
def test_invalid_or_out_of_range_ids_are_404(server, schema_id, suffix):
    check(server, "GET", f"/schemas/ids/{schema_id}{suffix}", 404, (40403, 404), f"schema id {schema_id!r}")


# ---- config and mode values --------------------------------------------------------------------

BAD_LEVELS = ["SIDEWAYS", "", "BACKWARDS", "FULL TRANSITIVE", 1, ["FULL"], {"level": "FULL"}]


@pytest.mark.parametrize("level", BAD_LEVELS, ids=[repr(level) for level in BAD_LEVELS])
@pytest.mark.parametrize("path", ["/config", f"/config/{SEED}", "/config/bad-input-new"])
def test_unknown_compatibility_levels_are_42203(server, path, level):
    check(server, "PUT", path, 422, (42203,), f"PUT {path} level {level!r}", body={"compatibility": level})


BAD_MODES = ["WRITEONLY", "", "READ_ONLY", "read write", 5, None, ["IMPORT"]]


@pytest.mark.parametrize("mode", BAD_MODES, ids=[repr(mode) for mode in BAD_MODES])
@pytest.mark.parametrize("path", ["/mode", f"/mode/{SEED}", "/mode/bad-input-new"])
def test_unknown_modes_are_42204(server, path, mode):
    check(server, "PUT", path, 422, (42204,), f"PUT {path} mode {mode!r}", body={"mode": mode})


# ---- content types, query parameters ------------------------------------------------------------


@pytest.mark.parametrize("content_type", ["text/plain", "application/xml", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", "image/png"])
@pytest.mark.parametrize(("method", "path"), [("POST", REGISTER), ("POST", LOOKUP), ("POST", COMPAT),
                                              ("PUT", "/config"), ("PUT", "/mode")])
def test_wrong_content_type_is_415(server, method, path, content_type):
    body = {"schema": GOOD, "compatibility": "NONE", "mode": "READONLY"}
    check(server, method, path, 415, (415,), f"{method} {path} as {content_type}", body=body,
          content_type=content_type)


@pytest.mark.parametrize("query", ["limit=abc", "offset=x", "limit=1.5"])
def test_malformed_integer_query_parameters(server, query):
    check(server, "GET", f"/schemas?{query}", (400, 404, 422), (400, 404, 422), f"GET /schemas?{query}")


def test_non_ascii_and_control_bytes_in_versions_do_not_crash(server):
    check(server, "GET", f"/subjects/{SEED}/versions/{path_of('ünï')}", 422, (42202,), "non-ASCII version")
    check(server, "GET", f"/subjects/{SEED}/versions/{path_of(chr(1))}", 422, (42202,), "control-byte version")


# ---- oversized bodies ----------------------------------------------------------------------------


def test_oversized_bodies_are_413_with_an_error_body(start_registry):
    small = seed(start_registry(env={"SCHEMA_REGISTRY_MAX_REQUEST_BYTES": "2048"}))
    big = record("Big", *[(f"field_{i:04d}", "string") for i in range(200)])
    assert len(big) > 2048, "the big schema alone exceeds the limit"
    for method, path, body in [("POST", REGISTER, {"schema": big}), ("POST", LOOKUP, {"schema": big}),
                               ("POST", COMPAT, {"schema": big}),
                               ("PUT", "/config", {"compatibility": "NONE", "pad": "x" * 4096}),
                               ("PUT", "/mode", {"mode": "READONLY", "pad": "x" * 4096})]:
        check(small, method, path, 413, (413,), f"{method} {path} with a body over the limit", body=body)
    fits = record("Fits", ("id", "long"))
    assert register(small, f"{SEED}-2", fits) > 0, "a body under the limit is still served afterwards"
