"""Per-subject state of a serializer, found per message in one or two dict lookups.

    routes = SubjectRoutes(strategy, record_name, resolve=lambda subject: header_for(subject))
    state = routes.get(ctx)          # resolve(subject) runs once per subject, under a lock

A serializer's per-message path may inline `get`'s fast half (`constant`, then
`by_field[ctx.field][ctx.topic]`) to save a method call; both are read-only to it.

The JSON Schema and Protobuf serializers keep what they learned about a subject (its
schema id, so its header) here. The subject is worked out from the context as the
strategy would, but only once per (field, topic) for the strategies whose answer
depends on nothing else (`naming.dependence`); any other strategy is asked per message.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from confluent_kafka.serialization import SerializationContext, SerializationError

from registry.serde import naming

T = TypeVar("T")


class SubjectRoutes(Generic[T]):
    """`resolve(subject)`'s answer for the subject each context maps to. Thread-safe;
    `resolve` runs once per subject (unless `cacheable` is False, then on every call)
    and may block (on the registry); what it raises propagates."""

    def __init__(self, strategy: naming.SubjectNameStrategy, record_name: str | None,
                 resolve: Callable[[str], T], cacheable: bool = True) -> None:
        self._strategy = strategy
        self._record_name = record_name
        self._resolve = resolve
        self._cacheable = cacheable
        self._dependence = naming.dependence(strategy)
        self._lock = threading.Lock()
        self._by_subject: dict[str, T] = {}
        self.by_field: dict[Any, dict[str, T]] = {}
        """ctx.field -> ctx.topic -> state, for the (field, topic)s resolved so far."""
        self.constant: T | None = None
        """The state for every context, once known, for strategies that ignore the context."""

    def get(self, ctx: SerializationContext | None) -> T:
        """The state for `ctx`'s subject."""
        constant = self.constant
        if constant is not None:
            return constant
        if ctx is not None:
            routes = self.by_field.get(ctx.field)
            if routes is not None:
                found = routes.get(ctx.topic)
                if found is not None:
                    return found
        return self._slow(ctx)

    def subject(self, ctx: SerializationContext | None) -> str:
        subject = self._strategy(ctx, self._record_name)
        if subject is None:
            raise SerializationError("the subject name strategy gave no subject: the schema has no "
                                     "name (a JSON Schema's title, a Protobuf message's full name)")
        return subject

    def _slow(self, ctx: SerializationContext | None) -> T:
        subject = self.subject(ctx)
        if not self._cacheable:
            return self._resolve(subject)
        found = self._by_subject.get(subject)
        if found is None:
            with self._lock:
                found = self._by_subject.get(subject)
                if found is None:
                    found = self._resolve(subject)
                    self._by_subject[subject] = found
        if self._dependence is naming.Dependence.NOTHING:
            self.constant = found
        elif self._dependence is naming.Dependence.TOPIC_AND_FIELD and ctx is not None:
            self.by_field.setdefault(ctx.field, {})[ctx.topic] = found
        return found
