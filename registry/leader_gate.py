"""Who may append: the elector decides who should, the log's latest fence who may.

    gate = LeaderGate(service, elector)
    elector.start(on_elected=gate.on_elected, on_demoted=gate.on_demoted)
    service.set_may_write(gate.check)

On election this node appends a fence naming a fresh token, at the log's end as it
caught up to it, and accepts writes only once that fence is applied (which also means
it has read the log to its end). A node appends only while the elector says it leads
AND the latest fence in its caught-up cache is its own. A deposed leader that wakes
up either sees its successor's fence and stops, or plans against a stale end, and
then its conditional append lands out of place and every reader drops it
(store.reader). No sleep is involved (DESIGN invariant 2).
"""
from __future__ import annotations

import logging
import threading
import uuid

from election.elector import Elector
from registry import errors
from registry.service import RegistryService
from store.records import FenceValue

log = logging.getLogger(__name__)


_REPAIR_EVERY_SECONDS = 1.0


class LeaderGate:
    def __init__(self, service: RegistryService, elector: Elector) -> None:
        self._service = service
        self._elector = elector
        self._token: str | None = None
        self._lock = threading.Lock()
        self._closed = threading.Event()
        # The leader re-states keys whose newest record was dropped (a deposed leader's
        # late append) even when no write comes, before compaction can act on them.
        threading.Thread(target=self._repair_while_open, name="leader-repair", daemon=True).start()

    def close(self) -> None:
        self._closed.set()

    def _repair_while_open(self) -> None:
        while not self._closed.wait(_REPAIR_EVERY_SECONDS):
            if self._token is None:
                continue
            try:
                self._service.repair_misplaced()
            except Exception:  # a failed repair is retried on the next round
                log.exception("re-stating dropped records failed; will retry")

    def on_elected(self) -> None:
        """Fence the previous leader and catch up. Blocks until the fence is applied.

        Raises (and so gives up the claim, see `Elector`) when the log cannot take it.
        """
        token = uuid.uuid4().hex
        fence = FenceValue(token, self._elector.identity.url)
        self._service.append_fence(fence)
        with self._lock:
            self._token = token
        log.info("elected: fenced the log with %s, accepting writes", token)
        self._service.repair_misplaced()

    def on_demoted(self) -> None:
        """Stop writing at once; writes are forwarded from now on."""
        with self._lock:
            self._token = None
        log.info("demoted: forwarding writes to the leader")

    def check(self) -> None:
        """Raise NotLeader unless this node may append now. Never blocks."""
        fence = self._service.latest_fence()
        with self._lock:
            token = self._token
        if token is not None and self._elector.is_leader() and fence is not None and fence.token == token:
            return
        leader = self._elector.leader()
        if leader is not None and leader == self._elector.identity:
            leader = None  # named by the backend but not (or no longer) holding the fence
        raise errors.NotLeader("This node is not the leader", leader.url if leader is not None else None)
