"""`registry.http.negotiation`: the id lane's check agrees with the full choice, and its
memos stay bounded."""
from __future__ import annotations

import pytest

from registry.http import negotiation
from registry.http.negotiation import V1_JSON, answers_default, response_type


@pytest.mark.parametrize("accept", [
    "*/*", "application/json", "application/vnd.schemaregistry.v1+json", "text/html",
    "application/json;q=0.9, application/vnd.schemaregistry+json", "application/*", "", "a" * 5000,
    "text/html, */*;q=0.1", "application/vnd.schemaregistry.v1+json;q=0"])
def test_the_lane_check_agrees_with_the_full_choice(accept):
    raw = accept.encode("latin-1")
    for _ in range(2):  # asked, then remembered
        assert answers_default(raw) is (response_type(accept) == V1_JSON)


def test_long_headers_are_neither_parsed_nor_remembered():
    long_value = "text/html, " + "x" * 5000
    assert response_type(long_value) == V1_JSON  # past 4 KiB: as no header at all, as before
    assert answers_default(long_value.encode()) is True
    assert long_value not in negotiation._memo
    assert long_value.encode() not in negotiation._default_memo


def test_the_memos_are_bounded_in_entries():
    for n in range(600):
        answers_default(b"application/x-%d" % n)
    assert len(negotiation._memo) <= 256 and len(negotiation._default_memo) <= 256
