"""Tags embedded in an Avro schema's text: the `confluent:tags` property of a record or a
field, as Confluent's `AvroSchema.copy(tagsToAdd, tagsToRemove)` writes them.

An entity is named by a path: `namespace.Record` for a record (SR_RECORD), and
`namespace.Record.field` for a field (SR_FIELD); an empty namespace part matches a
record in any namespace. The record is searched breadth-first through fields, unions,
arrays and maps, as Confluent's `AvroSchemaUtils.findMatchingEntity` does.
"""
from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping
from typing import Any

TAGS = "confluent:tags"
RECORD = "sr_record"
FIELD = "sr_field"
MAX_ENTITIES = 256

Entity = tuple[str, str]  # (path, type)


class TagPathError(ValueError):
    """A path that names nothing in the schema (Confluent: 42201)."""


def with_tags(text: str, to_add: Mapping[Entity, list[str]], to_remove: Mapping[Entity, list[str]]) -> str:
    """`text` (a canonical Avro schema) with tags added to, then removed from, each entity.

    Work is bounded: at most MAX_ENTITIES entities, each found by one walk of the schema.
    Raises TagPathError for a path that matches no record or field.
    """
    root = json.loads(text)
    entities = list(dict.fromkeys([*to_add, *to_remove]))
    if len(entities) > MAX_ENTITIES:
        raise TagPathError(f"at most {MAX_ENTITIES} entities may be tagged in one request")
    for entity in entities:
        node = _find(root, entity)
        tags = list(dict.fromkeys(str(t) for t in node.get(TAGS, []) if isinstance(t, str)))
        for tag in to_add.get(entity, ()):
            if tag not in tags:
                tags.append(tag)
        removed = set(to_remove.get(entity, ()))
        tags = [t for t in tags if t not in removed]
        if tags:
            node[TAGS] = tags
        else:
            node.pop(TAGS, None)
    return json.dumps(root, ensure_ascii=False, separators=(",", ":"))


def _find(root: Any, entity: Entity) -> dict[str, Any]:
    path, kind = entity
    parts = path.split(".")
    if kind == RECORD:
        namespace, record, field = ".".join(parts[:-1]), parts[-1], None
    else:
        if len(parts) < 2:
            raise TagPathError(f"No matching path '{path}' found in the schema")
        namespace, record, field = ".".join(parts[:-2]), parts[-2], parts[-1]
    top_namespace = root.get("namespace") if isinstance(root, dict) else None
    to_visit: deque[tuple[Any, str | None]] = deque([(root, top_namespace)])
    while to_visit:
        node, current = to_visit.popleft()
        if isinstance(node, list):  # a union
            to_visit.extend((item, current) for item in node)
            continue
        if not isinstance(node, dict):
            continue
        kind_of = node.get("type")
        if kind_of == "record":
            name = node.get("name")
            fields = node.get("fields") if isinstance(node.get("fields"), list) else []
            # A dotted name carries its namespace; else the record's own, else the enclosing one.
            own = node.get("namespace") if isinstance(node.get("namespace"), str) else current
            if isinstance(name, str) and "." in name:
                own, name = name.rsplit(".", 1)
            if (not namespace or namespace == own) and name == record:
                if field is None:
                    return node
                for item in fields:
                    if isinstance(item, dict) and item.get("name") == field:
                        return item
            to_visit.extend((item, own) for item in fields)
        elif kind_of == "array":
            to_visit.append((node.get("items"), current))
        elif kind_of == "map":
            to_visit.append((node.get("values"), current))
        else:
            to_visit.append((kind_of, current))
    raise TagPathError(f"No matching path '{path}' found in the schema")
