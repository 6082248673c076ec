"""The reader: one thread that applies the log to the cache, in log order.

Writers and readiness checks wait on it: `wait_until(offset)` returns once every
record below `offset` has been applied, which gives read-your-writes (a write returns
only after its own record is in this node's cache) and "ready means caught up".
"""
from __future__ import annotations

import gc
import logging
import threading
import time

from store.cache import Cache
from store.log import Log, LogUnavailable
from store.records import RecordFormatError, decode_key, decode_value

log = logging.getLogger(__name__)

_BATCH = 5000
_FREEZE_AFTER = 1000  # records in one batch: only catching up reads batches this big
_POLL_SECONDS = 0.5


class LogReader:
    """Applies records from `log` to `cache` on a daemon thread started by `start()`."""

    def __init__(self, log_: Log, cache: Cache) -> None:
        self._log = log_
        self._cache = cache
        self._next_offset = 0
        self._applied = threading.Condition()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="log-reader", daemon=True)
        self.skipped = 0  # records that could not be decoded
        self.dropped = 0  # records that landed at another offset than their writer expected

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread; returns once it has ended (or after 5 s)."""
        self._stopping.set()
        with self._applied:
            self._applied.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    @property
    def next_offset(self) -> int:
        """Every record below this offset has been applied."""
        return self._next_offset

    def wait_until(self, offset: int, timeout: float) -> bool:
        """Block until every record below `offset` is applied; False after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._applied:
            while self._next_offset < offset:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._stopping.is_set():
                    return False
                self._applied.wait(remaining)
            return True

    def catch_up(self, timeout: float) -> bool:
        """Block until everything in the log now has been applied. Raises LogUnavailable."""
        return self.wait_until(self._log.end_offset(), timeout)

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                batch = self._log.read(self._next_offset, _BATCH, _POLL_SECONDS)
            except LogUnavailable as exc:
                log.warning("log unavailable, retrying: %s", exc)
                self._stopping.wait(_POLL_SECONDS)
                continue
            except Exception:  # a reader that dies silently would freeze the node
                log.exception("unexpected error reading the log; retrying")
                self._stopping.wait(_POLL_SECONDS)
                continue
            for record in batch.records:
                if record.misplaced:
                    # Its writer expected another offset: someone appended first, so the
                    # record was planned against a state that no longer held. Dropping
                    # it on every node keeps them identical (and a deposed leader's late
                    # append harmless).
                    self.dropped += 1
                    log.warning("dropping record at offset %d: its writer expected offset %d",
                                record.offset, record.expected_offset)
                    continue
                self._apply(record.key, record.value, record.offset)
            if len(batch.records) >= _FREEZE_AFTER:
                # Catching up creates the cache's objects by the hundred thousand, and
                # every full collection would traverse all of them again (a third of a
                # cold start). They form no cycles and live as long as the cache, so
                # move them out of the cyclic collector's sight; refcounting still
                # frees them when replaced.
                gc.freeze()
            if batch.next_offset <= self._next_offset:
                continue  # read() waited for up to its timeout; go round and check stopping
            with self._applied:
                self._next_offset = batch.next_offset
                self._applied.notify_all()

    def _apply(self, raw_key: bytes, raw_value: bytes | None, offset: int) -> None:
        try:
            key = decode_key(raw_key)
            value = decode_value(key, raw_value)
        except RecordFormatError as exc:
            self.skipped += 1
            log.warning("skipping record at offset %d: %s", offset, exc)
            return
        self._cache.apply(key, raw_key, value)
