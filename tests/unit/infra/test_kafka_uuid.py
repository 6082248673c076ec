"""`infra.kafka_uuid.random_uuid`: cluster ids as Kafka's ``Uuid.randomUuid()`` makes them.

An id whose text starts with ``-`` is read by ``kafka-storage format -t`` as an option
(issue 11 item 20: ``make test`` failed about once in 64 runs). These tests feed the
generator chosen draws instead of sampling: every id whose text would start with
``-`` must be drawn again, every other one returned as drawn.
"""
from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Iterator

import pytest

from infra.kafka_uuid import random_uuid


def draws(*values: uuid.UUID) -> Callable[[], uuid.UUID]:
    """A draw function that hands out ``values`` in order, then fails the test."""
    queue: Iterator[uuid.UUID] = iter(values)

    def draw() -> uuid.UUID:
        candidate = next(queue, None)
        if candidate is None:
            pytest.fail("the generator drew more often than it needed to", pytrace=False)
        return candidate

    return draw


def with_first_byte(first: int) -> uuid.UUID:
    """A version 4 UUID whose first byte is ``first`` (its text's first character
    depends on that byte's top six bits alone)."""
    return uuid.UUID(bytes=bytes([first]) + uuid.uuid4().bytes[1:])


def kafka_text(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


GOOD = uuid.UUID("6ba7b810-9dad-41d1-80b4-00c04fd430c8")


@pytest.mark.parametrize("first", range(256))
def test_no_first_byte_can_give_an_id_starting_with_a_dash(first: int) -> None:
    drawn = with_first_byte(first)
    text = random_uuid(draws(drawn, GOOD))
    assert not text.startswith("-"), "a cluster id starting with '-' is read as a command-line option"
    if kafka_text(drawn).startswith("-"):
        assert text == kafka_text(GOOD), "an id starting with '-' is drawn again, as Kafka does"
    else:
        assert text == kafka_text(drawn), "any other id is used as drawn, without a needless draw"


def test_it_draws_again_as_often_as_needed() -> None:
    dashes = [with_first_byte(b) for b in (0xF8, 0xF9, 0xFA, 0xFB)]  # the four first bytes giving '-'
    assert all(kafka_text(d).startswith("-") for d in dashes), "the test's bad draws really start with '-'"
    assert random_uuid(draws(*dashes, GOOD)) == kafka_text(GOOD), "the first acceptable draw is returned"


def test_reserved_ids_are_never_returned() -> None:
    # Uuid.ZERO_UUID and Uuid.ONE_UUID (the metadata topic's id) are never random in Kafka.
    zero, one = uuid.UUID(int=0), uuid.UUID(int=1)
    assert random_uuid(draws(zero, one, GOOD)) == kafka_text(GOOD), "reserved ids are drawn again"


def test_ids_are_kafkas_text_form() -> None:
    text = random_uuid()
    assert len(text) == 22, "16 bytes in base64 without padding are 22 characters"
    decoded = base64.urlsafe_b64decode(text + "==")
    assert len(decoded) == 16 and uuid.UUID(bytes=decoded).version == 4, "a random (version 4) UUID"
