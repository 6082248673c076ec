"""`?format=serialized`: a Protobuf schema read as its base64 FileDescriptorProto, as
Confluent's registry answers it (and as confluent-kafka's Protobuf serializer registers it)."""
from __future__ import annotations

import base64

import pytest
from google.protobuf import descriptor_pb2

from tests.asgi_client import NodeClient

PROTO = 'syntax = "proto3";\npackage acme;\n\nmessage Order {\n  string id = 1;\n  int64 cents = 2;\n}\n'


@pytest.fixture(scope="module")
def client():
    with NodeClient() as the_client:
        yield the_client


@pytest.fixture(scope="module")
def schema_id(client) -> int:
    answer = client.post("/subjects/orders-value/versions", {"schema": PROTO, "schemaType": "PROTOBUF"})
    assert answer.status == 200, answer.body
    return answer.json()["id"]


def descriptor(text: str) -> descriptor_pb2.FileDescriptorProto:
    parsed = descriptor_pb2.FileDescriptorProto()
    parsed.ParseFromString(base64.b64decode(text, validate=True))
    return parsed


@pytest.mark.parametrize("target", ["/schemas/ids/{id}?format=serialized",
                                    "/subjects/orders-value/versions/1?format=serialized",
                                    "/subjects/orders-value/versions/latest?format=serialized"])
def test_the_schema_is_the_base64_file_descriptor(client, schema_id, target):
    answer = client.get(target.format(id=schema_id))
    assert answer.status == 200, answer.body
    file = descriptor(answer.json()["schema"])
    assert file.package == "acme" and [m.name for m in file.message_type] == ["Order"]
    assert [f.name for f in file.message_type[0].field] == ["id", "cents"]


@pytest.mark.parametrize("target", ["/schemas/ids/{id}/schema?format=serialized",
                                    "/subjects/orders-value/versions/1/schema?format=serialized"])
def test_the_bare_schema_text_too(client, schema_id, target):
    answer = client.get(target.format(id=schema_id))
    assert answer.status == 200
    assert descriptor(answer.body.decode()).message_type[0].name == "Order"


def test_the_serialized_form_registers_as_the_same_schema(client, schema_id):
    serialized = client.get(f"/schemas/ids/{schema_id}?format=serialized").json()["schema"]
    again = client.post("/subjects/orders-value/versions", {"schema": serialized, "schemaType": "PROTOBUF"})
    assert again.status == 200 and again.json()["id"] == schema_id, again.body


def test_other_formats_and_types_answer_the_text_as_stored(client, schema_id):
    default = client.get(f"/schemas/ids/{schema_id}?format=default").json()["schema"]
    assert default == client.get(f"/schemas/ids/{schema_id}").json()["schema"]
    avro = client.post("/subjects/avro/versions", {"schema": '"string"'}).json()["id"]
    assert client.get(f"/schemas/ids/{avro}?format=serialized").json()["schema"] == '"string"', \
        "serialized is Protobuf's format; Confluent answers other types with the default"
