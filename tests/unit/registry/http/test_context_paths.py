"""`/contexts/{context}/...` serves every subject, schema, config and mode route as the
qualified request it stands for (issue 48, item 3; Confluent's ContextFilter), through
the whole front end: routed, authorized on the qualified subject, and answered alike by
every way."""
from __future__ import annotations

import pytest

from registry.http.context_paths import context_path
from tests.asgi_client import NodeClient

RECORD = '{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}'


@pytest.mark.parametrize("method, path, query, expected", [
    ("POST", "/contexts/.c1/subjects/s2/versions", b"", ("/subjects/:.c1:s2/versions", b"")),
    ("GET", "/contexts/c1/subjects/s2/versions/latest", b"", ("/subjects/:.c1:s2/versions/latest", b"")),
    ("GET", "/contexts/.c1/subjects/:.other:s/versions", b"", ("/subjects/:.other:s/versions", b"")),
    ("GET", "/contexts/.c1/subjects", b"", ("/subjects", b"subjectPrefix=:.c1:")),
    ("GET", "/contexts/.c1/subjects", b"subjectPrefix=a&deleted=true",
     ("/subjects", b"deleted=true&subjectPrefix=:.c1:a")),
    ("GET", "/contexts/.c1/schemas/ids/3", b"", ("/schemas/ids/3", b"subject=:.c1:")),
    ("GET", "/contexts/.c1/schemas/ids/3/schema", b"subject=s", ("/schemas/ids/3/schema", b"subject=:.c1:s")),
    ("PUT", "/contexts/.c1/config", b"", ("/config/:.c1:", b"")),
    ("GET", "/contexts/.c1/config/s2", b"", ("/config/:.c1:s2", b"")),
    ("PUT", "/contexts/:.c1:/mode", b"", ("/mode/:.c1:", b"")),
    ("POST", "/contexts/.c1/compatibility/subjects/s2/versions/latest", b"",
     ("/compatibility/subjects/:.c1:s2/versions/latest", b"")),
    ("GET", "/contexts/./subjects/s/versions", b"", ("/subjects/s/versions", b"")),
    ("DELETE", "/contexts/.c1", b"", None),
    ("GET", "/contexts", b"", None),
])
def test_context_paths_read_as_confluent_rewrites_them(method, path, query, expected):
    assert context_path(method, path, query) == expected


def test_a_client_that_speaks_only_context_paths_works_end_to_end():
    with NodeClient() as client:
        answer = client.post("/contexts/.c1/subjects/s2/versions", {"schema": RECORD})
        assert answer.status == 200, answer.body
        schema_id = answer.json()["id"]
        assert client.get("/subjects/:.c1:s2/versions").json() == [1], "stored under the qualified subject"
        for _ in range(3):  # again, from whatever the first answer left ready
            assert client.get("/contexts/.c1/subjects").json() == [":.c1:s2"]
            got = client.get(f"/contexts/.c1/schemas/ids/{schema_id}")
            assert got.status == 200 and got.json()["schema"] == RECORD, got.body
            assert client.get("/contexts/.c1/subjects/s2/versions/latest").json()["subject"] == ":.c1:s2"
            lookup = client.post("/contexts/.c1/subjects/s2", {"schema": RECORD})
            assert lookup.status == 200 and lookup.json()["version"] == 1, lookup.body
        assert client.put("/contexts/.c1/config", {"compatibility": "NONE"}).status == 200
        assert client.get("/config/:.c1:").json()["compatibilityLevel"] == "NONE"
        assert client.put("/contexts/.c1/mode/s2", {"mode": "READONLY"}).status == 200
        assert client.get("/mode/:.c1:s2").json() == {"mode": "READONLY"}
        assert client.get("/subjects/s2/versions").status == 404, "nothing in the default context"
        bad = client.get("/contexts/a:b/subjects")
        assert bad.status == 400 and set(bad.json()) == {"error_code", "message"}, bad.body
