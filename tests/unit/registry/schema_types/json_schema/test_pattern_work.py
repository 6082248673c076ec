"""JSON Schema compatibility over `patternProperties`: every property name matched against
every pattern is work, charged to the comparison's budget; each pattern is compiled once
per comparison; a legitimately large schema still compares (issue 47, item 7).

Correctness is asserted first; the time bounds are generous (the goal is far below them).
"""
from __future__ import annotations

import json
import time
from typing import Any

import pytest

from registry.schema_types import CheckTooCostly
from registry.schema_types.json_schema import JSON, JsonSchema
from registry.schema_types.json_schema import compatibility


def parse(schema: Any) -> JsonSchema:
    return JSON.parse(json.dumps(schema), {})


def patterned(count: int, **extra: Any) -> dict[str, Any]:
    """A closed object whose `count` patterns each admit strings under one prefix."""
    return {"type": "object", "additionalProperties": False,
            "patternProperties": {f"^p{i}_[a-z]+$": {"type": "string"} for i in range(count)}, **extra}


def test_many_new_properties_against_thousands_of_patterns_are_refused_within_the_budget() -> None:
    """The issue's request: 5,000 stored patterns, 100 new properties (500,000 matches).
    It took 10-65 s (a compile per match once the patterns outgrew the regex cache)."""
    old = parse(patterned(5000))
    new = parse(patterned(5000, properties={f"n{j}": {"type": "integer"} for j in range(100)}))
    began = time.monotonic()
    with pytest.raises(CheckTooCostly) as refused:
        new.read_errors(old)
    took = time.monotonic() - began
    reason = str(refused.value)
    assert "deciding compatibility would take more than" in reason, \
        "matches past the work budget end the comparison with a reason, as other spent budgets do"
    assert "patternProperties" in reason, "the reason names what to simplify"
    with pytest.raises(CheckTooCostly) as again:
        new.read_errors(old)
    assert str(again.value) == reason, "the refusal is a matter of work counted, not of time"
    assert took < 10, f"a refused comparison stops at its budget, not after every match ({took:.1f} s)"


def test_each_pattern_is_compiled_once_per_comparison(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[str] = []
    real = compatibility.re2.compile

    def counting(pattern: str, *args: Any, **kwargs: Any) -> Any:
        compiled.append(pattern)
        return real(pattern, *args, **kwargs)

    monkeypatch.setattr(compatibility.re2, "compile", counting)
    old = parse(patterned(5000))
    new = parse(patterned(5000, properties={f"n{j}": {"type": "integer"} for j in range(10)}))
    assert new.read_errors(old) == [], \
        "a property no pattern matches, added to a closed model, is compatible (Confluent)"
    assert len(compiled) == len(set(compiled)) == 5000, \
        f"5,000 patterns compiled once each, not once per property ({len(compiled)} compiles)"


def test_a_large_schema_with_patterns_still_compares_and_finds_the_covering_pattern() -> None:
    """Work proportional to the schemas: 3,000 patterns and 30 new properties (90,000
    matches) is within the budget of schemas this size, and the verdict is Confluent's."""
    old = parse(patterned(3000))
    covered = {f"p2999_x{chr(97 + j % 26)}{chr(97 + j // 26)}": {"type": "string"} for j in range(29)}
    new = parse(patterned(3000, properties={**covered, "p2999_bad": {"type": "integer"}}))
    reasons = new.read_errors(old)
    assert reasons, "a property whose writer pattern allowed strings cannot be read as an integer"
    assert all("more than" not in reason for reason in reasons), \
        f"a schema of this size is compared, not refused for work: {reasons[:1]}"
    assert any("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL" in reason
               and "p2999_bad" in reason for reason in reasons), reasons
    assert not any("p2999_x" in reason for reason in reasons), \
        "properties the last pattern covers with the same type are compatible"
    older = parse(patterned(3000, properties=covered))
    assert older.read_errors(new) and not parse(patterned(3000, properties=covered)).read_errors(older), \
        "the same comparison the other way round, and identical schemas, judged as before"


def test_a_pattern_too_large_to_match_within_bounded_work_is_refused_quickly() -> None:
    """`\\pL{1000}` is eleven characters but an enormous program: it is refused for its
    size (matching nothing instead could call a breaking change compatible)."""
    huge = "\\pL{1000}"
    old = parse({"type": "object", "additionalProperties": False,
                 "patternProperties": {f"{huge}{i}": {"type": "string"} for i in range(200)}})
    new = parse({"type": "object", "additionalProperties": False,
                 "patternProperties": {f"{huge}{i}": {"type": "string"} for i in range(200)},
                 "properties": {"a": {"type": "integer"}}})
    began = time.monotonic()
    with pytest.raises(CheckTooCostly) as refused:
        new.read_errors(old)
    took = time.monotonic() - began
    reason = str(refused.value)
    assert "too large" in reason and "patternProperties" in reason, reason
    assert took < 5, f"one oversized pattern ends the comparison ({took:.1f} s)"


def test_a_long_name_against_a_large_pattern_costs_more_than_one_unit() -> None:
    comparison = compatibility._Comparison(budget=10**9)
    node = parse({"type": "object", "patternProperties": {"\\w{1000}": {"type": "string"}}})._root
    before = comparison.calls
    comparison.partial_object_schema(node, "x" * 2000)
    long_cost = comparison.calls - before
    before = comparison.calls
    comparison.partial_object_schema(node, "y")
    assert comparison.calls - before <= 2, "a short name against a compiled pattern is a unit or two"
    assert long_cost > 100, f"the cost follows the pattern's program size times the name ({long_cost})"
    before = comparison.calls
    comparison.partial_object_schema(node, "x" * 2000)
    assert comparison.calls == before, "a name is matched against a node's patterns once per comparison"


def test_a_registration_whose_check_spends_its_budget_is_refused_422_and_writes_nothing() -> None:
    """Through the front end: the check's budget spent is the request's fault (422 with
    the reason), never an incompatibility it did not decide, a 5xx or a write."""
    import json as json_module

    from tests.asgi_client import NodeClient
    with NodeClient() as client:
        first = client.post("/subjects/patterned/versions",
                            {"schemaType": "JSON", "schema": json_module.dumps(patterned(5000))})
        assert first.status == 200, first.body
        grown = patterned(5000, properties={f"n{j}": {"type": "integer"} for j in range(100)})
        answer = client.post("/subjects/patterned/versions",
                             {"schemaType": "JSON", "schema": json_module.dumps(grown)})
        assert answer.status == 422 and answer.json()["error_code"] == 42201, answer.body
        assert "patternProperties" in answer.json()["message"], answer.body
        assert client.get("/subjects/patterned/versions").json() == [1], "nothing written"
