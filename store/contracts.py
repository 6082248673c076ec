"""Data contracts as Confluent stores them: a schema's `metadata` and `ruleSet`, and the
content hash (MD5) that names a schema's content as a guid.

Confluent keeps metadata maps and sets sorted (Java `TreeMap`/`TreeSet`, ordered by UTF-16
code units) and writes them with Jackson's NON_EMPTY rule: an empty map, list or string
is left out. `to_json` reproduces that shape, so a record we write reads back in Confluent
as it wrote it, and the MD5 it computes over the content equals ours (`content_md5`).

`metadata_from_json` and `rule_set_from_json` serve two readers: request bodies
(`strict=True`: anything malformed raises `ContractError`) and records in the log
(`strict=False`: what cannot be understood is dropped, never an error, as Jackson's
`ignoreUnknown` reader does). Both are bounded by `LIMITS`, so a hostile body costs time
and memory in proportion to its size.
"""
from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

RULE_KINDS = frozenset({"TRANSFORM", "CONDITION"})
RULE_MODES = frozenset({"UPGRADE", "DOWNGRADE", "UPDOWN", "WRITE", "READ", "WRITEREAD"})
MIGRATION_MODES = frozenset({"UPGRADE", "DOWNGRADE", "UPDOWN"})
DOMAIN_MODES = frozenset({"WRITE", "READ", "WRITEREAD"})
CONFLUENT_VERSION = "confluent:version"


@dataclass(frozen=True)
class Limits:
    """How much a request may put in a data contract. Confluent has no such limits; a
    request over them is refused (422) rather than stored, so that every read of a
    version stays cheap."""

    entries: int = 1_000  # tags, properties, sensitive names, rules, params: each
    values_per_tag: int = 1_000
    text: int = 65_536  # characters in one key, value, expression or doc


LIMITS = Limits()


class ContractError(ValueError):
    """Metadata or a rule set that a request may not register (Confluent: 42210 or 422)."""


def _utf16_order(text: str) -> bytes:
    # Java's String.compareTo orders by UTF-16 code units; code point order differs only
    # where supplementary characters meet U+E000..U+FFFF.
    return text.encode("utf-16-be", "surrogatepass")


@dataclass(frozen=True, slots=True)
class Metadata:
    """`tags`: path -> tag names; `properties`: name -> value; `sensitive`: names. All sorted."""

    tags: tuple[tuple[str, tuple[str, ...]], ...] = ()
    properties: tuple[tuple[str, str], ...] = ()
    sensitive: tuple[str, ...] = ()

    def property(self, name: str) -> str | None:
        for key, value in self.properties:
            if key == name:
                return value
        return None

    def with_property(self, name: str, value: str) -> Metadata:
        props = dict(self.properties)
        props[name] = value
        return Metadata(self.tags, _sorted_items(props), self.sensitive)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if self.tags:
            body["tags"] = {k: list(v) for k, v in self.tags}
        if self.properties:
            body["properties"] = dict(self.properties)
        if self.sensitive:
            body["sensitive"] = list(self.sensitive)
        return body


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    kind: str | None = None
    mode: str | None = None
    type: str | None = None
    doc: str | None = None
    tags: tuple[str, ...] = ()
    params: tuple[tuple[str, str], ...] = ()
    expr: str | None = None
    on_success: str | None = None
    on_failure: str | None = None
    disabled: bool = False

    def to_json(self) -> dict[str, Any]:
        # Field order of Confluent's Rule (its @JsonCreator), NON_EMPTY; `disabled` is a
        # primitive boolean, which NON_EMPTY keeps.
        body: dict[str, Any] = {}
        for name, value in (("name", self.name), ("doc", self.doc), ("kind", self.kind),
                            ("mode", self.mode), ("type", self.type)):
            if value:
                body[name] = value
        if self.tags:
            body["tags"] = list(self.tags)
        if self.params:
            body["params"] = dict(self.params)
        for name, value in (("expr", self.expr), ("onSuccess", self.on_success),
                            ("onFailure", self.on_failure)):
            if value:
                body[name] = value
        body["disabled"] = self.disabled
        return body


@dataclass(frozen=True, slots=True)
class RuleSet:
    migration_rules: tuple[Rule, ...] = ()
    domain_rules: tuple[Rule, ...] = ()
    encoding_rules: tuple[Rule, ...] = ()
    enable_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if self.migration_rules:
            body["migrationRules"] = [r.to_json() for r in self.migration_rules]
        if self.domain_rules:
            body["domainRules"] = [r.to_json() for r in self.domain_rules]
        if self.encoding_rules:
            body["encodingRules"] = [r.to_json() for r in self.encoding_rules]
        if self.enable_at:
            body["enableAt"] = self.enable_at
        return body


# ---- reading ---------------------------------------------------------------------------


def _fail(strict: bool, message: str) -> None:
    if strict:
        raise ContractError(message)


def _text(value: Any, what: str, strict: bool) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        _fail(strict, f"{what} must be a string")
        return None
    if len(value) > LIMITS.text:
        _fail(strict, f"{what} is longer than {LIMITS.text} characters")
        return None
    if strict and not _storable(value):
        raise ContractError(f"{what} holds a lone surrogate, which is not text")
    return value


def _storable(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _mapping(value: Any, what: str, strict: bool) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        _fail(strict, f"{what} must be an object")
        return {}
    if len(value) > LIMITS.entries:
        _fail(strict, f"{what} has more than {LIMITS.entries} entries")
        return {}
    return value


def _names(value: Any, what: str, strict: bool, limit: int) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        _fail(strict, f"{what} must be a list of strings")
        return ()
    if len(value) > limit:
        _fail(strict, f"{what} has more than {limit} entries")
        return ()
    found = set()
    for item in value:
        text = _text(item, what, strict)
        if text is not None:
            found.add(text)
    return tuple(sorted(found, key=_utf16_order))


def _sorted_items(pairs: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(pairs.items(), key=lambda kv: _utf16_order(kv[0])))


def _string_map(value: Any, what: str, strict: bool) -> tuple[tuple[str, str], ...]:
    pairs: dict[str, str] = {}
    for key, item in _mapping(value, what, strict).items():
        name = _text(key, f"{what} key", strict)
        text = _text(item, f"{what} value", strict)
        if name is not None and text is not None:
            pairs[name] = text
    return _sorted_items(pairs)


def metadata_from_json(value: Any, *, strict: bool) -> Metadata | None:
    """Metadata from its JSON form; None for null. Raises ContractError only if `strict`."""
    if value is None:
        return None
    if not isinstance(value, dict):
        _fail(strict, "metadata must be an object")
        return None
    tags: dict[str, tuple[str, ...]] = {}
    for key, names in _mapping(value.get("tags"), "metadata tags", strict).items():
        path = _text(key, "metadata tag path", strict)
        if path is not None:
            tags[path] = _names(names, "metadata tags", strict, LIMITS.values_per_tag)
    return Metadata(_sorted_items(tags), _string_map(value.get("properties"), "metadata properties", strict),
                    _names(value.get("sensitive"), "metadata sensitive", strict, LIMITS.entries))


def _rule(value: Any, strict: bool) -> Rule | None:
    if not isinstance(value, dict):
        _fail(strict, "a rule must be an object")
        return None
    name = _text(value.get("name"), "rule name", strict)
    if not name:
        _fail(strict, "Missing rule name")
        return None
    kind = _text(value.get("kind"), "rule kind", strict)
    mode = _text(value.get("mode"), "rule mode", strict)
    if strict and kind is not None and kind not in RULE_KINDS:
        raise ContractError(f"Invalid rule kind '{kind}' in rule '{name}'")
    if strict and mode is not None and mode not in RULE_MODES:
        raise ContractError(f"Invalid rule mode '{mode}' in rule '{name}'")
    disabled = value.get("disabled", False)
    if not isinstance(disabled, bool):
        _fail(strict, "rule disabled must be a boolean")
        disabled = False
    return Rule(name, kind, mode, _text(value.get("type"), "rule type", strict),
                _text(value.get("doc"), "rule doc", strict),
                _names(value.get("tags"), "rule tags", strict, LIMITS.entries),
                _string_map(value.get("params"), "rule params", strict),
                _text(value.get("expr"), "rule expr", strict),
                _text(value.get("onSuccess"), "rule onSuccess", strict),
                _text(value.get("onFailure"), "rule onFailure", strict), disabled)


def _rules(value: Any, what: str, strict: bool) -> tuple[Rule, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        _fail(strict, f"{what} must be a list")
        return ()
    if len(value) > LIMITS.entries:
        _fail(strict, f"{what} has more than {LIMITS.entries} rules")
        return ()
    return tuple(r for r in (_rule(item, strict) for item in value) if r is not None)


def rule_set_from_json(value: Any, *, strict: bool) -> RuleSet | None:
    """A rule set from its JSON form; None for null. Raises ContractError only if `strict`."""
    if value is None:
        return None
    if not isinstance(value, dict):
        _fail(strict, "ruleSet must be an object")
        return None
    enable_at = _text(value.get("enableAt"), "ruleSet enableAt", strict)
    return RuleSet(_rules(value.get("migrationRules"), "migrationRules", strict),
                   _rules(value.get("domainRules"), "domainRules", strict),
                   _rules(value.get("encodingRules"), "encodingRules", strict), enable_at)


def validate_rule_set(rule_set: RuleSet) -> None:
    """Confluent's RuleSet.validate: unique names, a type, and modes that fit the list.
    Raises ContractError with Confluent's wording."""
    names: set[str] = set()
    for rules, allowed, message in (
            (rule_set.migration_rules, MIGRATION_MODES, "Migration rules can only be UPGRADE, DOWNGRADE, UPDOWN"),
            (rule_set.domain_rules, DOMAIN_MODES, "Domain rules can only be WRITE, READ, WRITEREAD"),
            (rule_set.encoding_rules, DOMAIN_MODES, "Encoding rules can only be WRITE, READ, WRITEREAD")):
        for rule in rules:
            if rule.name in names:
                raise ContractError(f"Found rule with duplicate name '{rule.name}'")
            names.add(rule.name)
            if not rule.type:
                raise ContractError("Missing rule type")
            if (rule.mode or "") not in allowed:
                raise ContractError(message)


# ---- merging, as Confluent merges a config's defaults and overrides ---------------------


def merge_metadata(old: Metadata | None, new: Metadata | None) -> Metadata | None:
    if old is None:
        return new
    if new is None:
        return old
    return Metadata(_merge_pairs(old.tags, new.tags), _merge_pairs(old.properties, new.properties),
                    tuple(sorted(set(old.sensitive) | set(new.sensitive), key=_utf16_order))
                    if old.sensitive and new.sensitive else (new.sensitive or old.sensitive))


def _merge_pairs(old: tuple, new: tuple) -> tuple:
    if not old:
        return new
    if not new:
        return old
    merged = dict(old)
    merged.update(new)
    return _sorted_items(merged)


def merge_rule_sets(old: RuleSet | None, new: RuleSet | None) -> RuleSet | None:
    if old is None:
        return new
    if new is None:
        return old
    return RuleSet(_merge_rules(old.migration_rules, new.migration_rules),
                   _merge_rules(old.domain_rules, new.domain_rules),
                   _merge_rules(old.encoding_rules, new.encoding_rules),
                   new.enable_at or old.enable_at)


def _merge_rules(old: tuple[Rule, ...], new: tuple[Rule, ...]) -> tuple[Rule, ...]:
    if not old:
        return new
    if not new:
        return old
    replaced = {r.name for r in new}
    return tuple(r for r in old if r.name not in replaced) + new


# ---- the content hash ---------------------------------------------------------------------


def content_md5(schema: str, references: tuple[Any, ...], metadata: Metadata | None,
                rule_set: RuleSet | None) -> bytes:
    """The MD5 Confluent computes over a schema's content (`Schema.updateHash`): the text,
    each reference's name, subject and version, then metadata and rule set if present."""
    md = hashlib.md5(schema.encode("utf-8", "surrogatepass"))
    for ref in references:
        md.update(ref.name.encode("utf-8", "surrogatepass"))
        md.update(ref.subject.encode("utf-8", "surrogatepass"))
        md.update(ref.version.to_bytes(4, "big", signed=True))
    if metadata is not None:
        md.update(b"\x01")
        for path, names in metadata.tags:
            md.update(path.encode())
            for name in names:
                md.update(name.encode())
        for key, value in metadata.properties:
            md.update(key.encode())
            md.update(value.encode())
        for name in metadata.sensitive:
            md.update(name.encode())
    if rule_set is not None:
        md.update(b"\x01")
        for rule in (*rule_set.migration_rules, *rule_set.domain_rules, *rule_set.encoding_rules):
            _hash_rule(md, rule)
        if rule_set.enable_at:
            md.update(rule_set.enable_at.encode())
    return md.digest()


def _hash_rule(md: Any, rule: Rule) -> None:
    for text in (rule.name, rule.doc, rule.kind, rule.mode, rule.type):
        if text is not None:
            md.update(text.encode())
    for tag in rule.tags:
        md.update(tag.encode())
    for key, value in rule.params:
        md.update(key.encode())
        md.update(value.encode())
    for text in (rule.expr, rule.on_success, rule.on_failure):
        if text is not None:
            md.update(text.encode())
    if rule.disabled:
        md.update(b"\x01")


def guid_of(md5: bytes) -> str:
    """The guid Confluent shows for a content hash: its 16 bytes read as a UUID (written
    here as `str(uuid.UUID(bytes=md5))` would, in a quarter of its 2 us: every
    registration's answer carries one)."""
    if len(md5) != 16:
        raise ValueError("a guid is 16 bytes")
    h = md5.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def md5_of_guid(guid: str) -> bytes | None:
    """The content hash a guid names (a UUID, or 32 hex digits as Confluent also takes), or None."""
    if len(guid) > 64:
        return None
    try:
        return uuid.UUID(guid).bytes
    except ValueError:
        return None
