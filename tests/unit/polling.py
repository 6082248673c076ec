"""Waiting for something in a unit test: poll with a deadline, never a bare sleep.

A sleep sized to "long enough" is either too long (a slow suite) or too short on a busy
machine (a flaky one); a poll returns as soon as the condition holds and fails, naming
what it waited for, once the deadline has passed.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


def wait_until(condition: Callable[[], T], what: str, timeout: float = 10.0,
               interval: float = 0.005) -> T:
    """Call `condition` every `interval` seconds until it returns something truthy, and
    return that. Blocks the calling thread for at most `timeout` seconds, then fails the
    test with "timed out waiting until {what}"."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting until {what}", pytrace=False)
        time.sleep(interval)
