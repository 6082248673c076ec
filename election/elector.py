"""The `Elector` contract: which node leads, and telling this node when it starts or stops.

Usage::

    elector = ZooKeeperElector(me, "zk:2181")           # or KafkaGroupElector, StaticElector
    elector.start(on_elected=take_office, on_demoted=leave_office)
    elector.leader()                                    # where to forward writes, or None

Backends: `election.static.StaticElector` (single node, or a fixed leader),
`election.zookeeper.ZooKeeperElector` (an ephemeral znode) and
`election.kafka_group.KafkaGroupElector` (a Kafka consumer group).

Two views of leadership, on purpose not the same:

- ``leader()`` is what the backend says: the node that holds the claim. It may name a
  node, this one included, whose ``on_elected`` has not finished yet, and it keeps
  naming a crashed leader until the backend notices (its session timeout). Use it to
  route writes. A node that is named but not yet ready must refuse the write itself.
- ``is_leader()`` is this node's own permission to write. It turns true only after
  ``on_elected`` returned, and false the moment the node doubts its claim, before
  ``on_demoted`` has even started.

Neither is a safety mechanism on its own: a paused leader cannot learn that it was
deposed until it runs again. Single-writer is enforced by the log (fencing, see
DESIGN.md invariant 2); the election only decides who should write.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from election.identity import LeaderIdentity

ElectionCallback = Callable[[], None]
"""``on_elected`` / ``on_demoted``: no arguments, return value ignored."""


@runtime_checkable
class Elector(Protocol):
    """One node's participation in the election of the cluster's single writer.

    Callbacks: both run on one thread dedicated to this elector, never concurrently
    and in the order the events happened. They alternate strictly, starting with
    ``on_elected``: every ``on_elected`` is eventually followed by exactly one
    ``on_demoted`` (at the latest during ``close()``), and ``on_demoted`` is never called
    without an ``on_elected`` before it.

    - ``on_elected`` may block as long as it needs (fence the previous writer, read the
      log to its end). ``is_leader()`` stays false until it returns. If leadership is
      lost meanwhile, ``on_demoted`` follows as soon as it returns. If it raises, the
      exception is logged, ``on_demoted`` is called at once, and the node gives up its
      claim for a short back-off so that another eligible node can take over.
    - ``on_demoted`` should return quickly (stop writing, start forwarding). Exceptions
      are logged and otherwise ignored.

    A node built with ``eligible=False`` never leads and never calls back, but
    ``leader()`` still tracks the leader.

    All methods may be called from any thread. ``leader()``, ``is_leader()`` and
    ``epoch()`` never block on the network.
    """

    @property
    def identity(self) -> LeaderIdentity:
        """This node's own identity (what ``leader()`` returns while this node leads)."""
        ...

    @property
    def eligible(self) -> bool:
        """False for nodes configured with ``leader.eligibility=false``."""
        ...

    def start(self, on_elected: ElectionCallback, on_demoted: ElectionCallback) -> None:
        """Join the election; returns without waiting for a connection or a result.

        The backend connects (and reconnects, forever) in the background; while it
        cannot reach its servers this node does not lead and ``leader()`` is None.
        Raises RuntimeError if called twice or after ``close()``.
        """
        ...

    def leader(self) -> LeaderIdentity | None:
        """The current leader as last learned from the backend, or None if unknown.

        None while there is no leader, while this node cannot reach the backend (or
        only has information older than the backend's session timeout), and before
        ``start()``. Never blocks.
        """
        ...

    def is_leader(self) -> bool:
        """True while this node may write: after ``on_elected`` returned and until the
        node learns, or starts to suspect, that it lost leadership. Never blocks."""
        ...

    def epoch(self) -> int | None:
        """The current leader's claim number: every new claim gets a larger one.

        The same on every node that knows the leader, so comparable across nodes
        (ZooKeeper: the zxid that created the leader's znode; Kafka group: the offset
        the leader committed when it claimed; static: always 0). A leader re-elected on
        the same claim (after a ZooKeeper connection blip, say) keeps its epoch. None
        while ``leader()`` is None. Never blocks.
        """
        ...

    def close(self) -> None:
        """Leave the election, handing leadership over at once if this node holds it.

        Order: stop reporting leadership, wait for a callback that is running to
        return and for ``on_demoted`` if due, then release the claim so that another
        node takes over without waiting for a session timeout, and stop all threads.
        Blocks for as long as that takes (normally well under a second). Idempotent.
        Must not be called from within a callback.
        """
        ...
