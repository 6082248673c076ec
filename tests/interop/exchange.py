"""Bytes exchanged between the interop programs and Python's writers in one format (JSON
Schema or Protobuf): who writes, who reads what, and in which order.

    found = exchange(url, prefix, "json", python_written, json_schema=..., json_value=...)
    found.write("go")                    # the Go program's write step: {"hex", "decoded"}
    found.read("confluent-js", "go")     # what Confluent's JS read of Go's bytes
    found.payload("ours")                # the bytes our serializer wrote

A program writes `<program prefix>-<tag>` (`-json`, `-proto`) and reads what was written
before it ran; a program that ran before a later writer runs again with `"write": false`
to read that writer's bytes. So every program reads every other writer's bytes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.interop.clients import CLIENTS, plan, run

Steps = dict[str, dict[str, Any]]
Written = dict[str, str]  # {"writer", "topic", "hex"}, as a plan's `read` lists them

# The programs' step and topic names per mode: `<tag>_write`, `<tag>_read_<writer>`.
TAGS = {"json": "json", "protobuf": "proto"}
# The programs that write and read in both modes, in the order they run.
PROGRAMS = ("go", "confluent-js")


@dataclass(frozen=True)
class Exchange:
    tag: str
    written: dict[str, Written]  # by writer; a program whose write failed is absent
    steps: dict[str, Steps]  # by program, its runs' steps together

    def write(self, program: str) -> dict[str, Any]:
        return self.steps[program].get(f"{self.tag}_write", {"ok": False, "error": "no write step reported"})

    def read(self, reader: str, writer: str) -> dict[str, Any]:
        """The reader's step on the writer's bytes; AssertionError if it never had them."""
        self._wrote(writer)
        step = self.steps[reader].get(f"{self.tag}_read_{writer}")
        assert step is not None, f"{reader} reported nothing for {writer}'s bytes"
        return step

    def payload(self, writer: str) -> bytes:
        self._wrote(writer)
        return bytes.fromhex(self.written[writer]["hex"])

    def _wrote(self, writer: str) -> None:
        assert writer in self.written, f"{writer} wrote no bytes: {self.write(writer) if writer in self.steps else ''}"

    def topic(self, writer: str) -> str:
        return self.written[writer]["topic"]


def exchange(url: str, prefix: str, mode: str, python_written: dict[str, Written], **extra: Any) -> Exchange:
    """Run PROGRAMS in `mode` against the registry at `url`, each under `<prefix>-<name>`,
    on `extra` (the mode's schema and value) and every writer's bytes before it.

    Blocks for three program runs (PROGRAM_TIMEOUT each at most); raises AssertionError
    when a program is broken (exits non-zero, prints no report), as `run` does.
    """
    tag = TAGS[mode]
    written = dict(python_written)
    steps: dict[str, Steps] = {}
    read_before: dict[str, set[str]] = {}
    for name in PROGRAMS:
        program_prefix = f"{prefix}-{name}"
        read_before[name] = set(written)
        steps[name] = run(CLIENTS[name], plan(url, program_prefix, mode=mode, read=list(written.values()), **extra))
        write = steps[name].get(f"{tag}_write", {})
        if write.get("ok"):
            written[name] = {"writer": name, "topic": f"{program_prefix}-{tag}", "hex": write["value"]["hex"]}
    for name in PROGRAMS:
        later = [item for writer, item in written.items() if writer != name and writer not in read_before[name]]
        if later:
            again = run(CLIENTS[name], plan(url, f"{prefix}-{name}", mode=mode, read=later, write=False, **extra))
            steps[name].update(again)
    return Exchange(tag, written, steps)
