"""Two versions of a subject, compared line by line for people.

Both schemas are first printed the same way (JSON indented with key order kept,
Protobuf as stored), so a diff shows changes of content, not of formatting.
"""
from __future__ import annotations

import difflib
from typing import Any

from registry.admin.output import pretty_schema


def version_label(body: dict[str, Any]) -> str:
    return f"{body.get('subject')} version {body.get('version')} (id {body.get('id')})"


def schema_diff(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Unified diff lines (no trailing newlines) from `old` to `new`, two registry version
    bodies; empty when their schemas, types and references are the same. difflib's
    matcher is quadratic at worst in the number of lines, which a schema bounds."""
    lines: list[str] = []
    old_type, new_type = old.get("schemaType", "AVRO"), new.get("schemaType", "AVRO")
    if old_type != new_type:
        lines.append(f"schema type: {old_type} -> {new_type}")
    old_refs, new_refs = old.get("references") or [], new.get("references") or []
    if old_refs != new_refs:
        lines.append(f"references: {_refs(old_refs)} -> {_refs(new_refs)}")
    body = difflib.unified_diff(pretty_schema(old["schema"], old_type).splitlines(),
                                pretty_schema(new["schema"], new_type).splitlines(),
                                fromfile=version_label(old), tofile=version_label(new), lineterm="")
    return lines + list(body)


def _refs(refs: list[dict[str, Any]]) -> str:
    return ", ".join(f"{r['name']}={r['subject']}:{r['version']}" for r in refs) or "none"
