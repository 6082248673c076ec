"""Leader election: which node appends to the log, and where followers forward writes.

The contract is `Elector` (election/elector.py); the leader's address is a
`LeaderIdentity`. Backends:

- `election.static.StaticElector`: single node, or a fixed leader;
- `election.zookeeper.ZooKeeperElector`: an ephemeral znode (needs ``kazoo``);
- `election.kafka_group.KafkaGroupElector`: a Kafka consumer group (needs ``confluent-kafka``).

The ZooKeeper and Kafka backends are not imported here, so that a single-node
registry runs without their client libraries. This package imports nothing else of ours.
"""
from election.elector import ElectionCallback, Elector
from election.identity import LeaderIdentity
from election.static import StaticElector

__all__ = ["ElectionCallback", "Elector", "LeaderIdentity", "StaticElector"]
