"""Confluent's differences between two JSON Schemas: their types (`Change`, Confluent's
`Difference.Type`, whose names clients see), which of them are compatible
(`COMPATIBLE_CHANGES`, Confluent's strict policy), and why each other one breaks
reading. `compatibility` finds the differences; this module says what they mean.
"""
from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

MAX_DIFFERENCES: Final = 20
"""A pair's list of differences holds at most this many (incompatible ones first)."""


class Change(enum.Enum):
    """Confluent's `Difference.Type` (the names are part of the API: clients see them)."""

    ID_CHANGED = enum.auto()
    DESCRIPTION_CHANGED = enum.auto()
    TITLE_CHANGED = enum.auto()
    DEFAULT_CHANGED = enum.auto()
    SCHEMA_ADDED = enum.auto()
    SCHEMA_REMOVED = enum.auto()
    TYPE_EXTENDED = enum.auto()
    TYPE_NARROWED = enum.auto()
    TYPE_CHANGED = enum.auto()
    MAX_LENGTH_ADDED = enum.auto()
    MAX_LENGTH_REMOVED = enum.auto()
    MAX_LENGTH_INCREASED = enum.auto()
    MAX_LENGTH_DECREASED = enum.auto()
    MIN_LENGTH_ADDED = enum.auto()
    MIN_LENGTH_REMOVED = enum.auto()
    MIN_LENGTH_INCREASED = enum.auto()
    MIN_LENGTH_DECREASED = enum.auto()
    PATTERN_ADDED = enum.auto()
    PATTERN_REMOVED = enum.auto()
    PATTERN_CHANGED = enum.auto()
    MAXIMUM_ADDED = enum.auto()
    MAXIMUM_REMOVED = enum.auto()
    MAXIMUM_INCREASED = enum.auto()
    MAXIMUM_DECREASED = enum.auto()
    MINIMUM_ADDED = enum.auto()
    MINIMUM_REMOVED = enum.auto()
    MINIMUM_INCREASED = enum.auto()
    MINIMUM_DECREASED = enum.auto()
    EXCLUSIVE_MAXIMUM_ADDED = enum.auto()
    EXCLUSIVE_MAXIMUM_REMOVED = enum.auto()
    EXCLUSIVE_MAXIMUM_INCREASED = enum.auto()
    EXCLUSIVE_MAXIMUM_DECREASED = enum.auto()
    EXCLUSIVE_MINIMUM_ADDED = enum.auto()
    EXCLUSIVE_MINIMUM_REMOVED = enum.auto()
    EXCLUSIVE_MINIMUM_INCREASED = enum.auto()
    EXCLUSIVE_MINIMUM_DECREASED = enum.auto()
    MULTIPLE_OF_ADDED = enum.auto()
    MULTIPLE_OF_REMOVED = enum.auto()
    MULTIPLE_OF_EXPANDED = enum.auto()
    MULTIPLE_OF_REDUCED = enum.auto()
    MULTIPLE_OF_CHANGED = enum.auto()
    REQUIRED_ATTRIBUTE_ADDED = enum.auto()
    REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED = enum.auto()
    REQUIRED_ATTRIBUTE_REMOVED = enum.auto()
    MAX_PROPERTIES_ADDED = enum.auto()
    MAX_PROPERTIES_REMOVED = enum.auto()
    MAX_PROPERTIES_INCREASED = enum.auto()
    MAX_PROPERTIES_DECREASED = enum.auto()
    MIN_PROPERTIES_ADDED = enum.auto()
    MIN_PROPERTIES_REMOVED = enum.auto()
    MIN_PROPERTIES_INCREASED = enum.auto()
    MIN_PROPERTIES_DECREASED = enum.auto()
    ADDITIONAL_PROPERTIES_ADDED = enum.auto()
    ADDITIONAL_PROPERTIES_REMOVED = enum.auto()
    ADDITIONAL_PROPERTIES_EXTENDED = enum.auto()
    ADDITIONAL_PROPERTIES_NARROWED = enum.auto()
    DEPENDENCY_ARRAY_ADDED = enum.auto()
    DEPENDENCY_ARRAY_REMOVED = enum.auto()
    DEPENDENCY_ARRAY_EXTENDED = enum.auto()
    DEPENDENCY_ARRAY_NARROWED = enum.auto()
    DEPENDENCY_ARRAY_CHANGED = enum.auto()
    DEPENDENCY_SCHEMA_ADDED = enum.auto()
    DEPENDENCY_SCHEMA_REMOVED = enum.auto()
    REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL = enum.auto()
    REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL = enum.auto()
    OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL = enum.auto()
    PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL = enum.auto()
    REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL = enum.auto()
    REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL = enum.auto()
    OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL = enum.auto()
    PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL = enum.auto()
    PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL = enum.auto()
    PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL = enum.auto()
    PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL = enum.auto()
    PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL = enum.auto()
    PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL = enum.auto()
    PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL = enum.auto()
    UNEVALUATED_PROPERTIES_ADDED = enum.auto()
    UNEVALUATED_PROPERTIES_REMOVED = enum.auto()
    UNEVALUATED_PROPERTIES_EXTENDED = enum.auto()
    UNEVALUATED_PROPERTIES_NARROWED = enum.auto()
    MAX_ITEMS_ADDED = enum.auto()
    MAX_ITEMS_REMOVED = enum.auto()
    MAX_ITEMS_INCREASED = enum.auto()
    MAX_ITEMS_DECREASED = enum.auto()
    MIN_ITEMS_ADDED = enum.auto()
    MIN_ITEMS_REMOVED = enum.auto()
    MIN_ITEMS_INCREASED = enum.auto()
    MIN_ITEMS_DECREASED = enum.auto()
    MAX_CONTAINS_ADDED = enum.auto()
    MAX_CONTAINS_REMOVED = enum.auto()
    MAX_CONTAINS_INCREASED = enum.auto()
    MAX_CONTAINS_DECREASED = enum.auto()
    MIN_CONTAINS_ADDED = enum.auto()
    MIN_CONTAINS_REMOVED = enum.auto()
    MIN_CONTAINS_INCREASED = enum.auto()
    MIN_CONTAINS_DECREASED = enum.auto()
    UNIQUE_ITEMS_ADDED = enum.auto()
    UNIQUE_ITEMS_REMOVED = enum.auto()
    ADDITIONAL_ITEMS_ADDED = enum.auto()
    ADDITIONAL_ITEMS_REMOVED = enum.auto()
    ADDITIONAL_ITEMS_EXTENDED = enum.auto()
    ADDITIONAL_ITEMS_NARROWED = enum.auto()
    UNEVALUATED_ITEMS_ADDED = enum.auto()
    UNEVALUATED_ITEMS_REMOVED = enum.auto()
    UNEVALUATED_ITEMS_EXTENDED = enum.auto()
    UNEVALUATED_ITEMS_NARROWED = enum.auto()
    ITEM_ADDED_TO_OPEN_CONTENT_MODEL = enum.auto()
    ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL = enum.auto()
    ITEM_ADDED_TO_CLOSED_CONTENT_MODEL = enum.auto()
    ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL = enum.auto()
    ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL = enum.auto()
    ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL = enum.auto()
    ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL = enum.auto()
    ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL = enum.auto()
    ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL = enum.auto()
    ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL = enum.auto()
    ENUM_ARRAY_EXTENDED = enum.auto()
    ENUM_ARRAY_NARROWED = enum.auto()
    ENUM_ARRAY_CHANGED = enum.auto()
    COMBINED_TYPE_EXTENDED = enum.auto()
    COMBINED_TYPE_CHANGED = enum.auto()
    PRODUCT_TYPE_EXTENDED = enum.auto()
    PRODUCT_TYPE_NARROWED = enum.auto()
    SUM_TYPE_EXTENDED = enum.auto()
    SUM_TYPE_NARROWED = enum.auto()
    COMBINED_TYPE_SUBSCHEMAS_CHANGED = enum.auto()
    NOT_TYPE_EXTENDED = enum.auto()
    NOT_TYPE_NARROWED = enum.auto()


C = Change

COMPATIBLE_CHANGES: Final = frozenset({
    # Confluent's SchemaDiff.COMPATIBLE_CHANGES_STRICT (its default policy).
    C.ID_CHANGED, C.DESCRIPTION_CHANGED, C.TITLE_CHANGED, C.DEFAULT_CHANGED, C.SCHEMA_REMOVED,
    C.TYPE_EXTENDED, C.MAX_LENGTH_INCREASED, C.MAX_LENGTH_REMOVED, C.MIN_LENGTH_DECREASED,
    C.MIN_LENGTH_REMOVED, C.PATTERN_REMOVED, C.MAXIMUM_INCREASED, C.MAXIMUM_REMOVED,
    C.MINIMUM_DECREASED, C.MINIMUM_REMOVED, C.EXCLUSIVE_MAXIMUM_INCREASED,
    C.EXCLUSIVE_MAXIMUM_REMOVED, C.EXCLUSIVE_MINIMUM_DECREASED, C.EXCLUSIVE_MINIMUM_REMOVED,
    C.MULTIPLE_OF_REDUCED, C.MULTIPLE_OF_REMOVED, C.REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED,
    C.REQUIRED_ATTRIBUTE_REMOVED, C.DEPENDENCY_ARRAY_NARROWED, C.DEPENDENCY_ARRAY_REMOVED,
    C.DEPENDENCY_SCHEMA_REMOVED, C.MAX_PROPERTIES_INCREASED, C.MAX_PROPERTIES_REMOVED,
    C.MIN_PROPERTIES_DECREASED, C.MIN_PROPERTIES_REMOVED, C.ADDITIONAL_PROPERTIES_ADDED,
    C.ADDITIONAL_PROPERTIES_EXTENDED, C.UNEVALUATED_PROPERTIES_ADDED,
    C.UNEVALUATED_PROPERTIES_EXTENDED, C.PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL,
    C.REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL,
    C.OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL,
    C.PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL,
    C.PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL,
    C.PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
    C.PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL, C.MAX_ITEMS_INCREASED,
    C.MAX_ITEMS_REMOVED, C.MIN_ITEMS_DECREASED, C.MIN_ITEMS_REMOVED, C.MAX_CONTAINS_INCREASED,
    C.MAX_CONTAINS_REMOVED, C.MIN_CONTAINS_DECREASED, C.MIN_CONTAINS_REMOVED,
    C.UNIQUE_ITEMS_REMOVED, C.ADDITIONAL_ITEMS_ADDED, C.ADDITIONAL_ITEMS_EXTENDED,
    C.UNEVALUATED_ITEMS_ADDED, C.UNEVALUATED_ITEMS_EXTENDED,
    C.ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL, C.ITEM_ADDED_TO_CLOSED_CONTENT_MODEL,
    C.ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL, C.ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL,
    C.ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL,
    C.ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL, C.ENUM_ARRAY_EXTENDED,
    C.COMBINED_TYPE_EXTENDED, C.PRODUCT_TYPE_NARROWED, C.SUM_TYPE_EXTENDED, C.NOT_TYPE_NARROWED,
})

for _change in Change:
    # An attribute lookup is much cheaper than hashing an Enum member on the hot path.
    _change.breaks = _change not in COMPATIBLE_CHANGES  # type: ignore[attr-defined]

# Why each incompatible change breaks reading: the writer is the schema data was
# written with, the reader the one reading it.
_REASONS: Final[dict[Change, str]] = {
    C.SCHEMA_ADDED: "the reader constrains a schema the writer left unconstrained",
    C.TYPE_NARROWED: "the reader accepts only integers where the writer wrote any number",
    C.TYPE_CHANGED: "the reader's type differs from the writer's",
    C.MAX_LENGTH_ADDED: "the reader adds a maxLength the writer did not have",
    C.MAX_LENGTH_DECREASED: "the reader's maxLength is smaller than the writer's",
    C.MIN_LENGTH_ADDED: "the reader adds a minLength the writer did not have",
    C.MIN_LENGTH_INCREASED: "the reader's minLength is larger than the writer's",
    C.PATTERN_ADDED: "the reader adds a pattern the writer did not have",
    C.PATTERN_CHANGED: "the reader's pattern differs from the writer's",
    C.MAXIMUM_ADDED: "the reader adds a maximum the writer did not have",
    C.MAXIMUM_DECREASED: "the reader's maximum is smaller than the writer's",
    C.MINIMUM_ADDED: "the reader adds a minimum the writer did not have",
    C.MINIMUM_INCREASED: "the reader's minimum is larger than the writer's",
    C.EXCLUSIVE_MAXIMUM_ADDED: "the reader adds an exclusiveMaximum the writer did not have",
    C.EXCLUSIVE_MAXIMUM_DECREASED: "the reader's exclusiveMaximum is smaller than the writer's",
    C.EXCLUSIVE_MINIMUM_ADDED: "the reader adds an exclusiveMinimum the writer did not have",
    C.EXCLUSIVE_MINIMUM_INCREASED: "the reader's exclusiveMinimum is larger than the writer's",
    C.MULTIPLE_OF_ADDED: "the reader adds a multipleOf the writer did not have",
    C.MULTIPLE_OF_EXPANDED: "the reader's multipleOf is a multiple of the writer's",
    C.MULTIPLE_OF_CHANGED: "the reader's multipleOf does not divide the writer's",
    C.REQUIRED_ATTRIBUTE_ADDED: "the reader requires a property (without a default) the writer did not require",
    C.MAX_PROPERTIES_ADDED: "the reader adds a maxProperties the writer did not have",
    C.MAX_PROPERTIES_DECREASED: "the reader's maxProperties is smaller than the writer's",
    C.MIN_PROPERTIES_ADDED: "the reader adds a minProperties the writer did not have",
    C.MIN_PROPERTIES_INCREASED: "the reader's minProperties is larger than the writer's",
    C.ADDITIONAL_PROPERTIES_REMOVED: "the reader forbids additional properties the writer allowed",
    C.ADDITIONAL_PROPERTIES_NARROWED: "the reader constrains additional properties the writer left open",
    C.DEPENDENCY_ARRAY_ADDED: "the reader adds a property dependency",
    C.DEPENDENCY_ARRAY_EXTENDED: "the reader's property dependency requires more properties",
    C.DEPENDENCY_ARRAY_CHANGED: "the reader's property dependency differs from the writer's",
    C.DEPENDENCY_SCHEMA_ADDED: "the reader adds a schema dependency",
    C.REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL:
        "the writer's open content model may have written this property with any value, "
        "and the reader requires it with a schema",
    C.REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL:
        "the writer's open content model may have written this property with any value",
    C.OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL:
        "the writer's open content model may have written this property with any value, "
        "and the reader constrains it",
    C.REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL:
        "the reader requires a property (without a default) the writer never wrote",
    C.PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL:
        "the reader's closed content model does not allow this property, which the writer wrote",
    C.PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL:
        "the reader dropped this property and its additional/pattern properties schema "
        "cannot read the writer's values",
    C.PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL:
        "the writer's additional/pattern properties may have written this property with "
        "values the reader's schema for it cannot read",
    C.UNEVALUATED_PROPERTIES_REMOVED: "the reader forbids unevaluated properties the writer allowed",
    C.UNEVALUATED_PROPERTIES_NARROWED: "the reader constrains unevaluated properties the writer left open",
    C.MAX_ITEMS_ADDED: "the reader adds a maxItems the writer did not have",
    C.MAX_ITEMS_DECREASED: "the reader's maxItems is smaller than the writer's",
    C.MIN_ITEMS_ADDED: "the reader adds a minItems the writer did not have",
    C.MIN_ITEMS_INCREASED: "the reader's minItems is larger than the writer's",
    C.MAX_CONTAINS_ADDED: "the reader adds a maxContains the writer did not have",
    C.MAX_CONTAINS_DECREASED: "the reader's maxContains is smaller than the writer's",
    C.MIN_CONTAINS_ADDED: "the reader adds a minContains the writer did not have",
    C.MIN_CONTAINS_INCREASED: "the reader's minContains is larger than the writer's",
    C.UNIQUE_ITEMS_ADDED: "the reader requires unique items and the writer did not",
    C.ADDITIONAL_ITEMS_REMOVED: "the reader forbids additional items the writer allowed",
    C.ADDITIONAL_ITEMS_NARROWED: "the reader constrains additional items the writer left open",
    C.UNEVALUATED_ITEMS_REMOVED: "the reader forbids unevaluated items the writer allowed",
    C.UNEVALUATED_ITEMS_NARROWED: "the reader constrains unevaluated items the writer left open",
    C.ITEM_ADDED_TO_OPEN_CONTENT_MODEL:
        "the writer's open content model may have written any value at this position, "
        "and the reader constrains it",
    C.ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL:
        "the reader's closed content model does not allow this item, which the writer wrote",
    C.ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL:
        "the reader dropped this item and its additional items schema cannot read the writer's values",
    C.ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL:
        "the writer's additional items may have written values at this position that the "
        "reader's item schema cannot read",
    C.ENUM_ARRAY_NARROWED: "the reader's enum lacks values the writer's allows",
    C.ENUM_ARRAY_CHANGED: "the reader's enum (or const) differs from the writer's",
    C.COMBINED_TYPE_CHANGED: "the reader combines its subschemas differently (allOf/anyOf/oneOf)",
    C.PRODUCT_TYPE_EXTENDED: "the reader's allOf has more subschemas than the writer's",
    C.SUM_TYPE_NARROWED: "the reader's anyOf/oneOf has fewer subschemas than the writer's",
    C.COMBINED_TYPE_SUBSCHEMAS_CHANGED:
        "some of the writer's subschemas have no compatible counterpart in the reader's",
    C.NOT_TYPE_EXTENDED: "the reader's 'not' excludes more than the writer's",
}


@dataclass(frozen=True, slots=True)
class Difference:
    """One of Confluent's differences, at a JSON path such as "#/properties/a"."""

    change: Change
    path: str

    @property
    def compatible(self) -> bool:
        return self.change in COMPATIBLE_CHANGES

    def sentence(self) -> str:
        reason = _REASONS.get(self.change, "a compatible change")
        return f"{self.change.name} at '{self.path}': {reason}"


# Differences inside one pair comparison: (change, path relative to the pair).
Diffs = list[tuple[Change, str]]


def under(prefix: str, diffs: Diffs) -> Diffs:
    if not diffs:
        return diffs
    return [(change, f"{prefix}/{path}" if path else prefix) for change, path in diffs]


def incompatible(diffs: Iterable[tuple[Change, str]]) -> bool:
    for change, _ in diffs:
        if change.breaks:  # type: ignore[attr-defined]
            return True
    return False


def capped(diffs: Diffs) -> Diffs:
    if len(diffs) <= MAX_DIFFERENCES:
        return diffs
    worse = [d for d in diffs if d[0].breaks]  # type: ignore[attr-defined]
    better = [d for d in diffs if not d[0].breaks]  # type: ignore[attr-defined]
    return (worse + better)[:MAX_DIFFERENCES]
