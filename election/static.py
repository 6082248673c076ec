"""`StaticElector`: leadership fixed by configuration, for single-node mode.

    elector = StaticElector(me)                   # this node always leads
    elector = StaticElector(me, leader=primary)   # `primary` always leads; this node follows
    elector.start(on_elected, on_demoted)

There is no backend to lose: the leader is elected at ``start()`` and demoted only by
``close()``. When taking office fails (the log could not be read to its end within the
store timeout, say: a large topic, a slow disk, a broker not up yet), the claim is made
again after a second, until it succeeds or the elector closes: a single node must not
stay without a writer because its first catch-up was slow. Nothing here prevents two nodes from both being configured as
leader; use it with the embedded store (which is single-node anyway) or behind an
operator who knows what they are doing.
"""
from __future__ import annotations

import threading

from election.elector import ElectionCallback
from election.identity import LeaderIdentity
from election.leadership import Leadership

_RETRY_SECONDS = 1.0


class StaticElector:
    """An `Elector` whose leader never changes.

    With ``leader`` None or equal to ``identity`` (and ``eligible`` true) this node
    leads from ``start()`` on: ``on_elected`` runs on the callback thread right away and
    ``is_leader()`` turns true when it returns. Otherwise ``leader`` is reported as the
    leader forever and no callback ever runs.
    """

    def __init__(
        self,
        identity: LeaderIdentity,
        leader: LeaderIdentity | None = None,
        *,
        eligible: bool = True,
    ) -> None:
        if leader is None:
            if not eligible:
                raise ValueError("an ineligible static node needs a configured leader to follow")
            leader = identity
        self._identity = identity
        self._leader = leader
        self._eligible = eligible
        self._leads = eligible and leader == identity
        self._leadership = Leadership(f"static {identity}", resign=self._claim_again_later)
        self._started = threading.Event()
        self._retry: threading.Timer | None = None

    @property
    def identity(self) -> LeaderIdentity:
        return self._identity

    @property
    def eligible(self) -> bool:
        return self._eligible

    def start(self, on_elected: ElectionCallback, on_demoted: ElectionCallback) -> None:
        """Start the callback thread; a leading node is elected at once. Never blocks."""
        self._leadership.start(on_elected, on_demoted)
        self._started.set()
        if self._leads:
            self._leadership.won()

    def leader(self) -> LeaderIdentity | None:
        """The configured leader once started; None before ``start()`` and after ``close()``."""
        if not self._started.is_set():
            return None
        return self._leader

    def is_leader(self) -> bool:
        return self._leadership.is_leader()

    def epoch(self) -> int | None:
        """Always 0 once started: there is only ever one term."""
        return 0 if self._started.is_set() else None

    def close(self) -> None:
        """Demote this node (running ``on_demoted`` if it led) and stop. Idempotent."""
        self._started.clear()
        retry = self._retry
        if retry is not None:
            retry.cancel()
        self._leadership.close()

    def _claim_again_later(self) -> None:
        # On the callback thread, after on_elected raised and before the term ends: the
        # new claim must come after that end, hence a timer.
        def claim() -> None:
            if self._started.is_set():
                self._leadership.won()

        self._retry = threading.Timer(_RETRY_SECONDS, claim)
        self._retry.daemon = True
        self._retry.start()
