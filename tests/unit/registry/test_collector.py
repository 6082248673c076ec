"""`registry.collector`: CPython makes no full collection itself once it is started;
ours come at an idle moment, or `max_delay` after falling due when the process never
idles; stopping gives the schedule back; and a ready server runs it."""
from __future__ import annotations

import gc
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from registry.collector import IdleFullCollections


@pytest.fixture
def full_collections() -> Iterator[list[str]]:
    """The threads that started each full collection while the test ran."""
    seen: list[str] = []

    def callback(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and info["generation"] == 2:
            seen.append(threading.current_thread().name)

    gc.callbacks.append(callback)
    try:
        yield seen
    finally:
        gc.callbacks.remove(callback)


def make_due(collections: IdleFullCollections) -> None:
    """As many young collections as make a full one due (each raises generation 2's count)."""
    for _ in range(collections.due_after + 1):
        gc.collect(1)


def eventually(check: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


class Busy:
    """A thread working without pause (making and dropping objects): never idle."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        while not self._stop.is_set():
            [[i] for i in range(50)]

    def __enter__(self) -> Busy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def test_cpython_starts_no_full_collection_once_started_and_gets_its_schedule_back(
        full_collections: list[str]) -> None:
    saved = gc.get_threshold()
    collections = IdleFullCollections(max_delay=3600)
    collections.start()
    try:
        assert gc.get_threshold()[:2] == saved[:2], "young collections keep CPython's thresholds"
        with Busy():  # our thread never finds the process idle
            garbage = [[j] for _ in range(40) for j in range(5_000)]  # young collections by the dozen
            del garbage
            make_due(collections)
            time.sleep(0.3)  # not a wait for something: time in which CPython must start none
        assert gc.get_count()[2] > saved[2], "full collections fell due"
        assert full_collections == [], "and CPython started none of them"
    finally:
        collections.stop()
    assert gc.get_threshold() == saved, "stopping gives full collections back to CPython"


def test_a_due_full_collection_comes_at_an_idle_moment(full_collections: list[str]) -> None:
    collections = IdleFullCollections(check_every=0.02, max_delay=3600)
    collections.start()
    try:
        make_due(collections)
        assert eventually(lambda: collections.collections >= 1), "idle and due: collected"
        assert "full-collections" in full_collections, "by our thread"
    finally:
        collections.stop()


def test_a_process_that_never_idles_is_collected_max_delay_after_it_fell_due(
        full_collections: list[str]) -> None:
    now = [0.0]
    collections = IdleFullCollections(check_every=0.02, max_delay=60, clock=lambda: now[0])
    collections.start()
    try:
        with Busy():
            make_due(collections)
            time.sleep(0.3)  # a dozen checks, all busy, within the delay
            assert collections.collections == 0, "due but never idle: it waits"
            now[0] = 61.0
            assert eventually(lambda: collections.collections >= 1), "past max_delay: collected, busy or not"
        assert "full-collections" in full_collections
    finally:
        collections.stop()


def test_cyclic_garbage_is_freed_by_the_full_collection() -> None:
    collections = IdleFullCollections(check_every=0.02, max_delay=3600)
    collections.start()
    try:
        gc.collect()
        freed = threading.Event()

        class Node:
            def __init__(self) -> None:
                self.me = self

            def __del__(self) -> None:
                freed.set()

        node = Node()
        gc.collect(1)  # it lives through a young collection: into generation 2
        del node  # now garbage, in a cycle, where only a full collection looks
        gc.collect(1)
        assert not freed.is_set(), "a young collection no longer reaches it"
        make_due(collections)
        assert freed.wait(10), "the idle full collection frees it"
    finally:
        collections.stop()


def test_a_ready_server_collects_in_full_at_idle_moments() -> None:
    code = ("import gc, threading\nfrom registry.http.server import settle_after_ready\nsettle_after_ready()\n"
            "assert gc.get_threshold()[2] > 1_000_000, gc.get_threshold()\n"
            "assert any(t.name == 'full-collections' for t in threading.enumerate())\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
