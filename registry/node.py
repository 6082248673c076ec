"""One registry node: its log, cache, reader, service and election, wired from settings."""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

from election.elector import Elector
from election.identity import LeaderIdentity
from registry.compatibility import CompatibilityLevel
from registry.forward import Forwarder
from registry.leader_gate import LeaderGate
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
    elector: Elector | None = None  # None: a single node on the embedded store, always the writer
    forwarder: Forwarder | None = field(default=None)
    gate: LeaderGate | None = field(default=None)

    @property
    def cluster_id(self) -> str:
        """The Kafka cluster id for `/v1/metadata/id`; "embedded" without Kafka."""
        return getattr(self.log, "cluster_id", None) or "embedded"

    def close(self) -> None:
        """Hand leadership over, stop reading and release the log.

        Blocks until the election is left (so another node takes over at once) and the
        reader thread has ended.
        """
        if self.elector is not None:
            self.elector.close()
        if self.gate is not None:
            self.gate.close()
        if self.forwarder is not None:
            self.forwarder.close()
        self.log.close()  # before stopping the reader, so that one blocked in read() wakes at once
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
    node = Node(settings, the_log, cache, reader, service)
    if settings.election_backend != "static":
        node.elector = build_elector(settings)
        if hasattr(the_log, "origin"):
            the_log.origin = node.elector.identity.url.encode()
        node.forwarder = Forwarder(settings.store_timeout_seconds)
        node.gate = gate = LeaderGate(service, node.elector)
        service.set_may_write(gate.check)
        node.elector.start(on_elected=gate.on_elected, on_demoted=gate.on_demoted)
    return node


def build_elector(settings: Settings) -> Elector:
    """The elector the settings name (zookeeper or kafka), not started."""
    scheme, _, port = settings.listener
    identity = LeaderIdentity(scheme, settings.advertised_host, port)
    timeout_ms = settings.election_session_timeout_ms
    if settings.election_backend == "zookeeper":
        from election.zookeeper import ZooKeeperElector

        return ZooKeeperElector(identity, settings.zookeeper_connect, eligible=settings.leader_eligible,
                                root=settings.get("leader.election.zookeeper.root"),
                                session_timeout=timeout_ms / 1000)
    from election.kafka_group import KafkaGroupElector
    from store.kafka_config import KafkaLogConfig

    kafka = KafkaLogConfig.from_kafkastore(settings.prefixed("kafkastore."))
    return KafkaGroupElector(identity, kafka.bootstrap_servers, eligible=settings.leader_eligible,
                             group_id=settings.get("schema.registry.group.id"),
                             session_timeout_ms=timeout_ms, config=kafka.client)
