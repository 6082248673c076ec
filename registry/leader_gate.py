"""Who may append: the elector decides who should, the log's latest fence who may.

    gate = LeaderGate(writer, elector)
    elector.start(on_elected=gate.on_elected, on_demoted=gate.on_demoted)
    gate.leader_url()       # where a follower forwards a write, or None

On election this node takes office through the writer: it appends a fence naming a
fresh token, at the log's end as it caught up to it, and accepts writes only once
that fence is applied (which also means it has read the log to its end). The writer
appends only while the elector says this node leads AND the latest fence in its
caught-up cache is its own (`store.writer`). Every node, a single one on the embedded
store included, runs this same path: a single node has the static elector.
"""
from __future__ import annotations

import logging
import threading

from election.elector import Elector
from store.writer import LogWriter

log = logging.getLogger(__name__)

_REPAIR_EVERY_SECONDS = 1.0


class ElectionView:
    """The writer's view of the election (`store.writer.Election`), from an elector."""

    def __init__(self, elector: Elector) -> None:
        self._elector = elector

    def is_leader(self) -> bool:
        return self._elector.is_leader()

    def leads_elsewhere(self) -> bool:
        leader = self._elector.leader()
        identity = self._elector.identity
        return leader is not None and leader != identity and leader.store == identity.store


class LeaderGate:
    """The elector's callbacks, turned into the writer's terms of office."""

    def __init__(self, writer: LogWriter, elector: Elector) -> None:
        self._writer = writer
        self._elector = elector
        self._closed = threading.Event()
        self.elections = 0  # terms of office this node has taken (metrics)
        # The leader re-states keys whose newest record was dropped (a deposed leader's
        # late append) even when no write comes, before compaction can act on them.
        self._repairer = threading.Thread(target=self._repair_while_open, name="leader-repair", daemon=True)
        self._repairer.start()

    @property
    def elector(self) -> Elector:
        return self._elector

    def close(self) -> None:
        self._closed.set()

    def on_elected(self) -> None:
        """Fence the previous leader and catch up. Blocks until the fence is applied.

        Raises (and so gives up the claim, see `Elector`) when the log cannot take it.
        """
        self._writer.take_office(self._elector.identity.url)
        self.elections += 1
        self._writer.repair_misplaced()

    def on_demoted(self) -> None:
        """Stop writing at once; writes are forwarded from now on."""
        self._writer.leave_office()
        log.info("demoted: forwarding writes to the leader")

    def leader_url(self) -> str | None:
        """The URL writes should go to, or None while no other node can take them.

        None too when the backend names this node but it is not (or no longer) in
        office (forwarding to ourselves would loop), and when the leader serves another
        store (`leader_problem`). Never blocks.
        """
        leader = self._elector.leader()
        if leader is None or leader == self._elector.identity or self.leader_problem() is not None:
            return None
        return leader.url

    def write_target(self) -> str | None:
        """Where a write goes now: the leader's URL (this node's own while it is in
        office, so a forward that outlived an election reaches the new leader even when
        that is this node), or None. Never blocks."""
        if self._writer.in_office():
            return self._elector.identity.url
        return self.leader_url()

    def leader_problem(self) -> str | None:
        """Why the elected leader must not be followed, or None. Never blocks.

        A leader whose identity names another store (another topic, another Kafka
        cluster) won an election this node shares by mistake: following it would put
        this cluster's writes in the other's log.
        """
        leader = self._elector.leader()
        own = self._elector.identity
        if leader is None or leader == own or leader.store == own.store:
            return None
        return (f"The elected leader {leader.url} serves another store ({leader.store or 'unnamed'}), "
                f"not this node's ({own.store}): two registries share one election group; give each "
                "its own schema.registry.group.id (or leader.election.zookeeper.root)")

    def is_leader(self) -> bool:
        """True while this node may append (in office, holding the latest fence)."""
        return self._writer.in_office()

    def _repair_while_open(self) -> None:
        while not self._closed.wait(_REPAIR_EVERY_SECONDS):
            try:
                self._writer.repair_misplaced()
            except Exception:  # a failed repair is retried on the next round
                log.exception("re-stating dropped records failed; will retry")
