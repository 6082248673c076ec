"""Forwarding a write from a follower to the leader, over HTTP.

The request goes on as the client sent it (method, path with its query, body, and
the `Authorization`, `Content-Type` and `Accept` headers), marked with `X-Forward`
naming the node it is sent to as the leader: a node that receives a write so marked
and is not the leader answers 50004 instead of forwarding it on (the two nodes
disagree about who leads), while a client-sent `X-Forward` naming anything else is
ignored. The leader's answer, error bodies
included, comes back to the client unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass

import requests

from registry import errors

FORWARD_HEADER = "X-Forward"
_KEPT_HEADERS = ("Authorization", "Content-Type", "Accept")


@dataclass(frozen=True)
class ForwardedResponse:
    status: int
    content_type: str
    body: bytes


class Forwarder:
    """Sends requests on to the leader. Thread-safe; keeps connections to it alive."""

    def __init__(self, timeout: float) -> None:
        self._timeout = timeout
        self._session = requests.Session()

    def forward(self, leader_url: str, method: str, raw_uri: str, headers: dict[str, str],
                body: bytes) -> ForwardedResponse:
        """Send the request to `leader_url` + `raw_uri`; blocks up to the timeout.

        Raises ForwardingError (50003) if the leader cannot be reached or does not answer.
        """
        kept = {name: headers[name] for name in _KEPT_HEADERS if name in headers}
        kept[FORWARD_HEADER] = leader_url.rstrip("/")
        try:
            response = self._session.request(method, leader_url.rstrip("/") + raw_uri, data=body,
                                             headers=kept, timeout=self._timeout, allow_redirects=False)
        except requests.RequestException as exc:
            raise errors.ForwardingError(
                f"Error while forwarding the request to the leader at {leader_url}: {exc}") from None
        return ForwardedResponse(response.status_code,
                                 response.headers.get("Content-Type", "application/vnd.schemaregistry.v1+json"),
                                 response.content)

    def close(self) -> None:
        self._session.close()
