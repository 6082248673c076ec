"""`$ref` resolution for one schema and the schemas it references, never over the network.

    resolver = Resolver(root_document, {"address.json": address_document}, Draft.DRAFT_7)
    target = resolver.resolve("address.json#/definitions/Street", resolver.root_base)

The documents a `$ref` can reach are the schema itself, the schemas named in its
`references` (each under its reference name, as Confluent registers them: the bare
name, the name resolved against the schema's base URI, and "./name"), the
sub-schemas that declare an `$id` (or draft 4's `id`), and the bundled meta-schemas.
Anything else, in particular an http(s) URL, is an `InvalidSchema`: nothing is fetched.

Fragments are JSON pointers ("#/definitions/A"), plain-name anchors ("#A", declared
by `$anchor` or by an `$id` of "#A"), or empty. As Confluent bridges them, a pointer
into a document's top-level `$defs` also finds an entry kept under `definitions`.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from registry.schema_types.base import InvalidSchema
from registry.schema_types.json_schema.drafts import OFFLINE_REGISTRY, Draft, draft_of
from registry.schema_types.json_schema.jackson_text import JsonValue

DEFAULT_BASE: Final = "mem://input"
"""The base URI of a schema without `$id`, as in Confluent."""

# Keywords whose value is one sub-schema, an array of them, or a map of them. Only these
# positions are scanned for `$id` and `$anchor` (a property *named* "$id" is not an id).
SCHEMA_KEYWORDS: Final = frozenset({
    "additionalItems", "additionalProperties", "contains", "propertyNames", "not", "if",
    "then", "else", "unevaluatedItems", "unevaluatedProperties", "items",
})
SCHEMA_ARRAY_KEYWORDS: Final = frozenset({"allOf", "anyOf", "oneOf", "items", "prefixItems"})
SCHEMA_MAP_KEYWORDS: Final = frozenset({
    "properties", "patternProperties", "definitions", "$defs", "dependentSchemas",
    "dependencies",
})


def join(base: str, ref: str) -> str:
    """RFC 3986 resolution of `ref` against `base`, for any hierarchical scheme.

    `urljoin` only resolves schemes it knows (not "mem:"), so other schemes borrow
    http's rules.
    """
    if urlsplit(ref).scheme:
        return ref
    scheme, _, rest = base.partition(":")
    if scheme.lower() in ("http", "https", "file"):
        return urljoin(base, ref)
    return scheme + urljoin("http:" + rest, ref)[4:]


def _strip(uri: str) -> str:
    """The URI without its fragment (a trailing empty "#" included)."""
    return urldefrag(uri).url


@dataclass(frozen=True, slots=True)
class Target:
    """Where a `$ref` lands: the JSON value, the base URI in force around it (its own
    `$id`, if any, still to be applied), and the draft of its document."""

    value: JsonValue
    base: str
    draft: Draft


@dataclass(slots=True)
class _Resource:
    value: JsonValue
    outer: str
    """The base URI in force around `value`, before its own `$id` applies."""
    inner: str
    """The base URI inside `value`."""
    draft: Draft
    document_root: bool


class Resolver:
    """Finds the JSON value a `$ref` names. Construction scans every document once
    (linear in their size); `resolve` costs the length of the pointer it follows."""

    def __init__(self, root: JsonValue, references: Mapping[str, JsonValue],
                 root_draft: Draft) -> None:
        self._resources: dict[str, _Resource] = {}
        self._anchors: dict[tuple[str, str], _Resource] = {}
        self._resolved: dict[tuple[str, str], Target] = {}
        self.root_base = DEFAULT_BASE
        if isinstance(root, dict):
            declared = root.get(root_draft.id_keyword)
            if isinstance(declared, str) and not (not root_draft.modern and "$ref" in root):
                self.root_base = _strip(join(DEFAULT_BASE, declared)) or DEFAULT_BASE
        for name, document in references.items():
            draft = draft_of(document, root_draft)
            base = _strip(join(self.root_base, name))
            inner = self.inner_base(document, base, draft)
            resource = _Resource(document, base, inner, draft, True)
            for key in (name, base, _strip(join(DEFAULT_BASE, name)), "./" + name,
                        _strip(join(self.root_base, "./" + name))):
                self._resources.setdefault(_strip(key), resource)
            self._scan(document, base, draft)
        root_resource = _Resource(root, DEFAULT_BASE, self.root_base, root_draft, True)
        self._resources[DEFAULT_BASE] = root_resource
        self._resources[self.root_base] = root_resource
        self._scan(root, DEFAULT_BASE, root_draft)

    @staticmethod
    def inner_base(value: JsonValue, outer: str, draft: Draft) -> str:
        """The base URI inside `value`, given the one around it."""
        if isinstance(value, dict) and (draft.modern or "$ref" not in value):
            declared = value.get(draft.id_keyword)
            if isinstance(declared, str) and not (declared.startswith("#") and not draft.modern):
                return _strip(join(outer, declared)) or outer
        return outer

    def _scan(self, document: JsonValue, base: str, draft: Draft) -> None:
        """Register the `$id`s and anchors of sub-schemas, iteratively."""
        stack: list[tuple[JsonValue, str]] = [(document, base)]
        while stack:
            value, outer = stack.pop()
            if not isinstance(value, dict):
                continue
            scope = outer
            if draft.modern or "$ref" not in value:  # before 2019-09, $ref hides siblings
                scope = self._declare(value, outer, draft)
            for keyword, child in value.items():
                if keyword in SCHEMA_KEYWORDS and isinstance(child, dict):
                    stack.append((child, scope))
                elif keyword in SCHEMA_ARRAY_KEYWORDS and isinstance(child, list):
                    stack.extend((item, scope) for item in child)
                elif keyword in SCHEMA_MAP_KEYWORDS and isinstance(child, dict):
                    stack.extend((item, scope) for item in child.values())

    def _declare(self, value: dict[str, JsonValue], outer: str, draft: Draft) -> str:
        """Register `value` under its `$id` and anchors; return the base inside it."""
        inner = self.inner_base(value, outer, draft)
        resource = _Resource(value, outer, inner, draft, False)
        declared = value.get(draft.id_keyword)
        if isinstance(declared, str) and declared.startswith("#") and not draft.modern:
            self._anchors.setdefault((outer, declared[1:]), resource)
        elif inner != outer:
            self._resources.setdefault(inner, resource)
        anchor = value.get("$anchor")
        if isinstance(anchor, str) and draft.modern:
            self._anchors.setdefault((inner, anchor), resource)
        return inner

    def resolve(self, ref: str, base: str, where: str) -> Target:
        """The value `ref` names from a schema whose base URI is `base`.

        Raises InvalidSchema (naming `where`) if it names nothing known; never fetches.
        """
        key = (ref, base)
        known = self._resolved.get(key)
        if known is None:
            known = self._resolve(ref, base, where)
            self._resolved[key] = known  # the same $ref is often written many times
        return known

    def _resolve(self, ref: str, base: str, where: str) -> Target:
        target = join(base, ref)
        uri, fragment = urldefrag(target)
        resource = self._resources.get(uri) or self._resources.get(_strip(ref))
        if resource is None:
            resource = _meta_schema(uri)
        if resource is None:
            if urlsplit(uri).scheme.lower() in ("http", "https"):
                raise InvalidSchema(
                    f"{where}: $ref {ref!r} points to a remote schema, which the registry never "
                    f"fetches; register it and list it in the schema's references")
            raise InvalidSchema(f"{where}: $ref {ref!r} cannot be resolved: no schema or "
                                f"reference is named {uri!r}")
        fragment = unquote(fragment)
        if not fragment:
            return Target(resource.value, resource.outer, resource.draft)
        if not fragment.startswith("/"):
            anchored = self._anchors.get((resource.inner, fragment))
            if anchored is None:
                raise InvalidSchema(f"{where}: $ref {ref!r} names anchor {fragment!r}, "
                                    f"which is not declared")
            return Target(anchored.value, anchored.outer, anchored.draft)
        return self._pointer(resource, fragment, ref, where)

    def _pointer(self, resource: _Resource, pointer: str, ref: str, where: str) -> Target:
        value = resource.value
        scope = resource.inner
        parts = [part.replace("~1", "/").replace("~0", "~") for part in pointer[1:].split("/")]
        for index, part in enumerate(parts):
            if isinstance(value, dict):
                if (index == 0 and resource.document_root and part == "$defs"
                        and len(parts) > 1 and not _has(value.get("$defs"), parts[1])
                        and _has(value.get("definitions"), parts[1])):
                    part = "definitions"  # Confluent bridges top-level definitions into $defs
                if part not in value:
                    break
                value = value[part]
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                break
            if index < len(parts) - 1:
                scope = self.inner_base(value, scope, resource.draft)
        else:
            return Target(value, scope, resource.draft)
        raise InvalidSchema(f"{where}: $ref {ref!r} points to nothing: the document has "
                            f"no {pointer!r}")


def _has(container: JsonValue, key: str) -> bool:
    return isinstance(container, dict) and key in container


def _meta_schema(uri: str) -> _Resource | None:
    """A meta-schema bundled with `jsonschema` (Confluent bundles them too)."""
    for candidate in (uri, uri.replace("https://", "http://", 1), uri.replace("http://", "https://", 1)):
        if candidate in OFFLINE_REGISTRY:
            contents = OFFLINE_REGISTRY[candidate].contents
            draft = draft_of(contents)
            return _Resource(contents, candidate, candidate, draft, True)
    return None
