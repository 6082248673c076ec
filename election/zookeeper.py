"""`ZooKeeperElector`: the leader is whoever holds one ephemeral znode.

    elector = ZooKeeperElector(me, "zk1:2181,zk2:2181", root="/schema-registry")
    elector.start(on_elected=take_office, on_demoted=leave_office)
    elector.leader()   # decoded from /schema-registry/leader, never blocks

How it works. ``<root>/leader`` is an ephemeral znode whose data is the leader's
identity JSON. Every eligible node tries to create it; ZooKeeper lets exactly one
succeed, and that node leads for as long as its session keeps the znode alive. Every
node, eligible or not, follows the znode with kazoo's `DataWatch`: when it is deleted
(the leader closed its session, or the session expired) the eligible nodes race to
create it again. ``epoch()`` is the znode's creation zxid, so it grows with every new
leader and is the same number on every node.

Composed from kazoo's primitives: `DataWatch` (re-arms its watch on every read, reads
again after every reconnect and session loss, and reports only real changes), a
connection-state listener, and ``create_async``/``delete_async``, which never block, so
they are safe on the kazoo threads that report events. kazoo's ``Election``/``Lock``
recipe was the alternative. It queues contenders as sequential znodes and hands over in
order, but its ``run()`` blocks a thread per contender, the identity would still have to
be published elsewhere for followers, and it leaves session loss to the caller. The
race-to-create znode gives the same guarantee (one holder per session) with the identity
in the znode itself, the layout Confluent's ZooKeeper-based registry used.

Connection states (kazoo's listener):
- SUSPENDED: the connection dropped and the session may or may not survive. The
  leader is demoted at once (``is_leader()`` false, ``on_demoted`` queued) and
  ``leader()`` becomes None: nothing read from ZooKeeper can be trusted now.
- CONNECTED again with the same session: the znode as last reported is taken up
  again; if it is ours, this node is elected again (a new term, ``on_elected`` runs
  again). An ephemeral znode of a live session cannot have changed unless someone
  deleted it meanwhile; `DataWatch` reads it afresh at the same time and reports that
  within a round trip, which ends the term (no need to wait for a read of our own).
- LOST (session expired): the znode our old session held is gone with it; kazoo opens
  a new session as soon as a server answers and the node competes again like a newcomer.
kazoo reconnects forever, with a back-off capped at ``reconnect_max_delay``, so a
restarted ZooKeeper is rejoined without recreating the elector.

Trade-off against the Kafka group elector: leadership moves only when the leader's
session ends. Nodes joining or leaving cause no re-election, and a graceful
``close()`` hands over within milliseconds (the others' watches fire when the
session closes). A crashed leader is replaced after the session timeout.
"""
from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)
from kazoo.handlers.utils import AsyncResult
from kazoo.protocol.states import WatchedEvent, ZnodeStat
from kazoo.recipe.watchers import DataWatch
from kazoo.retry import KazooRetry

from election.elector import ElectionCallback
from election.identity import LeaderIdentity
from election.leadership import Leadership

log = logging.getLogger(__name__)

# A request failed because the connection went away; the state listener takes over.
_DISCONNECTED = (ConnectionLoss, SessionExpiredError, ConnectionClosedError)
# Seconds before trying to create the znode again after ZooKeeper refused for another reason.
_CREATE_RETRY = 1.0

_Request = Callable[[], None]


class ZooKeeperElector:
    """An `Elector` on an ephemeral znode ``<root>/leader``.

    ``hosts`` is a ZooKeeper connect string (a chroot suffix is allowed if that path exists).
    ``session_timeout`` (seconds) bounds how long a crashed leader keeps its claim;
    the server clamps it to [2, 20] ticks. ``resign_backoff`` is how long this node
    stays out after its ``on_elected`` raised. ``client_options`` go to `KazooClient`
    (``auth_data``, ``sasl_options``, ``use_ssl`` ...).

    Threads: kazoo's (connection, watch callbacks, completions), the callback thread of
    `Leadership`, and a timer while a back-off runs. None of ours blocks on ZooKeeper.
    """

    def __init__(
        self,
        identity: LeaderIdentity,
        hosts: str,
        *,
        eligible: bool = True,
        root: str = "/schema-registry",
        session_timeout: float = 10.0,
        reconnect_max_delay: float = 1.0,
        resign_backoff: float = 1.0,
        client_options: Mapping[str, Any] | None = None,
    ) -> None:
        self._identity = identity
        self._eligible = eligible
        self._path = root.rstrip("/") + "/leader"
        self._data = identity.to_json().encode()
        self._resign_backoff = resign_backoff
        self._client = KazooClient(
            hosts=hosts,
            timeout=session_timeout,
            # kazoo's default back-off grows to an hour; a restarted ZooKeeper must be
            # found again within about a second.
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_delay=reconnect_max_delay),
            **dict(client_options or {}),
        )
        self._leadership = Leadership(f"zookeeper {identity}", resign=self._resign)
        self._lock = threading.Lock()
        # Guarded by _lock:
        self._closing = False
        self._timer: threading.Timer | None = None
        self._reported = False  # DataWatch has reported the znode at least once
        self._stat: ZnodeStat | None = None  # the znode as last reported; None: vacant
        self._holder: LeaderIdentity | None = None  # decoded from its data
        self._connected = False
        self._session: int | None = None  # our session, kept while SUSPENDED (it may survive)
        self._ended_session: int | None = None  # the session we lost last
        self._leader: LeaderIdentity | None = None
        self._epoch: int | None = None
        self._won_czxid: int | None = None  # the znode instance our current term holds
        self._compete_after = 0.0  # monotonic time before which we do not claim the znode

    @property
    def identity(self) -> LeaderIdentity:
        return self._identity

    @property
    def eligible(self) -> bool:
        return self._eligible

    @property
    def path(self) -> str:
        """The leader znode's path (inside the chroot, if any)."""
        return self._path

    @property
    def session_id(self) -> int | None:
        """The current ZooKeeper session id, or None while not connected."""
        client_id = self._client.client_id
        return client_id[0] if client_id else None

    def start(self, on_elected: ElectionCallback, on_demoted: ElectionCallback) -> None:
        """Start connecting and competing in the background; never blocks.

        Raises RuntimeError if called twice or after ``close()``.
        """
        self._leadership.start(on_elected, on_demoted)
        self._client.add_listener(self._on_connection_state)
        # Registered before the client starts so that this call cannot block: DataWatch's
        # first read fails at once (ConnectionClosedError, which it ignores), and it reads
        # for real from its own listener as soon as the client is connected.
        DataWatch(self._client, self._path, self._on_znode)
        self._client.start_async()

    def leader(self) -> LeaderIdentity | None:
        """The identity in the leader znode as last reported; None while disconnected."""
        with self._lock:
            return self._leader

    def is_leader(self) -> bool:
        return self._leadership.is_leader()

    def epoch(self) -> int | None:
        """The creation zxid of the current leader's znode; None if unknown."""
        with self._lock:
            return self._epoch

    def close(self) -> None:
        """Demote (waiting for ``on_demoted``), close the session, stop the threads.

        Closing the session deletes the znode at once, so another node takes over
        within milliseconds. Blocks until a running callback returns, then normally for
        milliseconds; if ZooKeeper is unreachable, until kazoo's connection attempt in
        progress gives up (at most the session timeout). Idempotent.
        """
        with self._lock:
            if self._closing:
                return
            self._closing = True
            self._reconcile()  # closing: forget the leader, end the term
        self._leadership.close()
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
            timer.join()
        self._client.remove_listener(self._on_connection_state)
        # Fails any request in flight (DataWatch ignores that), then closes the session.
        self._client.stop()
        self._client.close()

    # -- kazoo's threads and our timer: record what happened, never block

    def _on_connection_state(self, state: str) -> None:
        """kazoo's listener, on its connection thread."""
        with self._lock:
            client_id = self._client.client_id
            if state == KazooState.CONNECTED and client_id is not None:
                self._connected, self._session = True, client_id[0]
            else:
                self._connected = False
                if state == KazooState.LOST:
                    self._ended_session, self._session = self._session, None
            request = self._reconcile()
        if state != KazooState.CONNECTED:
            log.warning("elector %s: ZooKeeper connection %s", self._identity, state)
        self._send(request)

    def _on_znode(self, data: bytes | None, stat: ZnodeStat | None, event: WatchedEvent | None) -> bool:
        """DataWatch's callback: the znode changed (``stat`` None: it does not exist).

        Runs on kazoo's callback thread or on a thread DataWatch spawned after a
        reconnect, holding DataWatch's lock. Returns False once closing, which detaches it.
        """
        holder: LeaderIdentity | None = None
        if data is not None:
            try:
                holder = LeaderIdentity.from_json(data)
            except ValueError as e:
                log.warning("elector %s: unreadable leader znode %s: %s", self._identity, self._path, e)
        with self._lock:
            if self._closing:
                return False
            self._reported = True
            self._stat, self._holder = stat, holder
            request = self._reconcile()
        self._send(request)
        return True

    def _resign(self) -> None:
        """`Leadership`'s resign hook (its callback thread, after ``on_elected`` raised)."""
        with self._lock:
            self._compete_after = time.monotonic() + self._resign_backoff
            self._schedule(self._resign_backoff)
            request = self._reconcile()  # deletes our znode
        self._send(request)

    def _on_timer(self) -> None:
        with self._lock:
            if self._timer is threading.current_thread():
                self._timer = None
            request = self._reconcile()
        self._send(request)

    # -- the one place that decides; called with _lock held

    def _reconcile(self) -> _Request | None:
        """Bring ``leader()``, ``epoch()`` and the term in line with the last report.

        Returns the ZooKeeper request to send once ``_lock`` is released (create or
        delete the znode), or None.
        """
        stat = self._stat
        if stat is not None and stat.ephemeralOwner == self._ended_session:
            # ZooKeeper deleted it with that session; DataWatch will report what follows.
            stat = None
        known = not self._closing and self._connected and self._reported
        ours = stat if known and stat is not None and stat.ephemeralOwner == self._session else None
        backing_off = time.monotonic() < self._compete_after
        self._leader = None if not known or stat is None else self._identity if ours else self._holder
        self._epoch = stat.czxid if stat is not None and self._leader is not None else None
        if ours is not None and not backing_off:
            if self._won_czxid not in (None, ours.czxid):
                # Our znode was replaced behind our back: that was another term.
                self._leadership.lost()
            self._won_czxid = ours.czxid
            self._leadership.won()
            return None
        self._won_czxid = None
        self._leadership.lost()
        if ours is not None:
            # Resigning: hand the znode over (again, if a reconnect kept it alive).
            return functools.partial(self._delete, ours.version)
        if known and stat is None and self._eligible and not backing_off:
            return self._create
        return None

    def _schedule(self, delay: float) -> None:
        """Reconcile again after ``delay`` seconds (a back-off ends, a retry is due)."""
        if self._closing:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = threading.Timer(delay, self._on_timer)
        self._timer.name = f"election-zookeeper-timer {self._identity}"
        self._timer.daemon = True
        self._timer.start()

    # -- requests: asynchronous, so they never block the kazoo thread that sends them

    def _send(self, request: _Request | None) -> None:
        if request is not None:
            request()

    def _create(self) -> None:
        self._client.create_async(self._path, self._data, ephemeral=True, makepath=True).rawlink(self._created)

    def _created(self, result: AsyncResult) -> None:
        # Success needs nothing: DataWatch reports the new znode, owned by our session.
        try:
            result.get()
        except NodeExistsError:
            pass  # another node won the race; DataWatch reports its znode
        except _DISCONNECTED:
            pass  # the listener reconciles again once connected
        except KazooException as e:
            log.warning("elector %s: cannot create %s, retrying: %r", self._identity, self._path, e)
            with self._lock:
                self._schedule(_CREATE_RETRY)

    def _delete(self, version: int) -> None:
        self._client.delete_async(self._path, version=version).rawlink(self._deleted)

    def _deleted(self, result: AsyncResult) -> None:
        try:
            result.get()
        except (NoNodeError, BadVersionError):
            pass  # already gone, or no longer the znode we held
        except _DISCONNECTED:
            pass  # reconciling after the reconnect deletes it if it is still ours
        except KazooException as e:
            log.warning("elector %s: cannot delete %s: %r", self._identity, self._path, e)
