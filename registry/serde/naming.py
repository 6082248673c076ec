"""Subject name strategies: which subject a topic's keys or values are registered under.

Each strategy has confluent-kafka's signature, `(SerializationContext | None,
record_name | None) -> subject`, so theirs and ours are interchangeable in
`subject.name.strategy`:

| strategy                  | subject                 | Java name               |
|---------------------------|-------------------------|-------------------------|
| `topic_subject_name_strategy` (default) | `{topic}-key` / `{topic}-value` | TopicNameStrategy |
| `record_subject_name_strategy`          | `{record full name}`            | RecordNameStrategy |
| `topic_record_subject_name_strategy`    | `{topic}-{record full name}`    | TopicRecordNameStrategy |

`dependence` tells a serializer what a strategy's answer depends on, so that it can
compute the subject once per topic (or once) and not per message. Strategies it
does not know are called for every message.
"""
from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

from confluent_kafka import schema_registry as confluent
from confluent_kafka.serialization import SerializationContext

SubjectNameStrategy = Callable[[SerializationContext | None, str | None], str | None]


def topic_subject_name_strategy(ctx: SerializationContext | None, record_name: str | None) -> str:
    """`{topic}-key` or `{topic}-value`. Raises ValueError without a context."""
    if ctx is None:
        raise ValueError("TopicNameStrategy needs a SerializationContext (the topic and the message field)")
    return ctx.topic + "-" + ctx.field


def topic_record_subject_name_strategy(ctx: SerializationContext | None, record_name: str | None) -> str | None:
    """`{topic}-{record full name}`; None for a schema without a name. Raises ValueError without a context."""
    if ctx is None:
        raise ValueError("TopicRecordNameStrategy needs a SerializationContext (the topic)")
    return ctx.topic + "-" + record_name if record_name is not None else None


def record_subject_name_strategy(ctx: SerializationContext | None, record_name: str | None) -> str | None:
    """`{record full name}`; None for a schema without a name. Needs no context."""
    return record_name


# The names Confluent's documentation and Java client use.
TopicNameStrategy = topic_subject_name_strategy
TopicRecordNameStrategy = topic_record_subject_name_strategy
RecordNameStrategy = record_subject_name_strategy

_BY_TYPE: dict[str, SubjectNameStrategy] = {
    "TOPIC": topic_subject_name_strategy,
    "RECORD": record_subject_name_strategy,
    "TOPIC_RECORD": topic_record_subject_name_strategy,
}


class Dependence(enum.Enum):
    """What a strategy's subject depends on, besides the (fixed) record name."""

    NOTHING = "nothing"              # record: one subject for every message
    TOPIC_AND_FIELD = "topic+field"  # topic, topic-record: one per (topic, key|value)
    UNKNOWN = "unknown"              # any other callable: ask it every time


_DEPENDENCE: dict[Any, Dependence] = {
    topic_subject_name_strategy: Dependence.TOPIC_AND_FIELD,
    topic_record_subject_name_strategy: Dependence.TOPIC_AND_FIELD,
    record_subject_name_strategy: Dependence.NOTHING,
    confluent.topic_subject_name_strategy: Dependence.TOPIC_AND_FIELD,
    confluent.topic_record_subject_name_strategy: Dependence.TOPIC_AND_FIELD,
    confluent.record_subject_name_strategy: Dependence.NOTHING,
}


def dependence(strategy: SubjectNameStrategy) -> Dependence:
    return _DEPENDENCE.get(strategy, Dependence.UNKNOWN)


def strategy_from_conf(strategy: Any = None, strategy_type: Any = None) -> SubjectNameStrategy:
    """The strategy that `subject.name.strategy` (a callable) or `subject.name.strategy.type`
    (TOPIC, RECORD or TOPIC_RECORD) selects; TopicNameStrategy when neither is set.

    Raises ValueError for a non-callable strategy or an unknown type. ASSOCIATED, a
    Confluent Cloud feature confluent-kafka defaults to, is refused: this registry
    has no associations, and confluent-kafka falls back to TOPIC without them.
    """
    if strategy is not None:
        if not callable(strategy):
            raise ValueError("subject.name.strategy must be callable")
        return strategy
    if strategy_type is None:
        return topic_subject_name_strategy
    name = str(getattr(strategy_type, "value", strategy_type)).upper()
    if name not in _BY_TYPE:
        raise ValueError(f"Invalid subject.name.strategy.type: {strategy_type}. "
                         f"Valid values are: {', '.join(_BY_TYPE)}")
    return _BY_TYPE[name]
