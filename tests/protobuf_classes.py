"""Generated Protobuf message classes for the serde tests, compiled by protoc at test time.

    shop = generated(tmp_path)          # shop.order_pb2.Order, shop.common_pb2.Money, ...

Two files, so that registration of imports as references is exercised: shop/common.proto
(Money) and shop/order.proto (Order with a nested Line and an enum, a second top-level
message Refund, and an import of google/protobuf/timestamp.proto).
"""
from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import SimpleNamespace

from google.protobuf import descriptor_pool, message_factory
from grpc_tools import protoc

from registry.schema_types.protobuf import PROTOBUF

COMMON = """syntax = "proto3";
package shop;
message Money {
  string currency = 1;
  int64 units = 2;
}
"""

ORDER = """syntax = "proto3";
package shop;
import "shop/common.proto";
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  string customer = 2;
  repeated Line lines = 3;
  Money total = 4;
  google.protobuf.Timestamp placed = 5;
  Status status = 6;
  map<string, string> labels = 7;
  optional string note = 8;
  message Line {
    string sku = 1;
    int32 qty = 2;
  }
  enum Status {
    NEW = 0;
    PAID = 1;
  }
}
message Refund {
  int64 order_id = 1;
  Money amount = 2;
}
"""

_done: dict[str, SimpleNamespace] = {}


def generated(directory: Path) -> SimpleNamespace:
    """The generated modules (`common_pb2`, `order_pb2`), compiled into `directory` once per
    process (protobuf allows one definition of a file per process)."""
    if "shop" in _done:
        return _done["shop"]
    src = directory / "src"
    (src / "shop").mkdir(parents=True)
    (src / "shop" / "common.proto").write_text(COMMON)
    (src / "shop" / "order.proto").write_text(ORDER)
    out = directory / "out"
    out.mkdir()
    include = Path(protoc.__file__).parent / "_proto"
    code = protoc.main(["protoc", f"-I{src}", f"-I{include}", f"--python_out={out}",
                        "shop/common.proto", "shop/order.proto"])
    assert code == 0, "protoc compiles the test's .proto files"
    sys.path.insert(0, str(out))
    found = SimpleNamespace(common_pb2=importlib.import_module("shop.common_pb2"),
                            order_pb2=importlib.import_module("shop.order_pb2"))
    _done["shop"] = found
    return found


def order_v2() -> type:
    """A second version of shop.Order (a `string channel = 9` added), built in a descriptor
    pool of its own, as the same file cannot be generated twice into one process."""
    text = ORDER.replace("  optional string note = 8;\n", "  optional string note = 8;\n  string channel = 9;\n")
    parsed = PROTOBUF.parse(text, {"shop/common.proto": COMMON})
    pool = descriptor_pool.DescriptorPool()
    for file in parsed.file_descriptor_set().file:
        pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))
