"""One registry node: its log, cache, reader, writer, service and election, wired from settings.

    node = build_node(load_settings())      # starts the reader and joins the election
    node.writer.wait_ready(60)
    ...
    node.close()

A single node and a cluster run the same path: every node has an elector (the static
one when there is nothing to elect through), a `LeaderGate` that turns its callbacks
into the writer's terms of office, and a forwarder for the writes it may not append.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, replace

from election.elector import Elector
from election.identity import LeaderIdentity
from election.static import StaticElector
from registry.compatibility import CompatibilityLevel
from registry.leader_gate import ElectionView, LeaderGate
from registry.modes import Mode
from registry.associations import Associations
from registry.service import RegistryService
from registry.settings import Settings
from registry.zookeeper_options import kazoo_options
from store.cache import Cache
from store.log import Log
from store.reader import LogReader
from store.sqlite_log import SqliteLog
from store.writer import LogWriter

log = logging.getLogger(__name__)


@dataclass
class Node:
    settings: Settings
    log: Log
    cache: Cache
    reader: LogReader
    writer: LogWriter
    service: RegistryService
    elector: Elector
    gate: LeaderGate
    cluster_id: str  # the Kafka cluster id for `/v1/metadata/id`; "embedded" without Kafka
    associations: Associations

    def close(self) -> None:
        """Hand leadership over, stop reading and release the log.

        Blocks until the election is left (so another node takes over at once) and the
        reader thread has ended.
        """
        self.elector.close()
        self.gate.close()
        self.writer.close()
        self.log.close()  # before stopping the reader, so that one blocked in read() wakes at once
        self.reader.stop()


def open_log(settings: Settings, origin: str = "") -> tuple[Log, str]:
    """The log the settings name and its cluster id: the `kafkastore.topic` topic when
    `kafkastore.bootstrap.servers` is set, else the embedded SQLite file ("embedded").
    A Kafka log stamps every record it appends with `origin` (the node's URL).

    Blocks while connecting (for Kafka, up to `kafkastore.init.timeout.ms`). Raises
    LogUnavailable, or LogMisconfigured for an unusable topic or setting.
    """
    if settings.kafka_bootstrap_servers:
        # Imported here: the embedded store must not need confluent-kafka.
        from store.kafka_config import KafkaLogConfig
        from store.kafka_log import KafkaLog

        config = KafkaLogConfig.from_kafkastore(settings.prefixed("kafkastore."))
        log.info("using the Kafka topic %s at %s", config.topic, config.bootstrap_servers)
        kafka = KafkaLog(config)
        kafka.origin = origin.encode()
        return kafka, kafka.cluster_id or "embedded"
    path = os.path.join(settings.data_dir, "schemas.sqlite")
    log.info("using the embedded log at %s", path)
    return SqliteLog(path), "embedded"


def build_node(settings: Settings, log_: Log | None = None) -> Node:
    """Wire a node, start its reader and join the election. `log_` overrides the
    configured log (tests)."""
    identity = node_identity(settings)
    if log_ is not None:
        the_log, cluster_id = log_, "embedded"
    else:
        the_log, cluster_id = open_log(settings, origin=identity.url)
    elector = build_elector(settings, replace(identity, store=store_name(settings, cluster_id)))
    cache = Cache()
    reader = LogReader(the_log, cache)
    writer = LogWriter(the_log, cache, reader, ElectionView(elector), timeout=settings.store_timeout_seconds)
    service = RegistryService(
        cache, writer,
        default_compatibility=CompatibilityLevel(settings.compatibility_level),
        default_mode=Mode(settings.mode),
        group_commit=settings.group_commit,
    )
    reader.start()
    gate = LeaderGate(writer, elector)
    elector.start(on_elected=gate.on_elected, on_demoted=gate.on_demoted)
    return Node(settings, the_log, cache, reader, writer, service, elector, gate, cluster_id,
                Associations(service, cache, writer))


def node_identity(settings: Settings) -> LeaderIdentity:
    """Where other nodes reach this one."""
    scheme, _, port = settings.listener
    return LeaderIdentity(scheme, settings.advertised_host, port)


def store_name(settings: Settings, cluster_id: str) -> str:
    """The log this node serves, as its leader identity names it: nodes follow only a
    leader that serves the same one."""
    if settings.kafka_bootstrap_servers:
        return f"kafka:{cluster_id}:{settings.get('kafkastore.topic')}"
    return f"embedded:{os.path.abspath(settings.data_dir)}"


def build_elector(settings: Settings, identity: LeaderIdentity) -> Elector:
    """The elector the settings name (static, zookeeper or kafka) for `identity`, not started."""
    backend = settings.election_backend
    if backend == "static":
        return StaticElector(identity)
    timeout_ms = settings.election_session_timeout_ms
    if backend == "zookeeper":
        from election.zookeeper import ZooKeeperElector

        return ZooKeeperElector(identity, settings.zookeeper_connect, eligible=settings.leader_eligible,
                                root=settings.zookeeper_root,
                                session_timeout=timeout_ms / 1000,
                                client_options=kazoo_options(settings.zookeeper_security))
    from election.kafka_group import KafkaGroupElector
    from store.kafka_config import KafkaLogConfig

    kafka = KafkaLogConfig.from_kafkastore(settings.prefixed("kafkastore."))
    return KafkaGroupElector(identity, kafka.bootstrap_servers, eligible=settings.leader_eligible,
                             group_id=settings.group_id,
                             session_timeout_ms=timeout_ms, config=kafka.client)
