"""The reader: applies the log to the cache, one record at a time, in log order.

A background thread follows the log. Writers and readiness checks wait on it:
`wait_until(offset)` returns once every record below `offset` has been applied, which
gives read-your-writes (a write returns only after its own record is in this node's
cache) and "ready means caught up".

Where the log allows reads from several threads (`Log.concurrent_reads`), a writer
that is waiting applies the log itself instead of waking the thread and waiting for
it: the hand-off between threads cost more than the write (0.5 ms of 1 ms). Both take
the same apply lock and skip what the other applied, so order is unchanged.

A writer whose records the log acknowledged where it expected them applies them itself
when every record before them is applied (`apply_landed`): they are the bytes the log
holds there. On Kafka that spares each batch of registrations the wait for the reader
thread to be woken with the fetched records and to wake the writer in turn (-1.1
context switches and ~4.5% of the registry's CPU a registration, 10 rounds
alternating). The thread then reads those records too and skips them, reading on from
where its own reads reached, so the consumer never seeks.

Once a read brings back only records the writer had applied, the thread rests: it asks
the log to stop fetching ahead (`Log.rest`, where the log has it: Kafka) and waits
`_REST_SECONDS`, or less if someone waits for a record not applied yet, then reads on.
Reading every batch back had cost, on Kafka, the broker a fetch a batch (half its CPU
under 10 writers) and this process the consumer's and this thread's work; on SQLite a
wake-up and a query a batch. Resting: 1.05-1.17x the registrations a second on Kafka,
1.03-1.22x embedded (bench/register_latency.py's load, rounds alternating). A follower's
writer applies nothing, so its reader never rests; on the leader, a record of someone
else's waits at most a rest, and every writer that needs it waits for it, which ends
the rest. (Every write of the leader's own applies its records: none waits for a resting
reader, which may have to wait for a fetch already in flight, up to 500 ms, first.)
"""
from __future__ import annotations

import gc
import logging
import threading
import time

from store.cache import Cache
from store.log import Log, LogBatch, LogUnavailable
from store.records import LogRecord, RecordFormatError, decode_key, decode_schema_record, decode_value

log = logging.getLogger(__name__)

_BATCH = 5000
_FREEZE_AFTER = 1000  # records in one batch: only catching up reads batches this big
_POLL_SECONDS = 0.5
# How long the thread rests after reading back only records its writer applied, unless
# someone waits for a record it has not applied (`wait_until`).
_REST_SECONDS = 0.1


class LogReader:
    """Applies records from `log` to `cache` on a daemon thread started by `start()`."""

    def __init__(self, log_: Log, cache: Cache) -> None:
        self._log = log_
        self._cache = cache
        self._next_offset = 0
        # Where the thread's next read starts: the position its last read reached. A
        # writer may have applied further (`apply_landed`); reading on from here, not
        # from there, spares a log that reads in sequence (Kafka) a seek each time.
        self._read_from = 0
        self._applied = threading.Condition()
        self._apply_lock = threading.Lock()
        self._self_service = bool(getattr(log_, "concurrent_reads", False))
        self._stopping = threading.Event()
        self._needed = threading.Event()  # someone waits for a record not applied yet
        self._stop_fetching = getattr(log_, "rest", None)
        self._thread = threading.Thread(target=self._run, name="log-reader", daemon=True)
        self.skipped = 0  # records that could not be decoded
        self.dropped = 0  # records that landed at another offset than their writer expected
        self.landed = 0  # writers' batches applied by their writer (`apply_landed`)
        # Keys whose newest record in the log is one that readers dropped: once compacted,
        # it would hide the valid record before it, so the leader re-states them.
        self.misplaced_latest: dict[bytes, int] = {}

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread; returns once it has ended (or after 5 s)."""
        self._stopping.set()
        self._needed.set()
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
        if self._next_offset < offset:
            self._needed.set()
        while self._next_offset < offset:
            if self._self_service and self._pump():
                continue
            remaining = deadline - time.monotonic()
            with self._applied:
                if self._next_offset >= offset:
                    break
                if remaining <= 0 or self._stopping.is_set():
                    return False
                # Waiting, not spinning: a self-serving writer found nothing new to
                # apply, so the record it waits for is not readable yet.
                self._applied.wait(min(remaining, _POLL_SECONDS) if self._self_service else remaining)
        return True

    def _pump(self) -> bool:
        """Apply what the log has now, without blocking; True if anything was applied."""
        if not self._apply_lock.acquire(blocking=False):
            return False
        try:
            before = self._next_offset
            batch = self._log.read(before, _BATCH, 0)
            self._apply_batch_locked(batch)
            return self._next_offset > before
        except LogUnavailable:
            return False
        finally:
            self._apply_lock.release()

    def apply_landed(self, records: list[LogRecord], next_offset: int) -> bool:
        """Apply `records`, a writer's own that the log acknowledged at their offsets, if
        every record before the first is applied already; False (nothing done) if not.

        They are the very bytes the log holds there, so applying them now is applying
        them as this reader would once it reads them (it then skips them): the writer
        answers without waiting for the read's hand-off between threads."""
        with self._apply_lock:
            if not records or self._next_offset != records[0].offset:
                return False
            self._apply_batch_locked(LogBatch(records, next_offset))
            self.landed += 1
            return True

    def catch_up(self, timeout: float) -> bool:
        """Block until everything in the log now has been applied. Raises LogUnavailable."""
        return self.wait_until(self._log.end_offset(), timeout)

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                start = self._next_offset if self._self_service else self._read_from
                batch = self._log.read(start, _BATCH, _POLL_SECONDS)
            except LogUnavailable as exc:
                log.warning("log unavailable, retrying: %s", exc)
                self._stopping.wait(_POLL_SECONDS)
                continue
            except Exception:  # a reader that dies silently would freeze the node
                log.exception("unexpected error reading the log; retrying")
                self._stopping.wait(_POLL_SECONDS)
                continue
            with self._apply_lock:
                ahead = self._next_offset
                self._apply_batch_locked(batch)
            self._read_from = max(batch.next_offset, start)
            if batch.records and batch.records[-1].offset < ahead:
                self._rest_while_writer_applies()
            if not batch.records:
                # Idle: index what replay left for later (it did not wait for it).
                self._cache.index_contents()

    def _rest_while_writer_applies(self) -> None:
        """After a read that found only records this node's writer had applied already:
        stop the log fetching ahead (where it does) and wait `_REST_SECONDS`, or until
        someone waits for a record not applied yet, then read on. While this node
        writes, the log is read once a rest, not once a batch; a record of someone
        else's waits at most a rest (and every writer that needs the log's state waits
        for it, which ends the rest)."""
        if self._stop_fetching is not None:
            try:
                self._stop_fetching()
            except Exception:  # noqa: BLE001 (it only costs the fetches it would have saved)
                log.exception("could not stop the log fetching ahead")
        self._needed.wait(_REST_SECONDS)
        self._needed.clear()

    def _apply_batch_locked(self, batch: LogBatch) -> None:
        """Apply `batch` from where this node is; records before it were applied already."""
        # Catching up creates the cache's objects by the hundred thousand; each batch of
        # them would otherwise set off dozens of collections that find nothing (they
        # form no cycles), a sixth of the apply time. Collection resumes after the batch.
        pause_collector = len(batch.records) >= _FREEZE_AFTER and gc.isenabled()
        if pause_collector:
            gc.disable()
        try:
            applied = self._apply_records(batch, self._next_offset)
        finally:
            if pause_collector:
                gc.enable()
        if applied >= _FREEZE_AFTER:
            # They live as long as the cache, and every full collection would traverse
            # them all again (a third of a cold start): move them out of the cyclic
            # collector's sight; refcounting still frees them when replaced.
            gc.freeze()
        if batch.next_offset > self._next_offset:
            with self._applied:
                self._next_offset = batch.next_offset
                self._applied.notify_all()

    def _apply_records(self, batch: LogBatch, start: int) -> int:
        """Apply `batch`'s records from offset `start`; return how many it took in."""
        applied = 0
        # Replaying a topic runs this loop once per record: names are bound locally and
        # the record unpacked, not looked up attribute by attribute.
        apply, apply_schema = self._cache.apply, self._cache.apply_schema
        misplaced_latest = self.misplaced_latest
        records, plain_run = batch.records, self._cache.plain_run
        position, count = 0, len(records)
        while position < count:
            if plain_run is not None and not misplaced_latest:
                # The common records compiled, up to the first that needs the rules below.
                position, taken = plain_run(records, position, start)
                applied += taken
                if position >= count:
                    break
            offset, raw_key, raw_value, expected = records[position]
            position += 1
            if offset < start:
                continue  # a waiting writer applied it while we were reading
            applied += 1
            if expected is not None and expected != offset:
                # Its writer expected another offset: someone appended first, so the
                # record was planned against a state that no longer held. Dropping
                # it on every node keeps them identical (and a deposed leader's late
                # append harmless).
                self.dropped += 1
                misplaced_latest[raw_key] = offset
                log.warning("dropping record at offset %d: its writer expected offset %d", offset, expected)
                continue
            if misplaced_latest:
                misplaced_latest.pop(raw_key, None)
            try:
                # SCHEMA records (nearly all) decode only as far as the cache needs.
                schema_record = decode_schema_record(raw_key, raw_value)
                if schema_record is None:
                    key = decode_key(raw_key)
                    value = decode_value(key, raw_value)
            except RecordFormatError as exc:
                self.skipped += 1
                log.warning("skipping record at offset %d: %s", offset, exc)
                continue
            if schema_record is not None:
                subject, version, schema_value = schema_record
                apply_schema(subject, version, raw_key, schema_value)
            else:
                apply(key, raw_key, value)
        return applied
