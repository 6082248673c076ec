"""HTTP/1.1 response heads as bytes on the wire, for the listener (`registry.http.listener`)
and for the answers the registry keeps ready to send (`registry.http.fast_path`,
`registry.http.read_memo`): a kept answer carries its head built once, so answering it
again is one write of bytes already made."""
from __future__ import annotations

from http import HTTPStatus

STATUS_LINES = {status.value: b"HTTP/1.1 %d %s\r\n" % (status.value, status.phrase.encode("ascii"))
                for status in HTTPStatus}
# Header fields that frame a body on the wire.
FRAMING = frozenset({b"content-length", b"transfer-encoding"})


def status_line(status: int) -> bytes:
    return STATUS_LINES.get(status) or b"HTTP/1.1 %d \r\n" % status


def header_lines(headers: list[tuple[bytes, bytes]]) -> tuple[list[bytes], bool]:
    """Each header as `name: value` lines, and whether any of them frames the body.
    Raises ValueError for a CR or LF in one, which would split the answer (never sent:
    the listener answers 500)."""
    parts: list[bytes] = []
    framed = False
    for name, value in headers:
        if b"\n" in value or b"\r" in value or b"\n" in name or b"\r" in name:
            raise ValueError(f"a header that would split the answer: {name!r}")
        if not framed:
            framed = name.lower() in FRAMING
        parts += (name, b": ", value, b"\r\n")
    return parts, framed


def ok_head(headers: list[tuple[bytes, bytes]], length: int) -> bytes:
    """The whole head of a 200 answer of `length` body bytes on a connection that stays
    open: the status line, `headers` less any framing of their own, the Content-Length
    and the blank line."""
    lines, _ = header_lines([(name, value) for name, value in headers if name.lower() not in FRAMING])
    return b"".join([STATUS_LINES[200], *lines, b"content-length: %d\r\n\r\n" % length])
