"""Just enough of the Kafka wire protocol to ask a broker for cluster metadata.

Standard library only (no client library is installed when this runs): ApiVersions v0,
then Metadata v4 with no topics.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from infra.errors import InfraError


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by broker")
        buf += chunk
    return bytes(buf)


def _kafka_call(s: socket.socket, api_key: int, version: int, corr: int, body: bytes) -> bytes:
    client_id = b"infra-probe"
    # Request header v1 (non-flexible): api_key, api_version, correlation_id, client_id.
    msg = struct.pack(">hhih", api_key, version, corr, len(client_id)) + client_id + body
    s.sendall(struct.pack(">i", len(msg)) + msg)
    (size,) = struct.unpack(">i", _recv_exact(s, 4))
    resp = _recv_exact(s, size)
    if struct.unpack_from(">i", resp)[0] != corr:
        raise InfraError("kafka probe: correlation id mismatch")
    return resp[4:]  # response header v0 is just the correlation id


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> Any:
        vals = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return vals[0] if len(vals) == 1 else vals

    def string(self) -> str | None:
        n = self.take(">h")
        if n < 0:
            return None
        self.pos += n
        return self.data[self.pos - n : self.pos].decode()


_API_METADATA, _API_VERSIONS = 3, 18
_METADATA_VERSION = 4  # the oldest version Kafka 4.x still accepts (KIP-896)


def kafka_metadata(s: socket.socket) -> dict[str, Any]:
    # ApiVersions v0 is answered by every broker version; use it to make sure the
    # broker still speaks the Metadata version we encode by hand.
    r = _Reader(_kafka_call(s, _API_VERSIONS, 0, 1, b""))
    if r.take(">h") != 0:
        raise InfraError("kafka probe: ApiVersions failed")
    ranges = {}
    for _ in range(r.take(">i")):
        key, lo, hi = r.take(">hhh")
        ranges[key] = (lo, hi)
    lo, hi = ranges.get(_API_METADATA, (1, 0))
    if not lo <= _METADATA_VERSION <= hi:
        raise InfraError(f"kafka probe: broker does not accept Metadata v{_METADATA_VERSION}")
    # Metadata v4 body: topics = [] (none, we only want brokers), allow_auto_create = false.
    r = _Reader(_kafka_call(s, _API_METADATA, _METADATA_VERSION, 2, struct.pack(">ib", 0, 0)))
    r.take(">i")  # throttle_time_ms
    brokers = []
    for _ in range(r.take(">i")):
        node_id = r.take(">i")
        host = r.string()
        port = r.take(">i")
        r.string()  # rack
        brokers.append((node_id, host, port))
    cluster_id = r.string()
    controller_id = r.take(">i")
    return {"brokers": brokers, "cluster_id": cluster_id, "controller_id": controller_id}
