"""One registry node: its log, cache, reader and service, wired from settings."""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from registry.compatibility import CompatibilityLevel
from registry.modes import Mode
from registry.service import RegistryService
from registry.settings import Settings
from store.cache import Cache
from store.log import Log
from store.reader import LogReader
from store.sqlite_log import SqliteLog

log = logging.getLogger(__name__)


@dataclass
class Node:
    settings: Settings
    log: Log
    cache: Cache
    reader: LogReader
    service: RegistryService

    @property
    def cluster_id(self) -> str:
        """The Kafka cluster id for `/v1/metadata/id`; "embedded" without Kafka."""
        return getattr(self.log, "cluster_id", None) or "embedded"

    def close(self) -> None:
        """Stop reading and release the log. Blocks until the reader thread has ended."""
        self.log.close()  # first, so that a reader blocked in read() wakes at once
        self.reader.stop()


def open_log(settings: Settings) -> Log:
    """The log the settings name: the `kafkastore.topic` topic when
    `kafkastore.bootstrap.servers` is set, else the embedded SQLite file.

    Blocks while connecting (for Kafka, up to `kafkastore.init.timeout.ms`). Raises
    LogUnavailable, or LogMisconfigured for an unusable topic or setting.
    """
    if settings.kafka_bootstrap_servers:
        # Imported here: the embedded store must not need confluent-kafka.
        from store.kafka_config import KafkaLogConfig
        from store.kafka_log import KafkaLog

        config = KafkaLogConfig.from_kafkastore(settings.prefixed("kafkastore."))
        log.info("using the Kafka topic %s at %s", config.topic, config.bootstrap_servers)
        return KafkaLog(config)
    path = os.path.join(settings.data_dir, "schemas.sqlite")
    log.info("using the embedded log at %s", path)
    return SqliteLog(path)


def build_node(settings: Settings, log_: Log | None = None) -> Node:
    """Wire a node and start its reader. `log_` overrides the configured log (tests)."""
    the_log = log_ if log_ is not None else open_log(settings)
    cache = Cache()
    reader = LogReader(the_log, cache)
    service = RegistryService(
        the_log, cache, reader,
        default_compatibility=CompatibilityLevel(settings.compatibility_level),
        default_mode=Mode(settings.mode),
        timeout=settings.store_timeout_seconds,
    )
    reader.start()
    return Node(settings, the_log, cache, reader, service)
