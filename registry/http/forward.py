"""Forwarding a write from a follower to the leader, over HTTP.

The request goes on as the client sent it (method, path with its query, body, and
the `Authorization`, `Content-Type` and `Accept` headers), marked with `X-Forward`
naming the node it is sent to as the leader: a node that receives a write so marked
and is not the leader answers 50004 instead of forwarding it on (the two nodes
disagree about who leads), while a client-sent `X-Forward` naming anything else is
ignored. The leader's answer, error bodies
included, comes back to the client unchanged.

When the caller's identity goes along (`identity` headers, see
`registry.http.security.forwarded`), its `Authorization` header does not: the leader
authorizes the caller the follower vouches for, and credentials travel no further
than needed. An https leader is called through `ssl_context` (its CA, and this node's
certificate for mTLS between nodes).
"""
from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from dataclasses import dataclass
from typing import TYPE_CHECKING

from registry import errors

if TYPE_CHECKING:
    from registry.http.leader_session import LeaderSession

FORWARD_HEADER = "X-Forward"
_KEPT_HEADERS = ("Authorization", "Content-Type", "Accept")


@dataclass(frozen=True)
class ForwardedResponse:
    status: int
    content_type: str
    body: bytes


class Forwarder:
    """Sends requests on to the leader. Thread-safe; keeps connections to it alive.

    A request sent to a leader that stops answering (paused, partitioned) is not held
    for the whole timeout when another leader is elected meanwhile: it is sent again to
    the new one, and the first attempt's answer, should it ever come, is dropped. The
    old leader cannot have applied it: a deposed leader cannot append (store.writer).
    """

    def __init__(self, timeout: float, ssl_context: ssl.SSLContext | None = None) -> None:
        self._timeout = timeout
        self._ssl_context = ssl_context
        self._session: LeaderSession | None = None  # opened with the first forwarded request
        self._session_lock = threading.Lock()
        self._attempts = ThreadPoolExecutor(max_workers=_PARALLEL_ATTEMPTS, thread_name_prefix="forward")

    def forward(self, leader: Callable[[], str | None], method: str, raw_uri: str, headers: dict[str, str],
                body: bytes, received: float | None = None,
                identity: dict[str, str] | None = None) -> ForwardedResponse:
        """Send the request to the leader `leader()` names, and again to a new one when
        it changes before an answer comes. Blocks until the timeout counted from
        `received` (when the request came in; default now), so a request that already
        waited here for an election does not wait a whole timeout again. `identity`, the
        caller as this node vouches for it, replaces the caller's Authorization header.

        Raises UnknownLeader (50004) when no leader is named, ForwardingError (50003) when
        the leader cannot be reached or does not answer in time.
        """
        deadline = (time.monotonic() if received is None else received) + self._timeout
        target = leader()
        if target is None:
            raise errors.UnknownLeader("Unknown leader: no node may write at the moment; retry shortly")
        kept = {name: headers[name] for name in _KEPT_HEADERS if name in headers}
        if identity:
            kept.pop("Authorization", None)
            kept.update(identity)
        attempt = self._attempts.submit(self._send, target, method, raw_uri, kept, body, deadline)
        while True:
            futures_wait([attempt], timeout=_WATCH_SECONDS)
            if attempt.done():
                try:
                    return attempt.result()
                except errors.ForwardingError:
                    # Refused or timed out: only a new leader, named in time, can help.
                    if time.monotonic() >= deadline:
                        raise
            elif time.monotonic() >= deadline + _WATCH_SECONDS:
                raise errors.ForwardingError(f"Error while forwarding the request to the leader at {target}: "
                                             f"no answer within {self._timeout:g} s")
            named = leader()
            if named is not None and named != target:
                target = named
                attempt = self._attempts.submit(self._send, target, method, raw_uri, kept, body, deadline)

    def _send(self, leader_url: str, method: str, raw_uri: str, headers: dict[str, str], body: bytes,
              deadline: float) -> ForwardedResponse:
        kept = dict(headers)
        kept[FORWARD_HEADER] = leader_url.rstrip("/")
        status, content_type, content = self._leader_session().send(
            leader_url, method, raw_uri, kept, body, max(deadline - time.monotonic(), 0.1))
        return ForwardedResponse(status, "application/vnd.schemaregistry.v1+json" if content_type is None
                                 else content_type, content)

    def _leader_session(self) -> LeaderSession:
        with self._session_lock:
            if self._session is None:
                # Imported on first use, not at start-up: see registry.http.leader_session.
                from registry.http.leader_session import LeaderSession

                self._session = LeaderSession(self._ssl_context)
            return self._session

    def close(self) -> None:
        self._attempts.shutdown(wait=False, cancel_futures=True)
        with self._session_lock:
            if self._session is not None:
                self._session.close()


_PARALLEL_ATTEMPTS = 32
_WATCH_SECONDS = 0.05
