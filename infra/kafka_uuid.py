"""Kafka's random ids (cluster ids), generated as Kafka's own ``Uuid.randomUuid()`` does.

A Kafka ``Uuid`` is written as its 16 bytes in URL-safe base64 without padding (22
characters). That alphabet includes ``-``, so about one random id in 64 starts with
one, and ``kafka-storage format -t -Abc...`` reads such an id as an option ("argument
--cluster-id/-t: expected one argument"). ``Uuid.randomUuid()`` therefore draws again
until the id is not reserved (the all-zero id and id 1, the metadata topic's) and does
not start with ``-``; so does `random_uuid`.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable

# Uuid.ZERO_UUID and Uuid.ONE_UUID (METADATA_TOPIC_ID): never handed out at random.
_RESERVED = frozenset({0, 1})


def random_uuid(draw: Callable[[], uuid.UUID] = uuid.uuid4) -> str:
    """A random version 4 id in Kafka's text form, safe to pass as a command-line argument.

    ``draw`` supplies the candidates (``uuid.uuid4``, like ``java.util.UUID.randomUUID``
    behind Kafka's); tests pass their own. Never blocks; never raises.
    """
    while True:
        candidate = draw()
        text = base64.urlsafe_b64encode(candidate.bytes).rstrip(b"=").decode()
        if candidate.int not in _RESERVED and not text.startswith("-"):
            return text
