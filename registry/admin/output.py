"""What the commands print: tables for people, JSON for scripts, errors as one line.

    out = Output(as_json=False)
    out.table(["subject"], [["orders-value"]], data=["orders-value"])

With `as_json` every command prints exactly one JSON document on stdout (`data`),
whatever it would have shown as a table. Errors go to stderr as one line carrying
Confluent's error code; the commands exit 2 after one.
"""
from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import Any

import orjson
from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table

from registry.client import SchemaRegistryError
from registry.client.transport import RegistryUnreachable

EXIT_OK, EXIT_FAILED_CHECK, EXIT_ERROR = 0, 1, 2


def dumps(data: Any) -> str:
    return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()


class Output:
    """Where a command's answer goes. Not thread-safe: print from one thread."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        # soft_wrap: long schema lines and subjects are not cut at the terminal's width.
        self.console = Console(soft_wrap=True, highlight=False)
        self.errors = Console(stderr=True, soft_wrap=True, highlight=False)

    def json(self, data: Any) -> None:
        sys.stdout.write(dumps(data) + "\n")
        sys.stdout.flush()

    def table(self, columns: Sequence[str], rows: Iterable[Sequence[Any]], data: Any) -> None:
        """`rows` under `columns` for people; `data` as JSON with --json."""
        if self.as_json:
            self.json(data)
            return
        table = Table(*columns, box=None, header_style="bold", pad_edge=False)
        for row in rows:
            table.add_row(*("" if cell is None else str(cell) for cell in row))
        self.console.print(table)

    def text(self, message: str, data: Any = None) -> None:
        """A sentence for people; `data` (default: {"message": message}) with --json."""
        if self.as_json:
            self.json({"message": message} if data is None else data)
        else:
            self.console.print(message, markup=False)

    def schema(self, text: str, schema_type: str) -> None:
        """A schema's text, pretty and highlighted on a terminal, plain when piped."""
        lexer = "protobuf" if schema_type == "PROTOBUF" else "json"
        pretty = pretty_schema(text, schema_type)
        if self.console.is_terminal:
            self.console.print(Syntax(pretty, lexer, word_wrap=True))
        else:
            sys.stdout.write(pretty + "\n")

    def error(self, message: str) -> int:
        """One line on stderr; returns the exit code for errors."""
        self.errors.print(f"schema-registry: {message}", markup=False)
        return EXIT_ERROR


def pretty_schema(text: str, schema_type: str) -> str:
    """JSON schemas (Avro, JSON Schema) indented, key order kept; Protobuf as stored."""
    if schema_type == "PROTOBUF":
        return text.rstrip("\n")
    try:
        return dumps(orjson.loads(text))
    except orjson.JSONDecodeError:
        return text


def describe_error(exc: BaseException) -> str:
    """The one line an error prints as: Confluent's code and message, or why no node answered."""
    if isinstance(exc, SchemaRegistryError):
        return f"error {exc.error_code} (HTTP {exc.http_status_code}): {exc.error_message}"
    if isinstance(exc, RegistryUnreachable):
        return f"unreachable: {exc}"
    return f"error: {exc}"
