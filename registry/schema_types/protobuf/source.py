"""The source text behind a descriptor: what protoc's SourceCodeInfo says was written where.

    source = Source(text, file_proto.source_code_info)
    source.text((4, 0, 2, 1, 6))   # how field 1 of message 0 wrote its type: "pkg.Foo"
    source.has((12,))              # whether the file has a `syntax` statement

Paths are SourceCodeInfo paths (field numbers and indexes into FileDescriptorProto).
Spans are protoc's: zero-based lines, columns counted in bytes with tabs advancing to
the next multiple of 8.
"""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence

from google.protobuf import descriptor_pb2

Path = tuple[int, ...]
Span = tuple[int, int, int, int]
"""start line, start column, end line, end column"""

_TAB = 8


class Source:
    """Source text indexed by SourceCodeInfo path. Immutable after construction."""

    def __init__(self, text: str, info: descriptor_pb2.SourceCodeInfo) -> None:
        self._lines = text.encode("utf-8").split(b"\n")
        self._tab_columns: dict[int, list[int]] = {}
        self._spans: dict[Path, list[Span]] = {}
        for location in info.location:
            span = tuple(location.span)
            if len(span) == 3:
                span = (span[0], span[1], span[0], span[2])
            if len(span) == 4:
                self._spans.setdefault(tuple(location.path), []).append(span)  # type: ignore[arg-type]

    def has(self, path: Path) -> bool:
        return path in self._spans

    def spans(self, path: Path) -> Sequence[Span]:
        return self._spans.get(path, ())

    def text(self, path: Path) -> str | None:
        """The text of the first location at `path`, or None if there is none."""
        spans = self._spans.get(path)
        return self.slice(spans[0]) if spans else None

    def texts(self, path: Path) -> Iterator[tuple[Span, str]]:
        """Every location at `path` (a statement written more than once), in source order."""
        for span in sorted(self._spans.get(path, ())):
            yield span, self.slice(span)

    def slice(self, span: Span) -> str:
        start_line, start_column, end_line, end_column = span
        if not (0 <= start_line <= end_line < len(self._lines)):
            return ""
        first = self._lines[start_line]
        start = self._offset(start_line, start_column)
        if start_line == end_line:
            return first[start:self._offset(end_line, end_column)].decode("utf-8", errors="replace")
        last = self._lines[end_line]
        parts = [first[start:], *self._lines[start_line + 1:end_line],
                 last[:self._offset(end_line, end_column)]]
        return b"\n".join(parts).decode("utf-8", errors="replace")

    def _offset(self, line_number: int, column: int) -> int:
        """The byte offset of protoc's `column` in a line (tabs advance to a tab stop).

        A line with tabs gets its byte-to-column table built once, so many lookups on
        one long line stay linear overall."""
        line = self._lines[line_number]
        if b"\t" not in line:
            return min(column, len(line))
        columns = self._tab_columns.get(line_number)
        if columns is None:
            columns, at = [], 0
            for byte in line:
                columns.append(at)
                at += _TAB - at % _TAB if byte == 9 else 1
            self._tab_columns[line_number] = columns
        return bisect_left(columns, column)


def contains(outer: Span, inner: Span) -> bool:
    """Whether `inner` lies within `outer`."""
    return outer[:2] <= inner[:2] and inner[2:] <= outer[2:]
