"""`ZooKeeperElector`: the leader is whoever holds one ephemeral znode.

    elector = ZooKeeperElector(me, "zk1:2181,zk2:2181", root="/schema-registry")
    elector.start(on_elected=take_office, on_demoted=leave_office)
    elector.leader()   # decoded from /schema-registry/leader, never blocks

How it works. ``<root>/leader`` is an ephemeral znode whose data is the leader's
identity JSON. Every eligible node tries to create it; ZooKeeper lets exactly one
succeed, and that node leads for as long as its session keeps the znode alive. Every
node, eligible or not, keeps a watch on the znode: when it is deleted (the leader
closed its session, or the session expired) the watches fire and the eligible nodes
race to create it again. ``epoch()`` is the znode's creation zxid, so it grows with
every new leader and is the same number on every node.

This is kazoo's primitives composed, not a recipe: ``create(ephemeral=True)``, a
one-shot watch re-armed on every read, and a connection-state listener. kazoo's
``Election``/``Lock`` recipe was the alternative. It queues contenders as sequential
znodes and hands over in order, but its ``run()`` blocks a thread per contender, the
identity would still have to be published elsewhere for followers, and it leaves
session loss to the caller. The race-to-create znode gives the same guarantee (one
holder per session) with the identity in the znode itself, the layout Confluent's
ZooKeeper-based registry used.

Connection states (kazoo's listener):
- SUSPENDED: the connection dropped and the session may or may not survive. The
  leader is demoted at once (``is_leader()`` false, ``on_demoted`` queued) and
  ``leader()`` becomes None: nothing read from ZooKeeper can be trusted now.
- CONNECTED again with the same session: the znode is read afresh; if it is still
  ours, this node is elected again (a new term, ``on_elected`` runs again).
- LOST (session expired): kazoo opens a new session as soon as a server answers; the
  node then competes again like a newcomer.
kazoo reconnects forever, with a back-off capped at ``reconnect_max_delay``, so a
restarted ZooKeeper is rejoined without recreating the elector.

Trade-off against the Kafka group elector: leadership moves only when the leader's
session ends. Nodes joining or leaving cause no re-election, and a graceful
``close()`` hands over within milliseconds (the others' watches fire when the
session closes). A crashed leader is replaced after the session timeout.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
)
from kazoo.protocol.states import WatchedEvent, ZnodeStat
from kazoo.retry import KazooRetry

from election.elector import ElectionCallback
from election.identity import LeaderIdentity
from election.leadership import Leadership

log = logging.getLogger(__name__)

# The connection went away under a call; the state listener wakes the worker again.
_DISCONNECTED = (ConnectionLoss, SessionExpiredError, ConnectionClosedError)


class ZooKeeperElector:
    """An `Elector` on an ephemeral znode ``<root>/leader``.

    ``hosts`` is a ZooKeeper connect string (a chroot suffix is allowed if that path exists).
    ``session_timeout`` (seconds) bounds how long a crashed leader keeps its claim;
    the server clamps it to [2, 20] ticks. ``resign_backoff`` is how long this node
    stays out after its ``on_elected`` raised. ``client_options`` go to `KazooClient`
    (``auth_data``, ``sasl_options``, ``use_ssl`` ...).

    Threads: kazoo's connection and callback threads, a worker that reads and creates
    the znode (it is the only one blocking on ZooKeeper), and the callback thread.
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
        self._wake = threading.Event()
        self._worker: threading.Thread | None = None
        self._closing = False
        # Guarded by _lock:
        self._leader: LeaderIdentity | None = None
        self._epoch: int | None = None
        self._won_czxid: int | None = None  # the znode instance our current term holds
        self._connection_changes = 0  # lets the worker discard reads made before a change
        self._resigning = False
        self._compete_after = 0.0  # monotonic time before which we do not create the znode

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
        self._worker = threading.Thread(
            target=self._run, name=f"election-zookeeper {self._identity}", daemon=True
        )
        self._worker.start()
        self._client.start_async()

    def leader(self) -> LeaderIdentity | None:
        """The identity in the leader znode as last read; None while disconnected."""
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
        self._leadership.close()
        # stop() fails any call the worker is blocked in, then closes the session.
        self._client.remove_listener(self._on_connection_state)
        self._client.stop()
        self._wake.set()
        if self._worker is not None and self._worker is not threading.current_thread():
            self._worker.join()
        self._client.close()
        with self._lock:
            self._leader = self._epoch = None

    # -- kazoo threads: record what happened, never block

    def _on_connection_state(self, state: str) -> None:
        with self._lock:
            self._connection_changes += 1
            if state != KazooState.CONNECTED:
                self._leader = self._epoch = None
                self._won_czxid = None
                if self._leadership.lost():
                    log.warning("elector %s: ZooKeeper connection %s; demoted", self._identity, state)
        self._wake.set()

    def _on_znode_event(self, event: WatchedEvent) -> None:
        self._wake.set()

    def _resign(self) -> None:
        # Called on the callback thread after on_elected raised.
        with self._lock:
            self._resigning = True
            self._compete_after = time.monotonic() + self._resign_backoff
        self._wake.set()

    # -- the worker: the only thread that talks to ZooKeeper

    def _run(self) -> None:
        retry_in: float | None = None
        while True:
            self._wake.wait(retry_in)
            self._wake.clear()
            with self._lock:
                if self._closing:
                    return
                changes = self._connection_changes
                resigning = self._resigning
            retry_in = None
            if self._client.state != KazooState.CONNECTED:
                continue  # the listener wakes us when connected again
            try:
                if resigning:
                    self._give_up_znode()
                retry_in = self._reconcile(changes)
            except _DISCONNECTED:
                pass
            except KazooException as e:
                log.warning("elector %s: ZooKeeper error, retrying: %r", self._identity, e)
                retry_in = 1.0

    def _give_up_znode(self) -> None:
        """Delete the znode if our session holds it, then wait out the back-off."""
        session_id = self.session_id
        try:
            _, stat = self._client.get(self._path)
            if stat.ephemeralOwner == session_id:
                self._client.delete(self._path, version=stat.version)
        except NoNodeError:
            pass
        with self._lock:
            self._resigning = False

    def _reconcile(self, changes: int) -> float | None:
        """Read the znode (creating it if vacant and we may compete), arm a watch and
        record the outcome. Returns seconds until the worker should look again unprompted.
        """
        session_id = self.session_id
        if session_id is None:
            return None
        while True:
            try:
                data, stat = self._client.get(self._path, watch=self._on_znode_event)
                break
            except NoNodeError:
                pass
            wait = self._compete_after - time.monotonic()
            if self._eligible and wait <= 0:
                try:
                    self._client.create(self._path, self._data, ephemeral=True, makepath=True)
                except NodeExistsError:
                    pass
                continue
            # A read of a missing znode sets no watch; exists() does.
            if self._client.exists(self._path, watch=self._on_znode_event) is None:
                self._observe(changes, session_id, None, None)
                return wait if self._eligible else None
        self._observe(changes, session_id, data, stat)
        return None

    def _observe(self, changes: int, session_id: int, data: bytes | None, stat: ZnodeStat | None) -> None:
        mine = stat is not None and stat.ephemeralOwner == session_id
        leader: LeaderIdentity | None = None
        if mine:
            leader = self._identity
        elif data is not None:
            try:
                leader = LeaderIdentity.from_json(data)
            except ValueError as e:
                log.warning("elector %s: unreadable leader znode %s: %s", self._identity, self._path, e)
        with self._lock:
            if changes != self._connection_changes or self._closing:
                return  # the connection changed since this read; another pass is due
            self._leader = leader
            self._epoch = stat.czxid if stat is not None and leader is not None else None
            if mine and not self._resigning:
                if self._won_czxid not in (None, stat.czxid):
                    # Our znode was replaced behind our back: that was another term.
                    self._leadership.lost()
                self._won_czxid = stat.czxid
                self._leadership.won()
            else:
                self._won_czxid = None
                self._leadership.lost()
