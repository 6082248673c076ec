"""Bounded work for Protobuf (issue 47): every check costs time and memory bounded by the
size of what it is given, hostile input is refused early with a readable reason, and the
compiler's helper processes leave nothing behind however they end.

Timings are asserted only as generous bounds (2 cores); what each test protects is the
correctness assertion beside them.
"""
from __future__ import annotations

import time

import pytest

from registry.schema_types.protobuf import PROTOBUF
from registry.schema_types.protobuf import compatibility


def nested_fan_out(depth: int, fan_out: int, leaf_extra: str = "") -> str:
    """Each message holds `fan_out` fields of the message below it, `depth` levels deep:
    `fan_out ** depth` paths to the leaf in about a kilobyte."""
    parts = ['syntax = "proto3";', "package p;", f"message M0 {{ int32 a = 1; {leaf_extra} }}"]
    for level in range(1, depth + 1):
        fields = " ".join(f"M{level - 1} f{i} = {i};" for i in range(1, fan_out + 1))
        parts.append(f"message M{level} {{ {fields} }}")
    return "\n".join(parts)


# --- Compatibility: each pair of message types compared once, within a budget ----------


def test_compatibility_of_a_deep_fan_out_is_linear_not_exponential():
    old = PROTOBUF.parse(nested_fan_out(7, 12), {})
    new = PROTOBUF.parse(nested_fan_out(7, 12, "string b = 2;"), {})
    started = time.perf_counter()
    backward, forward = new.read_errors(old), old.read_errors(new)
    elapsed = time.perf_counter() - started
    assert backward == [] and forward == [], "a field added at the leaf is compatible both ways"
    assert elapsed < 2.0, f"12**7 paths to one changed leaf must not be walked one by one ({elapsed:.1f} s)"


def test_a_leaf_difference_is_reported_once_under_its_own_type():
    old = PROTOBUF.parse(nested_fan_out(7, 12), {})
    new = PROTOBUF.parse(nested_fan_out(7, 12).replace("int32 a = 1;", "string a = 1;"), {})
    differences = compatibility.compare(old, new)
    leaf = [d for d in differences if d.type is compatibility.DifferenceType.FIELD_SCALAR_KIND_CHANGED]
    assert [d.path for d in leaf] == ["#/M0/1"], "the leaf's change is named once, at its type"
    named = [d for d in differences if d.type is compatibility.DifferenceType.FIELD_NAMED_TYPE_CHANGED]
    assert len(named) == 7 * 12, "every field of every level that reaches the leaf is named once"
    assert len(differences) == len(set(differences)), "no difference is reported twice"


def test_a_spent_budget_ends_the_comparison():
    old = PROTOBUF.parse(nested_fan_out(3, 4), {})
    new = PROTOBUF.parse(nested_fan_out(3, 4, "string b = 2;"), {})
    with pytest.raises(compatibility.TooMuchWork):
        compatibility.compare(old, new, budget=5)
    assert compatibility.compare(old, new, budget=1_000) == compatibility.compare(old, new), \
        "a budget that suffices changes nothing"


def test_a_spent_budget_is_an_incompatibility_that_says_why(monkeypatch):
    from registry.schema_types.protobuf import schema
    monkeypatch.setattr(schema, "MIN_WORK", 0)
    monkeypatch.setattr(schema, "WORK_PER_ELEMENT", 0)
    old = PROTOBUF.parse(nested_fan_out(2, 2), {})
    new = PROTOBUF.parse(nested_fan_out(2, 2, "string b = 2;"), {})
    errors = new.read_errors(old)
    assert len(errors) == 1 and "deciding compatibility would take more than" in errors[0], \
        "a check past its budget is refused with a reason, never a 500 or a hang"
