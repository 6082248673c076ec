"""What a write's plan is given and returns: the writer's plan context.

A plan runs under the writer's lock against a cache caught up with the log and
returns `(records, result)`. A grouped plan (group commit) is also given the
`PendingWrites` of the writes planned before it in its batch, and plans as if they
were applied. These types sit below the writer so that what plans use beside it
(`store.ids`) can name them without importing the writer.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar, Union

from store.records import Key, SchemaValue, Value, context_of

T = TypeVar("T")

#: How many times a write is planned again when someone else's append took its place.
WRITE_ATTEMPTS = 20


@dataclass(frozen=True)
class Restated:
    """A record re-stating a key's current value under exactly the bytes `raw_key`."""

    raw_key: bytes
    value: Value | None


Record = Union[tuple[Key, Value | None], Restated]
Plan = Callable[[], tuple[list[Record], T]]


class PendingWrites:
    """The records of the writes planned before this one in its batch, in order: not
    in the log nor the cache yet, but they will land just before this write's records.
    A grouped plan reads the cache and these together (the next free id, say)."""

    def __init__(self) -> None:
        self.records: list[tuple[Key, Value | None]] = []
        self.raw_keys: set[bytes] = set()
        # Schema versions pending, by (context, id) (the first, which later ones of the id
        # were planned to agree with) and their subjects: a bulk import plans thousands
        # beside each other, and must not scan them all for each.
        self._by_id: dict[tuple[str, int], SchemaValue] = {}
        self._subjects: set[str] = set()

    def __bool__(self) -> bool:
        return bool(self.records)

    def add(self, records: list[tuple[Key, Value | None]], raw_keys: Iterable[bytes] = ()) -> None:
        """Count `records` (and their encoded keys) as pending, after those already."""
        self.records.extend(records)
        self.raw_keys.update(raw_keys)
        for _, value in records:
            if type(value) is SchemaValue:
                self._by_id.setdefault((context_of(value.subject), value.id), value)
                self._subjects.add(value.subject)

    def values(self) -> list[Value]:
        return [value for _, value in self.records if value is not None]

    def schema_with_id(self, context: str, schema_id: int) -> SchemaValue | None:
        """The first pending schema version with `schema_id` in `context`."""
        return self._by_id.get((context, schema_id))

    def has_subject(self, subject: str) -> bool:
        """Whether a version of `subject` is pending."""
        return subject in self._subjects


class PlanAlone(Exception):
    """Raised by a grouped plan that cannot be planned beside the pending writes of its
    batch: it is planned again first in the next batch. Only raise it while
    `PendingWrites` is not empty (first in a batch, a write is planned alone)."""


GroupPlan = Callable[[PendingWrites], tuple[list[Record], T]]
