"""A write's time: when the request it serves came in, how much of its timeout is
left, and the errors it ends in when the time runs out.

The HTTP layer sets `REQUEST_STARTED` around each request; the writer counts a write's
timeout from it (`store.writer`, `store.group_commit`), so that time spent waiting
before the write (for a thread, for an election) is not granted again.
"""
from __future__ import annotations

import time
from contextvars import ContextVar, Token
from typing import Final


class RequestStart:
    """When the request a write serves came in (time.monotonic()), if the caller knows: the
    timeout counts from then, so time spent waiting before `write` (for a thread to run
    on, for an election) is not granted again. Set by the HTTP layer around each request,
    on the thread that takes it up, with the `ContextVar` interface (`set`, `reset`, `get`).

    It also remembers when it was set, which is when a thread took the request up: a
    request out of time by `write` then says whether the time went before that (queued:
    the server's, a `StoreTimeout`) or after it, in the request's own checks (`NoTimeLeft`).
    """

    def __init__(self) -> None:
        self._var: ContextVar[tuple[float, float] | None] = ContextVar("request_started", default=None)

    def set(self, received: float) -> Token[tuple[float, float] | None]:
        return self._var.set((received, time.monotonic()))

    def reset(self, token: Token[tuple[float, float] | None]) -> None:
        self._var.reset(token)

    def get(self) -> float | None:
        """When the request came in, or None."""
        value = self._var.get()
        return None if value is None else value[0]

    def taken_up(self) -> float | None:
        """When a thread took the request up (when `set` was called), or None."""
        value = self._var.get()
        return None if value is None else value[1]


REQUEST_STARTED: Final = RequestStart()


class StoreTimeout(RuntimeError):
    """The log did not let us catch up, or apply our own write, within the timeout."""


class NoTimeLeft(StoreTimeout):
    """A thread took the request up in time, but its own checks (parsing, compatibility)
    spent its timeout before its write reached the writer: nothing was waited for in the
    log and nothing appended. A StoreTimeout to the store's callers, kept apart so that
    the HTTP layer answers it as the request's fault, not the log's."""


def remaining(deadline: float) -> float:
    """Seconds left until `deadline` (time.monotonic()), never below zero."""
    return max(deadline - time.monotonic(), 0.0)
