"""JSON Schema and Protobuf serializer/deserializer throughput: ours against the raw
libraries and confluent-kafka's serdes.

JSON: an 8-field object (string, integers, a nullable number, an array of strings, a
boolean, a nested object) through

  (a) raw: a jsonschema validator built once, `validate` + `orjson.dumps` behind the
      5-byte header; reading, `orjson.loads` of the payload + `validate`;
  (b) confluent-kafka's JSONSerializer / JSONDeserializer (validation on, their default);
  (c) ours: registry.serde.JSONSerializer / JSONDeserializer (validation on).

Protobuf: an Order message (integers, strings, a repeated nested message, a message
from an imported file, an enum, a map, a Timestamp) through

  (a) raw: header and index byte + `SerializeToString`; `FromString` of the payload;
  (b) confluent-kafka's ProtobufSerializer / ProtobufDeserializer;
  (c) ours: registry.serde.ProtobufSerializer / ProtobufDeserializer.

All paths talk to one real registry started here; registration happens before the
timed loops and every path's bytes and values are checked equal first. Figures are
medians of --runs interleaved runs (bench/serde.py's `rates`), per CPU second.
"(c) batch" is `serialize_batch` / `deserialize_batch`, the subject resolved once per batch.

A note on the per-message figures: (a) is a plain function, (c) a callable object, as
SerializingProducer requires; calling an object with `__call__` costs about 0.3 us more
than calling a function (measured: the same body in both), which on a ~1.4 us Protobuf
serialize is most of the gap to (a).

    .venv/bin/python bench/serde_json_protobuf.py [--count 20000] [--runs 5]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import orjson  # noqa: E402
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentClient  # noqa: E402
from confluent_kafka.schema_registry import json_schema as their_json  # noqa: E402
from confluent_kafka.schema_registry import protobuf as their_protobuf  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from jsonschema import Draft7Validator  # noqa: E402
from registry_process import registry  # noqa: E402
from serde import rates  # noqa: E402

from registry.client import SchemaRegistryClient  # noqa: E402
from registry.serde import JSONDeserializer, JSONSerializer, ProtobufDeserializer, ProtobufSerializer  # noqa: E402
from tests.protobuf_classes import generated  # noqa: E402

SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "PageView", "type": "object",
    "properties": {
        "id": {"type": "integer"}, "ts": {"type": "integer"}, "user": {"type": "string"},
        "score": {"oneOf": [{"type": "null"}, {"type": "number"}]},
        "tags": {"type": "array", "items": {"type": "string"}}, "active": {"type": "boolean"},
        "count": {"type": "integer", "minimum": 0},
        "geo": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                "required": ["lat", "lon"]},
    },
    "required": ["id", "ts", "user", "active"],
}
RECORD = {"id": 1234567890123, "ts": 1714566615250, "user": "alice@example.com", "score": 4.75,
          "tags": ["home", "promo", "mobile"], "active": True, "count": 42, "geo": {"lat": 59.9, "lon": 10.7}}


def table(title: str, results: dict[Any, float], ways: tuple[str, ...]) -> None:
    print(f"\n{title:22}{'(a) raw':>12}{'(b) confluent':>15}{'(c) ours':>12}{'(c)/(a)':>9}{'(c)/(b)':>9}"
          f"{'(c) batch':>12}{'batch/(a)':>11}")
    for way in ways:
        a, b, c, batch = (results[(way, k)] for k in ("a", "b", "c", "c batch"))
        print(f"{way:22}{a:>12,.0f}{b:>15,.0f}{c:>12,.0f}{c / a:>9.2f}{c / b:>9.2f}{batch:>12,.0f}{batch / a:>11.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=20_000, help="messages per timed run")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per figure (median reported)")
    args = parser.parse_args()
    count, runs = args.count, args.runs

    with tempfile.TemporaryDirectory() as tmp, registry(Path(tmp) / "registry") as (url, _pid):
        shop = generated(Path(tmp) / "protos")
        Order = shop.order_pb2.Order
        ours_client = SchemaRegistryClient({"url": url})
        theirs_client = ConfluentClient({"url": url})
        json_ctx = SerializationContext("bench-json", MessageField.VALUE)
        pb_ctx = SerializationContext("bench-protobuf", MessageField.VALUE)
        topic = {"subject.name.strategy.type": "TOPIC"}

        # ---- JSON ----
        schema_str = orjson.dumps(SCHEMA).decode()
        ours_json_ser = JSONSerializer(schema_str, ours_client)
        theirs_json_ser = their_json.JSONSerializer(schema_str, theirs_client, conf=topic)
        ours_json_de = JSONDeserializer(None, schema_registry_client=ours_client)
        theirs_json_de = their_json.JSONDeserializer(None, schema_registry_client=theirs_client, conf=topic)
        json_header = ours_json_ser(RECORD, json_ctx)[:5]
        validator = Draft7Validator(SCHEMA)

        def raw_json_write(obj: Any) -> bytes:
            validator.validate(obj)
            return json_header + orjson.dumps(obj)

        def raw_json_read(data: bytes) -> Any:
            obj = orjson.loads(data[5:])
            validator.validate(obj)
            return obj

        data = raw_json_write(RECORD)
        assert theirs_json_ser(RECORD, json_ctx) == data and ours_json_ser(RECORD, json_ctx) == data, \
            "every JSON path writes the same bytes"
        assert theirs_json_de(data, json_ctx) == ours_json_de(data, json_ctx) == raw_json_read(data) == RECORD

        # ---- Protobuf ----
        order = Order(id=1234567890123, customer="alice@example.com",
                      lines=[Order.Line(sku="tea", qty=2), Order.Line(sku="cup", qty=1)],
                      total=shop.common_pb2.Money(currency="EUR", units=12), status=Order.PAID,
                      labels={"channel": "web"}, note="leave at door")
        order.placed.seconds, order.placed.nanos = 1714566615, 250_000_000
        ours_pb_ser = ProtobufSerializer(Order, ours_client)
        theirs_pb_ser = their_protobuf.ProtobufSerializer(Order, theirs_client, topic)
        ours_pb_de = ProtobufDeserializer(Order)
        theirs_pb_de = their_protobuf.ProtobufDeserializer(Order, topic)
        pb_prefix = ours_pb_ser(order, pb_ctx)[:6]

        def raw_pb_write(message: Any) -> bytes:
            return pb_prefix + message.SerializeToString()

        def raw_pb_read(data: bytes) -> Any:
            return Order.FromString(data[6:])

        pb_data = raw_pb_write(order)
        assert theirs_pb_ser(order, pb_ctx) == pb_data and ours_pb_ser(order, pb_ctx) == pb_data, \
            "every Protobuf path writes the same bytes"
        assert theirs_pb_de(pb_data, pb_ctx) == ours_pb_de(pb_data, pb_ctx) == raw_pb_read(pb_data) == order

        records = [dict(RECORD, id=RECORD["id"] + i) for i in range(count)]
        json_datas = [raw_json_write(r) for r in records]
        orders = []
        for i in range(count):
            copy = Order()
            copy.CopyFrom(order)
            copy.id += i
            orders.append(copy)
        pb_datas = [raw_pb_write(o) for o in orders]

        def write(fn: Callable[..., bytes], items: list[Any], ctx: Any) -> Callable[[], Any]:
            return (lambda: [fn(x, ctx) for x in items]) if ctx is not None else (lambda: [fn(x) for x in items])

        cpu, _wall, _rounds = rates({
            ("JSON serialize", "a"): write(raw_json_write, records, None),
            ("JSON serialize", "b"): write(theirs_json_ser, records, json_ctx),
            ("JSON serialize", "c"): write(ours_json_ser, records, json_ctx),
            ("JSON serialize", "c batch"): lambda: ours_json_ser.serialize_batch(records, json_ctx),
            ("JSON deserialize", "a"): write(raw_json_read, json_datas, None),
            ("JSON deserialize", "b"): write(theirs_json_de, json_datas, json_ctx),
            ("JSON deserialize", "c"): write(ours_json_de, json_datas, json_ctx),
            ("JSON deserialize", "c batch"): lambda: ours_json_de.deserialize_batch(json_datas, json_ctx),
            ("Protobuf serialize", "a"): write(raw_pb_write, orders, None),
            ("Protobuf serialize", "b"): write(theirs_pb_ser, orders, pb_ctx),
            ("Protobuf serialize", "c"): write(ours_pb_ser, orders, pb_ctx),
            ("Protobuf serialize", "c batch"): lambda: ours_pb_ser.serialize_batch(orders, pb_ctx),
            ("Protobuf deserialize", "a"): write(raw_pb_read, pb_datas, None),
            ("Protobuf deserialize", "b"): write(theirs_pb_de, pb_datas, pb_ctx),
            ("Protobuf deserialize", "c"): write(ours_pb_de, pb_datas, pb_ctx),
            ("Protobuf deserialize", "c batch"): lambda: ours_pb_de.deserialize_batch(pb_datas, pb_ctx),
        }, count, runs)
        ours_client.close()
        theirs_client.close()

    print(f"serde throughput, msg per CPU second (median of {runs} interleaved runs x {count} messages); "
          f"JSON {len(data)} bytes, Protobuf {len(pb_data)} bytes on the wire")
    table("JSON Schema", cpu, ("JSON serialize", "JSON deserialize"))
    table("Protobuf", cpu, ("Protobuf serialize", "Protobuf deserialize"))


if __name__ == "__main__":
    main()
