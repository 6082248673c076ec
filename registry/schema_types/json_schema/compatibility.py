"""Confluent's compatibility rules for JSON Schema, over the `model.Node` graph.

    differences = compare(writer_root, reader_root, budget)
    [d for d in differences if not d.compatible]   # why the reader cannot read the writer

Confluent (`io.confluent.kafka.schemaregistry.json.diff.SchemaDiff`) lists the
differences from an *original* schema to an *update*, each of a `Difference.Type`, and
calls the update compatible when every difference is of a type in its "compatible
changes" set. `JsonSchema.isBackwardCompatible(previous)` compares original=previous
with update=this, i.e. data written with the original must be readable with the
update: the original is the writer, the update the reader. This module follows those
rules one for one (open/closed/partially open content models, required, type
widening, bounds, enums, combined schemas matched by a maximum bipartite matching,
items, additionalItems, dependencies, `not`), and keeps Confluent's type names in
every reason. Deliberate differences are marked "Deviation".

Bounded work:
- every (writer node, reader node) pair is compared once (memoized); a pair met again
  while it is being compared (a recursive schema) is assumed compatible, and a
  "compatible" that leaned on such an assumption is not memoized, which computes the
  same greatest fixed point as Confluent's repeated passes;
- the Python stack holds at most MAX_PAIR_DEPTH nested pairs: deeper pairs are
  assumed compatible for the pass and compared afterwards from a fresh stack, passes
  repeating until no assumption is contradicted, so no schema the registry accepted
  can make a check fail for depth;
- subschemas of oneOf/anyOf/allOf are first paired by identical structure, and only
  the rest are compared pairwise, lazily, while searching for the matching;
- the total work is capped by `budget` (proportional to the two schemas' sizes), in
  units of one pair comparison: a property name matched against a `patternProperties`
  pattern is charged too (one unit, more for a long name against a large pattern), and
  so is compiling a pattern (once per comparison); past it, `TooMuchWork` is raised.
Each pair's list of differences is capped (`differences.MAX_DIFFERENCES`, incompatible
ones first), so lists cannot multiply through shared sub-schemas. What each difference
means, and which are compatible, is in `differences`.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal, InvalidOperation, localcontext
from typing import Final

import re2

from registry.schema_types.json_schema.differences import (
    COMPATIBLE_CHANGES,
    MAX_DIFFERENCES,
    C,
    Change,
    Difference,
    Diffs,
    capped,
    incompatible,
    under,
)
from registry.schema_types.json_schema.model import Criterion, Kind, Node, Number

__all__ = ["COMPATIBLE_CHANGES", "MAX_DIFFERENCES", "MAX_PAIR_DEPTH", "Change", "Difference", "TooMuchWork",
           "compare"]

MAX_PAIR_DEPTH: Final = 48


class TooMuchWork(Exception):
    """The comparison needed more work than its budget allows (its message, when it has
    one, says what in particular could not be done within bounded work)."""


PATTERN_MEMORY: Final = 2 << 20
"""RE2's memory for one pattern (its programs and DFA caches). A short pattern can ask
for far more (`\\pL{1000}`): under RE2's default 8 MiB, compiling it took about 100 ms
before failing; under 2 MiB about 15 ms, and patterns people write (`^[\\p{L}_]{1,64}$`)
still fit."""
PATTERN_STEPS_PER_UNIT: Final = 4096
"""How many (program instruction x name byte) steps a budget unit pays for. Without its
DFA (out of memory) RE2 simulates the NFA, 2 to 4 ns a step here, so a unit is at most
about a pair comparison's 30 microseconds; matching a short name is one unit."""
PATTERN_COMPILE_INSTRUCTIONS_PER_UNIT: Final = 32
"""Compiling takes about 1 microsecond per program instruction."""


class _Pattern:
    """A `patternProperties` pattern compiled with RE2, and the work one match costs."""

    __slots__ = ("regex", "size")

    def __init__(self, regex: re2._Regexp | None) -> None:
        self.regex = regex
        self.size = regex.programsize if regex is not None else 0


def _compile(pattern: str) -> _Pattern:
    """`pattern` compiled for matching property names. Raises TooMuchWork when RE2
    refuses it for its size (it could not be matched within bounded work).

    Patterns are matched with RE2 (linear time): Java's backtracking regex, which
    Confluent uses, is open to catastrophic backtracking on attacker-chosen names.
    Deviation: a pattern RE2 cannot compile for its syntax (backreferences, lookaround)
    matches nothing here.
    """
    options = re2.Options()
    options.log_errors = False
    options.max_mem = PATTERN_MEMORY
    try:
        return _Pattern(re2.compile(pattern, options=options))
    except re2.error as error:
        # RE2 says which by message only; "too large" is the one refusal that is not
        # about syntax, and matching nothing for it could call a breaking change compatible.
        if "too large" in str(error):
            raise TooMuchWork(f"the patternProperties pattern {pattern[:80]!r} is too large "
                              f"to match within bounded work") from None
        return _Pattern(None)
    except Exception:  # re2 raises other error types for some unsupported syntax
        return _Pattern(None)


class _Comparison:
    """One comparison of a writer graph with a reader graph (see the module docstring)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.calls = 0
        # Memoised here rather than in a global cache: a schema with more patterns than
        # such a cache holds made every lookup a miss (and a compile), and one comparison
        # must pay for its own patterns within its own budget.
        self.patterns: dict[str, _Pattern] = {}
        self.partials: dict[tuple[int, str], Node | None] = {}
        self.memo: dict[tuple[int, int], Diffs] = {}
        self.active: dict[tuple[int, int], int] = {}
        self.leaned_on: float = math.inf
        self.pending: dict[tuple[int, int], tuple[Node, Node]] = {}
        self.new_incompatible = False

    # --- driving passes --------------------------------------------------------------

    def run(self, original: Node, update: Node) -> Diffs:
        while True:
            self.new_incompatible = False
            self.pending = {}
            result = self.root(original, update)
            done: set[tuple[int, int]] = set()
            while len(done) < len(self.pending):
                for key, (o, u) in list(self.pending.items()):
                    if key not in done:
                        done.add(key)
                        if key not in self.memo:
                            self.root(o, u)
            if not self.new_incompatible:
                return result

    def root(self, original: Node, update: Node) -> Diffs:
        self.leaned_on = math.inf
        return self.compare(original, update)

    # --- one pair --------------------------------------------------------------------

    def spend(self, units: int) -> None:
        """Charge `units` of work. Raises TooMuchWork once the budget is spent."""
        self.calls += units
        if self.calls > self.budget:
            raise TooMuchWork()

    def compare(self, original: Node | None, update: Node | None) -> Diffs:
        self.spend(1)
        if original is None and update is None:
            return []
        if original is None:
            return [(C.SCHEMA_ADDED, "")]
        if update is None:
            return [(C.SCHEMA_REMOVED, "")]
        if original is update:
            return []
        key = (id(original), id(update))
        known = self.memo.get(key)
        if known is not None:
            return known
        depth = self.active.get(key)
        if depth is not None:  # a recursive schema: assume compatible (greatest fixed point)
            self.leaned_on = min(self.leaned_on, depth)
            return []
        depth = len(self.active)
        if depth >= MAX_PAIR_DEPTH:  # compared later from a fresh stack
            self.pending.setdefault(key, (original, update))
            self.leaned_on = -1
            return []
        self.active[key] = depth
        outer_leaned_on, self.leaned_on = self.leaned_on, math.inf
        try:
            diffs = capped(self.compare_types(original, update))
        finally:
            del self.active[key]
        if incompatible(diffs):
            self.new_incompatible = self.new_incompatible or key in self.pending
            self.memo[key] = diffs
        elif self.leaned_on >= depth:
            self.memo[key] = diffs
        self.leaned_on = min(outer_leaned_on, self.leaned_on)
        return diffs

    def compatible(self, original: Node | None, update: Node | None) -> tuple[bool, Diffs]:
        diffs = self.compare(original, update)
        return not incompatible(diffs), diffs

    def compare_types(self, o: Node, u: Node) -> Diffs:
        if o.kind is not Kind.COMBINED and u.kind is Kind.COMBINED:
            if len(u.subschemas) == 1:
                ok, diffs = self.compatible(o, u.subschemas[0])
                if ok:
                    return diffs
            elif u.criterion in (Criterion.ANY, Criterion.ONE):
                for branch in u.subschemas:
                    ok, diffs = self.compatible(o, branch)
                    if ok:
                        return diffs + [(C.SUM_TYPE_EXTENDED, "")]
        elif o.kind is Kind.COMBINED and u.kind is not Kind.COMBINED:
            if len(o.subschemas) == 1:
                ok, diffs = self.compatible(o.subschemas[0], u)
                if ok:
                    return diffs
            elif o.criterion is Criterion.ALL:
                for branch in o.subschemas:
                    ok, diffs = self.compatible(branch, u)
                    if ok:
                        return diffs + [(C.PRODUCT_TYPE_NARROWED, "")]
        if o.kind is not u.kind:
            if o.kind is Kind.FALSE or u.is_emptyish:
                return []
            if o.connect_type == "bytes" and u.connect_type == "bytes":
                return []  # Confluent: Kafka Connect's decimal-as-bytes fix stays compatible
            return [(C.TYPE_CHANGED, "")]
        diffs: Diffs = []
        if o.id != u.id:
            diffs.append((C.ID_CHANGED, ""))
        if o.title != u.title:
            diffs.append((C.TITLE_CHANGED, ""))
        if o.description != u.description:
            diffs.append((C.DESCRIPTION_CHANGED, ""))
        if o.default != u.default:
            diffs.append((C.DEFAULT_CHANGED, ""))
        kind = o.kind
        if kind is Kind.STRING:
            self.strings(o, u, diffs)
        elif kind is Kind.NUMBER:
            self.numbers(o, u, diffs)
        elif kind is Kind.CONST:
            if o.const_value != u.const_value:
                diffs.append((C.ENUM_ARRAY_CHANGED, "const"))
        elif kind is Kind.ENUM:
            self.enums(o, u, diffs)
        elif kind is Kind.COMBINED:
            self.combined(o, u, diffs)
        elif kind is Kind.NOT:
            ok, _ = self.compatible(u.negated, o.negated)  # reversed, as in Confluent
            diffs.append((C.NOT_TYPE_NARROWED if ok else C.NOT_TYPE_EXTENDED, "not"))
        elif kind is Kind.OBJECT:
            self.objects(o, u, diffs)
        elif kind is Kind.ARRAY:
            self.arrays(o, u, diffs)
        return diffs

    # --- leaves ----------------------------------------------------------------------

    @staticmethod
    def bound(diffs: Diffs, path: str, old: Number | None, new: Number | None,
              added: Change, removed: Change, increased: Change, decreased: Change) -> None:
        if old is None and new is None:
            return
        if old is None:
            diffs.append((added, path))
        elif new is None:
            diffs.append((removed, path))
        elif old < new:
            diffs.append((increased, path))
        elif old > new:
            diffs.append((decreased, path))

    def strings(self, o: Node, u: Node, diffs: Diffs) -> None:
        self.bound(diffs, "maxLength", o.max_length, u.max_length, C.MAX_LENGTH_ADDED,
                   C.MAX_LENGTH_REMOVED, C.MAX_LENGTH_INCREASED, C.MAX_LENGTH_DECREASED)
        self.bound(diffs, "minLength", o.min_length, u.min_length, C.MIN_LENGTH_ADDED,
                   C.MIN_LENGTH_REMOVED, C.MIN_LENGTH_INCREASED, C.MIN_LENGTH_DECREASED)
        if o.pattern is None and u.pattern is not None:
            diffs.append((C.PATTERN_ADDED, "pattern"))
        elif o.pattern is not None and u.pattern is None:
            diffs.append((C.PATTERN_REMOVED, "pattern"))
        elif o.pattern != u.pattern:
            diffs.append((C.PATTERN_CHANGED, "pattern"))

    def numbers(self, o: Node, u: Node, diffs: Diffs) -> None:
        self.bound(diffs, "maximum", o.maximum, u.maximum, C.MAXIMUM_ADDED, C.MAXIMUM_REMOVED,
                   C.MAXIMUM_INCREASED, C.MAXIMUM_DECREASED)
        self.bound(diffs, "minimum", o.minimum, u.minimum, C.MINIMUM_ADDED, C.MINIMUM_REMOVED,
                   C.MINIMUM_INCREASED, C.MINIMUM_DECREASED)
        # Deviation: Confluent compares a decreased exclusiveMaximum with the update's
        # "maximum" (a slip that throws when there is none); the limit is compared here.
        self.bound(diffs, "exclusiveMaximum", o.exclusive_maximum, u.exclusive_maximum,
                   C.EXCLUSIVE_MAXIMUM_ADDED, C.EXCLUSIVE_MAXIMUM_REMOVED,
                   C.EXCLUSIVE_MAXIMUM_INCREASED, C.EXCLUSIVE_MAXIMUM_DECREASED)
        self.bound(diffs, "exclusiveMinimum", o.exclusive_minimum, u.exclusive_minimum,
                   C.EXCLUSIVE_MINIMUM_ADDED, C.EXCLUSIVE_MINIMUM_REMOVED,
                   C.EXCLUSIVE_MINIMUM_INCREASED, C.EXCLUSIVE_MINIMUM_DECREASED)
        old, new = o.multiple_of, u.multiple_of
        if old is None and new is not None:
            diffs.append((C.MULTIPLE_OF_ADDED, "multipleOf"))
        elif old is not None and new is None:
            diffs.append((C.MULTIPLE_OF_REMOVED, "multipleOf"))
        elif old is not None and new is not None and old != new:
            if old != 0 and _divides(old, new):
                diffs.append((C.MULTIPLE_OF_EXPANDED, "multipleOf"))
            elif new != 0 and _divides(new, old):
                diffs.append((C.MULTIPLE_OF_REDUCED, "multipleOf"))
            else:
                diffs.append((C.MULTIPLE_OF_CHANGED, "multipleOf"))
        if o.requires_integer != u.requires_integer:
            diffs.append((C.TYPE_EXTENDED if o.requires_integer else C.TYPE_NARROWED, ""))

    @staticmethod
    def enums(o: Node, u: Node, diffs: Diffs) -> None:
        if o.enum_values != u.enum_values:
            if u.enum_values >= o.enum_values:
                diffs.append((C.ENUM_ARRAY_EXTENDED, "enum"))
            elif o.enum_values >= u.enum_values:
                diffs.append((C.ENUM_ARRAY_NARROWED, "enum"))
            else:
                diffs.append((C.ENUM_ARRAY_CHANGED, "enum"))

    # --- combined schemas ------------------------------------------------------------

    def combined(self, o: Node, u: Node, diffs: Diffs) -> None:
        assert o.criterion is not None and u.criterion is not None
        if o.criterion is not u.criterion:
            single_o, single_u = len(o.subschemas) == 1, len(u.subschemas) == 1
            if (u.criterion is Criterion.ANY or (single_o and single_u)
                    or (single_o and u.criterion is Criterion.ONE)
                    or (single_u and o.criterion is Criterion.ALL)):
                diffs.append((C.COMBINED_TYPE_EXTENDED, ""))
            else:
                diffs.append((C.COMBINED_TYPE_CHANGED, ""))
                return
        originals = _distinct(o.subschemas)
        updates = _distinct(u.subschemas)
        if len(originals) < len(updates):
            diffs.append((C.PRODUCT_TYPE_EXTENDED if u.criterion is Criterion.ALL
                          else C.SUM_TYPE_EXTENDED, ""))
        elif len(originals) > len(updates):
            diffs.append((C.SUM_TYPE_NARROWED if o.criterion is not Criterion.ALL
                          else C.PRODUCT_TYPE_NARROWED, ""))
        matched = self.matching(originals, updates)
        prefix = o.criterion.value
        for index, partner in sorted(matched.items()):
            first, second = originals[index], updates[partner]
            if first.fingerprint is None or first.fingerprint != second.fingerprint:
                diffs += under(f"{prefix}/{index}", self.compare(first, second))
        if len(matched) < min(len(originals), len(updates)):
            diffs.append((C.COMBINED_TYPE_SUBSCHEMAS_CHANGED, ""))

    def matching(self, originals: list[Node], updates: list[Node]) -> dict[int, int]:
        """A maximum matching of originals to updates over compatible pairs.

        Structurally identical pairs are matched first (they are compatible); the rest
        is Kuhn's augmenting-path search, evaluating a pair only when the search needs
        it, so the common case (a few subschemas changed) costs a few comparisons.
        """
        match_o: dict[int, int] = {}
        match_u: dict[int, int] = {}
        by_print: dict[bytes, int] = {}
        for j, node in enumerate(updates):
            if node.fingerprint is not None:
                by_print.setdefault(node.fingerprint, j)
        for i, node in enumerate(originals):
            j = by_print.get(node.fingerprint) if node.fingerprint is not None else None
            if j is not None and j not in match_u:
                match_o[i], match_u[j] = j, i
        edges: dict[tuple[int, int], bool] = {}

        def edge(i: int, j: int) -> bool:
            known = edges.get((i, j))
            if known is None:
                known = match_o.get(i) == j or self.compatible(originals[i], updates[j])[0]
                edges[(i, j)] = known
            return known

        for start in range(len(originals)):
            if start in match_o or len(match_o) >= min(len(originals), len(updates)):
                continue
            self.augment(start, len(updates), edge, match_o, match_u)
        return match_o

    @staticmethod
    def augment(start: int, n_updates: int, edge: Callable[[int, int], bool],
                match_o: dict[int, int], match_u: dict[int, int]) -> bool:
        """Iterative depth-first search for an augmenting path from original `start`."""
        # The update at the same position first, then free updates, then taken ones: a
        # subschema usually keeps its place, and a direct match is the common case.
        same = [start] if start < n_updates and start not in match_u else []
        candidates = (same + [j for j in range(n_updates) if j not in match_u and j != start]
                      + [j for j in range(n_updates) if j in match_u])
        visited: set[int] = set()
        frames: list[list[int]] = [[start, 0]]  # [original, next candidate position]
        chosen: list[int] = []  # the update leading from frames[k] to frames[k + 1]
        while frames:
            frame = frames[-1]
            i = frame[0]
            while frame[1] < len(candidates):
                j = candidates[frame[1]]
                frame[1] += 1
                if j in visited or not edge(i, j):
                    continue
                visited.add(j)
                if j not in match_u:
                    for a, b in [(f[0], c) for f, c in zip(frames, chosen)] + [(i, j)]:
                        match_o[a], match_u[b] = b, a
                    return True
                chosen.append(j)
                frames.append([match_u[j], 0])
                break
            else:
                frames.pop()
                if chosen:
                    chosen.pop()
        return False

    # --- objects ---------------------------------------------------------------------

    def objects(self, o: Node, u: Node, diffs: Diffs) -> None:
        for name in o.properties:
            if name in u.properties:
                was, now = name in o.required, name in u.required
                if was and not now:
                    diffs.append((C.REQUIRED_ATTRIBUTE_REMOVED, f"required/{name}"))
                elif now and not was:
                    diffs.append((C.REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED
                                  if name in u.properties_with_default
                                  else C.REQUIRED_ATTRIBUTE_ADDED, f"required/{name}"))
        names = list(o.properties) + [name for name in u.properties if name not in o.properties]
        for name in names:
            self.property(o, u, name, f"properties/{name}", diffs)
        self.dependencies(o, u, diffs)
        self.additional_properties(o, u, diffs)
        self.unevaluated(o.unevaluated_properties, u.unevaluated_properties,
                         "unevaluatedProperties", C.UNEVALUATED_PROPERTIES_ADDED,
                         C.UNEVALUATED_PROPERTIES_REMOVED, C.UNEVALUATED_PROPERTIES_EXTENDED,
                         C.UNEVALUATED_PROPERTIES_NARROWED, diffs)
        self.bound(diffs, "maxProperties", o.max_properties, u.max_properties,
                   C.MAX_PROPERTIES_ADDED, C.MAX_PROPERTIES_REMOVED, C.MAX_PROPERTIES_INCREASED,
                   C.MAX_PROPERTIES_DECREASED)
        self.bound(diffs, "minProperties", o.min_properties, u.min_properties,
                   C.MIN_PROPERTIES_ADDED, C.MIN_PROPERTIES_REMOVED, C.MIN_PROPERTIES_INCREASED,
                   C.MIN_PROPERTIES_DECREASED)

    def property(self, o: Node, u: Node, name: str, path: str, diffs: Diffs) -> None:
        old, new = o.properties.get(name), u.properties.get(name)
        if new is None:
            assert old is not None
            if _open_object(u):
                diffs.append((C.PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL, path))
                return
            partial = self.partial_object_schema(u, name)
            if partial is not None:
                ok, sub = self.compatible(old, partial)
                diffs += under(path, sub)
                diffs.append((C.PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL if ok
                              else C.PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL, path))
            elif old.kind is Kind.FALSE:
                diffs.append((C.PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL, path))
            else:
                diffs.append((C.PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL, path))
        elif old is None:
            has_default = name in u.properties_with_default
            if _open_object(o):
                if new.is_emptyish:
                    diffs.append((C.PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL, path))
                elif name in u.required:
                    diffs.append((C.REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL
                                  if has_default else C.REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL,
                                  path))
                else:
                    diffs.append((C.OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL, path))
                return
            partial = self.partial_object_schema(o, name)
            if partial is not None:
                ok, sub = self.compatible(partial, new)
                diffs += under(path, sub)
                diffs.append((C.PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL if ok
                              else C.PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL, path))
            if name in u.required:
                diffs.append((C.REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL
                              if has_default else C.REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL,
                              path))
            else:
                diffs.append((C.OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL, path))
        else:
            diffs += under(path, self.compare(old, new))

    def partial_object_schema(self, node: Node, name: str) -> Node | None:
        """The schema a property absent from `node.properties` must satisfy, if limited.

        Every pattern tried is charged to the budget (a property against thousands of
        patterns is thousands of matches); the answer is remembered for the comparison.
        """
        key = (id(node), name)
        if key in self.partials:
            return self.partials[key]
        found = self.pattern_schema(node, name)
        if found is None:
            found = _additional_object_schema(node)
        self.partials[key] = found
        return found

    def pattern_schema(self, node: Node, name: str) -> Node | None:
        """The schema of the first of `node`'s patternProperties that matches `name`."""
        if not node.pattern_properties:
            return None
        steps_per_instruction = len(name.encode("utf-8", "surrogatepass")) + 1
        for pattern, schema in node.pattern_properties:
            compiled = self.pattern(pattern)
            if compiled.regex is None:
                continue
            self.spend(1 + compiled.size * steps_per_instruction // PATTERN_STEPS_PER_UNIT)
            if compiled.regex.search(name) is not None:
                return schema
        return None

    def pattern(self, pattern: str) -> _Pattern:
        """`pattern` compiled once per comparison, its compiling charged to the budget."""
        known = self.patterns.get(pattern)
        if known is None:
            known = _compile(pattern)
            self.spend(1 + known.size // PATTERN_COMPILE_INSTRUCTIONS_PER_UNIT)
            self.patterns[pattern] = known
        return known

    def dependencies(self, o: Node, u: Node, diffs: Diffs) -> None:
        names = list(o.property_dependencies) + [
            n for n in u.property_dependencies if n not in o.property_dependencies]
        for name in names:
            path = f"dependencies/{name}"
            old, new = o.property_dependencies.get(name), u.property_dependencies.get(name)
            if new is None:
                diffs.append((C.DEPENDENCY_ARRAY_REMOVED, path))
            elif old is None:
                diffs.append((C.DEPENDENCY_ARRAY_ADDED, path))
            elif old != new:
                diffs.append((C.DEPENDENCY_ARRAY_EXTENDED if new >= old
                              else C.DEPENDENCY_ARRAY_NARROWED if old >= new
                              else C.DEPENDENCY_ARRAY_CHANGED, path))
        names = list(o.schema_dependencies) + [
            n for n in u.schema_dependencies if n not in o.schema_dependencies]
        for name in names:
            path = f"dependencies/{name}"
            old_schema, new_schema = o.schema_dependencies.get(name), u.schema_dependencies.get(name)
            if new_schema is None:
                diffs.append((C.DEPENDENCY_SCHEMA_REMOVED, path))
            elif old_schema is None:
                diffs.append((C.DEPENDENCY_SCHEMA_ADDED, path))
            else:
                diffs += under(path, self.compare(old_schema, new_schema))

    def additional_properties(self, o: Node, u: Node, diffs: Diffs) -> None:
        path = "additionalProperties"
        if o.additional_properties != u.additional_properties:
            diffs.append((C.ADDITIONAL_PROPERTIES_ADDED if u.additional_properties
                          else C.ADDITIONAL_PROPERTIES_REMOVED, path))
        elif o.additional_properties_schema is None and u.additional_properties_schema is not None:
            diffs.append((C.ADDITIONAL_PROPERTIES_NARROWED, path))
        elif u.additional_properties_schema is None and o.additional_properties_schema is not None:
            diffs.append((C.ADDITIONAL_PROPERTIES_EXTENDED, path))
        else:
            diffs += under(path, self.compare(o.additional_properties_schema,
                                               u.additional_properties_schema))

    def unevaluated(self, old: Node | None, new: Node | None, path: str, added: Change,
                    removed: Change, extended: Change, narrowed: Change, diffs: Diffs) -> None:
        if old is None and new is None:
            return
        if old is None:
            assert new is not None
            diffs.append((removed if new.kind is Kind.FALSE else narrowed, path))
        elif new is None:
            diffs.append((added if old.kind is Kind.FALSE else extended, path))
        elif old.kind is Kind.FALSE and new.kind is not Kind.FALSE:
            diffs.append((added, path))
        elif old.kind is not Kind.FALSE and new.kind is Kind.FALSE:
            diffs.append((removed, path))
        elif old.is_emptyish and not new.is_emptyish:
            diffs.append((narrowed, path))
        elif not old.is_emptyish and new.is_emptyish:
            diffs.append((extended, path))
        else:
            diffs += under(path, self.compare(old, new))

    # --- arrays ----------------------------------------------------------------------

    def arrays(self, o: Node, u: Node, diffs: Diffs) -> None:
        diffs += under("items", self.compare(o.all_items, u.all_items))
        self.tuple_items(o, u, diffs)
        path = "additionalItems"
        if o.additional_items != u.additional_items:
            diffs.append((C.ADDITIONAL_ITEMS_REMOVED if o.additional_items
                          else C.ADDITIONAL_ITEMS_ADDED, path))
        elif o.additional_items_schema is None and u.additional_items_schema is not None:
            diffs.append((C.ADDITIONAL_ITEMS_NARROWED, path))
        elif u.additional_items_schema is None and o.additional_items_schema is not None:
            diffs.append((C.ADDITIONAL_ITEMS_EXTENDED, path))
        else:
            diffs += under(path, self.compare(o.additional_items_schema, u.additional_items_schema))
        self.unevaluated(o.unevaluated_items, u.unevaluated_items, "unevaluatedItems",
                         C.UNEVALUATED_ITEMS_ADDED, C.UNEVALUATED_ITEMS_REMOVED,
                         C.UNEVALUATED_ITEMS_EXTENDED, C.UNEVALUATED_ITEMS_NARROWED, diffs)
        self.bound(diffs, "maxItems", o.max_items, u.max_items, C.MAX_ITEMS_ADDED,
                   C.MAX_ITEMS_REMOVED, C.MAX_ITEMS_INCREASED, C.MAX_ITEMS_DECREASED)
        self.bound(diffs, "minItems", o.min_items, u.min_items, C.MIN_ITEMS_ADDED,
                   C.MIN_ITEMS_REMOVED, C.MIN_ITEMS_INCREASED, C.MIN_ITEMS_DECREASED)
        if o.unique_items != u.unique_items:
            diffs.append((C.UNIQUE_ITEMS_REMOVED if o.unique_items else C.UNIQUE_ITEMS_ADDED,
                          "uniqueItems"))
        self.bound(diffs, "maxContains", o.max_contains, u.max_contains, C.MAX_CONTAINS_ADDED,
                   C.MAX_CONTAINS_REMOVED, C.MAX_CONTAINS_INCREASED, C.MAX_CONTAINS_DECREASED)
        self.bound(diffs, "minContains", o.min_contains, u.min_contains, C.MIN_CONTAINS_ADDED,
                   C.MIN_CONTAINS_REMOVED, C.MIN_CONTAINS_INCREASED, C.MIN_CONTAINS_DECREASED)

    def tuple_items(self, o: Node, u: Node, diffs: Diffs) -> None:
        olds, news = o.item_schemas or [], u.item_schemas or []
        for index in range(min(len(olds), len(news))):
            diffs += under(f"items/{index}", self.compare(olds[index], news[index]))
        for index in range(len(news), len(olds)):
            path, old = f"items/{index}", olds[index]
            if _open_array(u):
                diffs.append((C.ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL, path))
                continue
            partial = _partial_array_schema(u)
            if partial is not None:
                ok, sub = self.compatible(old, partial)
                diffs += under(path, sub)
                diffs.append((C.ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL if ok
                              else C.ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL, path))
            elif old.kind is Kind.FALSE:
                diffs.append((C.ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL, path))
            else:
                diffs.append((C.ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL, path))
        for index in range(len(olds), len(news)):
            path, new = f"items/{index}", news[index]
            if _open_array(o):
                diffs.append((C.ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL if new.is_emptyish
                              else C.ITEM_ADDED_TO_OPEN_CONTENT_MODEL, path))
                continue
            partial = _partial_array_schema(o)
            if partial is not None:
                ok, sub = self.compatible(partial, new)
                diffs += under(path, sub)
                diffs.append((C.ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL if ok
                              else C.ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL, path))
            else:
                diffs.append((C.ITEM_ADDED_TO_CLOSED_CONTENT_MODEL, path))


def _divides(divisor: Number, value: Number) -> bool:
    """Whether `value` is an exact multiple of `divisor` (both non-zero, possibly huge)."""
    a, b = Decimal(value), Decimal(divisor)
    digits = a.adjusted() - b.adjusted() + 1
    if digits > 10_000:  # an exact remainder would need too many digits: treat as not
        return False
    with localcontext() as context:
        context.prec = max(digits, 1) + max(len(a.as_tuple().digits), len(b.as_tuple().digits)) + 2
        try:
            return (a % b).is_zero()
        except InvalidOperation:
            return False


def _open_object(node: Node) -> bool:
    """Confluent's open content model: extra properties may have any value."""
    if not node.additional_properties or node.additional_properties_schema is not None:
        return False
    if node.pattern_properties:
        return False
    uneval = node.unevaluated_properties
    return uneval is None or uneval.is_emptyish


def _additional_object_schema(node: Node) -> Node | None:
    """The schema a property that no pattern of `node` matches must satisfy, if limited."""
    if node.additional_properties_schema is not None:
        return node.additional_properties_schema
    uneval = node.unevaluated_properties
    if (node.additional_properties and uneval is not None and uneval.kind is not Kind.FALSE
            and not uneval.is_emptyish):
        return uneval
    return None


def _open_array(node: Node) -> bool:
    if not node.additional_items or node.additional_items_schema is not None:
        return False
    uneval = node.unevaluated_items
    return uneval is None or uneval.is_emptyish


def _partial_array_schema(node: Node) -> Node | None:
    if node.additional_items_schema is not None:
        return node.additional_items_schema
    uneval = node.unevaluated_items
    if (node.additional_items and uneval is not None and uneval.kind is not Kind.FALSE
            and not uneval.is_emptyish):
        return uneval
    return None


def _distinct(nodes: list[Node]) -> list[Node]:
    """Subschemas with duplicates removed (Confluent collapses equal ones into a set)."""
    seen_prints: set[bytes] = set()
    seen_ids: set[int] = set()
    out: list[Node] = []
    for node in nodes:
        if node.fingerprint is not None:
            if node.fingerprint in seen_prints:
                continue
            seen_prints.add(node.fingerprint)
        elif id(node) in seen_ids:
            continue
        seen_ids.add(id(node))
        out.append(node)
    return out


def compare(original: Node, update: Node, budget: int) -> list[Difference]:
    """Confluent's differences from `original` (the writer) to `update` (the reader).

    Raises TooMuchWork past `budget` units of work (see the module docstring).
    """
    diffs = _Comparison(budget).run(original, update)
    return [Difference(change, f"#/{path}") for change, path in diffs]
