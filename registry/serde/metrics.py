"""Optional Prometheus counters for the serializers, in a registry the application gives.

    from prometheus_client import CollectorRegistry
    metrics = CollectorRegistry()
    serializer = AvroSerializer(client, schema, conf={"metrics.registry": metrics})

`metrics.registry` (ours; confluent-kafka has no such key) is a prometheus-client
`CollectorRegistry`: serializers and deserializers given the same one share its
counters. Without it nothing is counted and the per-message path is unchanged. With
it, each message costs one counter increment (a lock in prometheus-client, about a
microsecond). prometheus-client is not a dependency of the client side: it must be
installed to use this key.

Counters, labelled by `direction` (serialize, deserialize) and `format` (avro):
`schema_registry_serde_messages_total`, `schema_registry_serde_errors_total`, and
`schema_registry_serde_schema_lookups_total` (registrations, lookups and fetches by id:
registry round trips, one per new subject or schema id).
"""
from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

CONF_KEY = "metrics.registry"

# One set of counters per CollectorRegistry: prometheus-client refuses to register a
# name twice, and every serializer sharing a registry must count into the same ones.
_SHARED: weakref.WeakKeyDictionary[Any, _Counters] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


class _Counters:
    def __init__(self, registry: Any) -> None:
        from prometheus_client import Counter  # optional: only for an application that asks

        labels = ["direction", "format"]
        self.messages = Counter("schema_registry_serde_messages", "Messages serialized or deserialized",
                                labels, registry=registry)
        self.errors = Counter("schema_registry_serde_errors", "Messages that could not be (de)serialized",
                              labels, registry=registry)
        self.lookups = Counter("schema_registry_serde_schema_lookups",
                               "Schema registrations, lookups and fetches by id (registry round trips)",
                               labels, registry=registry)


class SerdeMetrics:
    """The counters of one serializer or deserializer (`direction`, `format`)."""

    def __init__(self, registry: Any, direction: str, format_: str) -> None:
        try:
            import prometheus_client  # noqa: F401
        except ImportError:
            raise ValueError(f"{CONF_KEY} needs prometheus-client installed (pip install prometheus-client)") \
                from None
        with _SHARED_LOCK:
            counters = _SHARED.get(registry)
            if counters is None:
                counters = _SHARED[registry] = _Counters(registry)
        self._messages = counters.messages.labels(direction, format_)
        self._errors = counters.errors.labels(direction, format_)
        self._lookups = counters.lookups.labels(direction, format_)

    def counting(self, convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """`convert` (an encoder or decoder), counting each call and each failure."""
        messages, errors = self._messages, self._errors

        def counted(value: Any) -> Any:
            try:
                result = convert(value)
            except Exception:
                errors.inc()
                raise
            messages.inc()
            return result

        return counted

    def looked_up(self) -> None:
        self._lookups.inc()

    def failed(self) -> None:
        """A message refused before its converter ran (bad framing, say)."""
        self._errors.inc()


def from_conf(conf: dict[str, Any], direction: str) -> SerdeMetrics | None:
    """Pop `metrics.registry` from a serializer's configuration; its counters, if given."""
    registry = conf.pop(CONF_KEY, None)
    return None if registry is None else SerdeMetrics(registry, direction, "avro")
