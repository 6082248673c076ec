"""LeaderIdentity: the JSON other nodes read to find the leader, and its URL."""
from __future__ import annotations

import pytest

from election import LeaderIdentity


def test_json_is_confluents_layout() -> None:
    # Followers written in other languages (or other versions) parse these bytes.
    assert LeaderIdentity("http", "sr-1", 8081).to_json() == (
        '{"host":"sr-1","port":8081,"scheme":"http","version":1}'
    )


def test_node_id_is_added_only_when_set() -> None:
    assert LeaderIdentity("https", "sr-1", 8443, "node-a").to_json() == (
        '{"host":"sr-1","port":8443,"scheme":"https","version":1,"node_id":"node-a"}'
    )


@pytest.mark.parametrize(
    "identity",
    [
        LeaderIdentity("http", "sr-1", 8081),
        LeaderIdentity("https", "10.0.0.7", 443, "node-7"),
        LeaderIdentity("http", "::1", 8081),
        LeaderIdentity("http", "hôte", 1),
    ],
)
def test_round_trip(identity: LeaderIdentity) -> None:
    # What the leader publishes is exactly what followers decode.
    assert LeaderIdentity.from_json(identity.to_json()) == identity, "text round trip"
    assert LeaderIdentity.from_json(identity.to_json().encode()) == identity, "bytes (znode data) round trip"


def test_decoding_ignores_unknown_fields_and_defaults_the_scheme() -> None:
    # Confluent's identities carry master_eligibility; old ones had no scheme.
    decoded = LeaderIdentity.from_json('{"host":"h","port":1,"master_eligibility":true,"version":1}')
    assert decoded == LeaderIdentity("http", "h", 1)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not json",
        "[]",
        '{"port":8081}',
        '{"host":"h"}',
        '{"host":"h","port":"8081"}',
        '{"host":"h","port":true}',
        '{"host":"h","port":0}',
        '{"host":"h","port":70000}',
        '{"host":"","port":1}',
        '{"host":"h","port":1,"scheme":"ftp"}',
        '{"host":"h","port":1,"version":2}',
        '{"host":"h","port":1,"version":true}',
        b"\xff",
    ],
)
def test_bad_identities_are_rejected_with_value_error(text: str | bytes) -> None:
    # A corrupt znode or commit must read as "no usable leader", never crash a node.
    with pytest.raises(ValueError):
        LeaderIdentity.from_json(text)


def test_url_brackets_ipv6_hosts() -> None:
    assert LeaderIdentity("http", "sr-1", 8081).url == "http://sr-1:8081"
    assert LeaderIdentity("https", "::1", 8443).url == "https://[::1]:8443"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://0.0.0.0:8081", LeaderIdentity("http", "0.0.0.0", 8081)),
        ("https://[::1]:8443/", LeaderIdentity("https", "::1", 8443)),
        ("http://sr-1", LeaderIdentity("http", "sr-1", 80)),
        ("https://sr-1", LeaderIdentity("https", "sr-1", 443)),
    ],
)
def test_from_listener_url(url: str, expected: LeaderIdentity) -> None:
    # Nodes derive their identity from the `listeners` setting.
    assert LeaderIdentity.from_url(url) == expected


@pytest.mark.parametrize("url", ["ftp://h:1", "http://h:x", "http://h:1/path", "http://:1", "sr-1:8081"])
def test_bad_listener_urls_are_rejected(url: str) -> None:
    with pytest.raises(ValueError):
        LeaderIdentity.from_url(url)


def test_identity_is_a_frozen_value() -> None:
    # Identities are compared and used as keys: they must not change under anyone.
    identity = LeaderIdentity("http", "h", 1)
    with pytest.raises(AttributeError):
        identity.port = 2  # type: ignore[misc]
    assert {identity: 1}[LeaderIdentity("http", "h", 1)] == 1
