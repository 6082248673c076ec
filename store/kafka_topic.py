"""The `_schemas` topic: created if absent, refused if it cannot be a log.

Confluent's `KafkaStore` rules: one partition (order across the whole log), and
`cleanup.policy=compact` (a `delete` policy would expire schemas after a week). The
replication factor is the configured one capped at the number of brokers, with a
warning, as Confluent does.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

from store.kafka_config import KafkaLogConfig
from store.log import LogMisconfigured, LogUnavailable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TopicFacts:
    """What start-up learned of the topic and its cluster."""

    cluster_id: str
    # The topic's `max.message.bytes` (a record batch must fit); None when not read.
    max_message_bytes: int | None


def ensure_topic(admin: AdminClient, config: KafkaLogConfig) -> TopicFacts:
    """Create the topic if absent, check that it can serve as the log, and return the
    Kafka cluster id and the topic's size limit.

    Blocks for a few round trips, up to `config.init_timeout` while Kafka cannot be
    reached. Raises LogUnavailable (Kafka unreachable) or LogMisconfigured (a topic
    with several partitions or a non-compact cleanup policy).
    """
    deadline = time.monotonic() + config.init_timeout
    cluster_id, brokers = _describe_cluster(admin, config, deadline)
    if config.skip_validation:
        return TopicFacts(cluster_id, None)  # Confluent's escape hatch for clusters that deny DescribeConfigs
    partitions = _partitions(admin, config.topic, deadline)
    created = partitions is None
    if created:
        _create(admin, config, brokers, deadline)
        partitions = _wait_for_topic(admin, config.topic, deadline)
    if len(partitions) != 1:
        raise LogMisconfigured(
            f"The schema topic {config.topic} should have only 1 partition but has {len(partitions)}: "
            "the registry needs one total order of its records")
    replicas = len(partitions[0].replicas)
    if replicas < config.replication_factor and not created:  # _create warned already
        log.warning("The replication factor of the schema topic %s is %d, less than the desired %d. "
                    "In production, add brokers and increase the topic's replication factor.",
                    config.topic, replicas, config.replication_factor)
    topic_config = _topic_config(admin, config.topic, deadline)
    policy = topic_config.get("cleanup.policy", "")
    if policy != "compact":
        raise LogMisconfigured(
            f"The retention policy of the schema topic {config.topic} is incorrect: cleanup.policy is "
            f"{policy!r}, it must be 'compact', or Kafka deletes schemas once they expire")
    max_bytes = topic_config.get("max.message.bytes", "")
    return TopicFacts(cluster_id, int(max_bytes) if max_bytes.isdigit() else None)


def _remaining(deadline: float) -> float:
    return max(0.1, deadline - time.monotonic())


def _describe_cluster(admin: AdminClient, config: KafkaLogConfig, deadline: float) -> tuple[str, int]:
    try:
        cluster = admin.describe_cluster(request_timeout=_remaining(deadline)).result(
            timeout=_remaining(deadline) + 1)
    except KafkaException as exc:
        raise LogUnavailable(f"cannot reach Kafka at {config.bootstrap_servers}: {exc.args[0].str()}") from None
    except TimeoutError:
        raise LogUnavailable(f"cannot reach Kafka at {config.bootstrap_servers} within "
                             f"{config.init_timeout:.0f} s") from None
    return cluster.cluster_id or "", len(cluster.nodes)


def _partitions(admin: AdminClient, topic: str, deadline: float) -> list | None:
    """The topic's partitions, or None if it does not exist."""
    future = admin.describe_topics(TopicCollection([topic]), request_timeout=_remaining(deadline))[topic]
    try:
        return list(future.result(timeout=_remaining(deadline) + 1).partitions)
    except KafkaException as exc:
        error: KafkaError = exc.args[0]
        if error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return None
        raise LogUnavailable(f"cannot describe the schema topic {topic}: {error.str()}") from None
    except TimeoutError:
        raise LogUnavailable(f"Kafka did not describe the schema topic {topic} in time") from None


def _create(admin: AdminClient, config: KafkaLogConfig, brokers: int, deadline: float) -> None:
    factor = min(config.replication_factor, max(brokers, 1))
    if factor < config.replication_factor:
        log.warning("Creating the schema topic %s with a replication factor of %d, less than the "
                    "desired %d, because only %d brokers are available",
                    config.topic, factor, config.replication_factor, brokers)
    topic_config = {"cleanup.policy": "compact"}
    if config.min_insync_replicas is not None:
        # More than the replicas would refuse every acks=all write.
        topic_config["min.insync.replicas"] = str(min(config.min_insync_replicas, factor))
    log.info("creating the schema topic %s (1 partition, replication factor %d, %s)",
             config.topic, factor, topic_config)
    future = admin.create_topics([NewTopic(config.topic, num_partitions=1, replication_factor=factor,
                                           config=topic_config)],
                                 operation_timeout=_remaining(deadline),
                                 request_timeout=_remaining(deadline))[config.topic]
    try:
        future.result(timeout=_remaining(deadline) + 1)
    except KafkaException as exc:
        error: KafkaError = exc.args[0]
        if error.code() != KafkaError.TOPIC_ALREADY_EXISTS:  # another node was first: fine
            raise LogUnavailable(f"cannot create the schema topic {config.topic}: {error.str()}") from None
    except TimeoutError:
        raise LogUnavailable(f"Kafka did not create the schema topic {config.topic} in time") from None


def _wait_for_topic(admin: AdminClient, topic: str, deadline: float) -> list:
    # Metadata reaches every broker shortly after creation; poll with the deadline.
    while True:
        partitions = _partitions(admin, topic, deadline)
        if partitions is not None:
            return partitions
        if time.monotonic() > deadline:
            raise LogUnavailable(f"the schema topic {topic} did not appear after creation")
        time.sleep(0.1)


def _topic_config(admin: AdminClient, topic: str, deadline: float) -> dict[str, str]:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    future = admin.describe_configs([resource], request_timeout=_remaining(deadline))[resource]
    try:
        entries = future.result(timeout=_remaining(deadline) + 1)
    except KafkaException as exc:
        raise LogUnavailable(f"cannot read the configuration of the schema topic {topic}: "
                             f"{exc.args[0].str()}") from None
    except TimeoutError:
        raise LogUnavailable(f"Kafka did not describe the schema topic {topic}'s configuration in time") from None
    return {name: entry.value for name, entry in entries.items() if entry.value is not None}
