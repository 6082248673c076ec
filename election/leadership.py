"""`Leadership`: the part of every elector that is not about its backend.

A backend only observes facts (``won()``: the backend says this node holds the claim;
``lost()``: it no longer does, or cannot be sure) from whatever thread notices them.
`Leadership` turns those facts into the `Elector` contract: terms of office, the
``is_leader()`` flag, and ``on_elected``/``on_demoted`` run in order on one dedicated
thread, strictly alternating.

    leadership = Leadership("zk node-1", resign=give_up_claim)
    leadership.start(on_elected, on_demoted)
    leadership.won()      # from a watch callback: queues on_elected
    leadership.lost()     # from a connection listener: is_leader() is false at once
    leadership.close()    # blocks until on_demoted (if due) has run

``won()`` and ``lost()`` never block, so they are safe in kazoo listeners and
librdkafka rebalance callbacks.
"""
from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from enum import Enum

from election.elector import ElectionCallback

log = logging.getLogger(__name__)


class _Event(Enum):
    ELECTED = "elected"
    DEMOTED = "demoted"
    STOP = "stop"


class Leadership:
    """Terms of office for one node, and the thread that runs its callbacks.

    A term starts with ``won()`` and ends with ``lost()``. Each term queues at most one
    ``on_elected`` and one ``on_demoted``. A term that ended before its ``on_elected``
    ran is skipped entirely: neither callback runs for it.

    ``resign`` (optional) is called on the callback thread when ``on_elected`` raised,
    after ``on_demoted`` and before the term ends; the backend should release its claim,
    stop calling ``won()`` for a back-off period, and not block for long.
    """

    def __init__(self, name: str, *, resign: Callable[[], None] | None = None) -> None:
        self._name = name
        self._resign = resign
        self._lock = threading.Lock()
        self._held = False  # the backend says we hold the claim
        self._leading = False  # ... and on_elected has returned for this term
        self._term = 0
        self._closed = False
        self._events: queue.SimpleQueue[tuple[_Event, int]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._on_elected: ElectionCallback = _nothing
        self._on_demoted: ElectionCallback = _nothing
        # Touched only by the callback thread: the term whose on_elected ran and whose
        # on_demoted has not run yet.
        self._in_office: int | None = None

    def start(self, on_elected: ElectionCallback, on_demoted: ElectionCallback) -> None:
        """Start the callback thread. Raises RuntimeError if started twice or closed."""
        with self._lock:
            if self._thread is not None or self._closed:
                raise RuntimeError(f"elector {self._name} was already started or closed")
            self._on_elected, self._on_demoted = on_elected, on_demoted
            self._thread = threading.Thread(
                target=self._run, name=f"election-callbacks {self._name}", daemon=True
            )
            self._thread.start()

    @property
    def held(self) -> bool:
        """True between ``won()`` and ``lost()`` (whether or not on_elected returned)."""
        with self._lock:
            return self._held

    def is_leader(self) -> bool:
        """True from the return of this term's ``on_elected`` until ``lost()``."""
        with self._lock:
            return self._leading

    def won(self) -> bool:
        """Record that the backend gave this node the claim. Never blocks.

        Returns True if that started a new term (False if one was running, or closed).
        """
        with self._lock:
            if self._held or self._closed:
                return False
            self._held = True
            self._term += 1
            self._events.put((_Event.ELECTED, self._term))
            return True

    def lost(self) -> bool:
        """Record that the claim is gone or in doubt. ``is_leader()`` is false on return.

        Never blocks. Returns True if that ended a term.
        """
        with self._lock:
            if not self._held:
                return False
            self._held = False
            self._leading = False
            self._events.put((_Event.DEMOTED, self._term))
            return True

    def close(self) -> None:
        """End the current term and stop the callback thread.

        Blocks until a running callback returned and the due ``on_demoted`` ran. No
        callback runs after this returns. Idempotent. When called on the callback
        thread itself (from a callback), it cannot wait and returns at once.
        """
        self.lost()
        with self._lock:
            if self._closed:
                thread = None
            else:
                self._closed = True
                thread = self._thread
                self._events.put((_Event.STOP, 0))
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    # -- the callback thread

    def _run(self) -> None:
        while True:
            event, term = self._events.get()
            if event is _Event.STOP:
                return
            if event is _Event.ELECTED:
                self._elect(term)
            elif self._in_office == term:
                self._demote()

    def _elect(self, term: int) -> None:
        with self._lock:
            if not (self._held and self._term == term):
                return  # over before it began: skip this term's callbacks altogether
        log.info("elector %s: elected (term %d); taking office", self._name, term)
        try:
            self._on_elected()
        except Exception:
            log.exception("elector %s: on_elected failed; resigning", self._name)
            self._in_office = term
            self._demote()
            # The backend first stops claiming (so it does not call won() again right
            # away), then the term ends.
            if self._resign is not None:
                try:
                    self._resign()
                except Exception:
                    log.exception("elector %s: resigning failed", self._name)
            self.lost()
            return
        self._in_office = term
        with self._lock:
            if self._held and self._term == term:
                self._leading = True
                log.info("elector %s: now leading (term %d)", self._name, term)
            # else: lost meanwhile; the queued DEMOTED event runs on_demoted next.

    def _demote(self) -> None:
        self._in_office = None
        log.info("elector %s: demoted", self._name)
        try:
            self._on_demoted()
        except Exception:
            log.exception("elector %s: on_demoted failed", self._name)


def _nothing() -> None:
    pass
