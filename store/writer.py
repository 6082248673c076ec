"""The writer: the one way records get into the log, and the protocol that keeps them right.

    writer = LogWriter(log, cache, reader, election, timeout=10.0)
    writer.wait_caught_up(60)                 # read the log to its end as it was at start-up
    writer.take_office("http://sr-1:8081")    # on election: fence the log, then write
    result = writer.write(plan)               # plan() -> (records, result), run under the lock
    writer.leave_office()                     # on demotion: stop writing at once

The protocol, in order, for every write:
1. **Catch up**: apply the log up to its end, so `plan` sees the state its records
   will land on.
2. **Plan** under the write lock: the caller's `plan()` returns the records to append
   (and what to answer). It should be cheap: heavy validation belongs before `write`.
3. **Permission**: append only while this node is in office (it took office and the
   elector still says it leads) AND the latest fence in the applied log is its own.
   A deposed leader that wakes up either sees its successor's fence, or plans against
   a stale end and its conditional append lands out of place (step 4). A write that
   arrives while an election is under way (no leader known, or this node named but
   not in office yet) waits for its outcome, up to the timeout; one that arrives while
   another node leads is refused at once (`NotWriter`: forward it).
4. **Conditional append**: each record says at which offset it must land. If someone
   else appended first (`LogConflict`), catch up and plan again, so every write is
   validated against the state it is appended to. Readers drop records that landed
   elsewhere (`store.reader`), so a late append from a zombie has no effect.
5. **Read your writes**: return only once the records are applied to this node's
   cache: by the writer itself, as soon as the log acknowledges them in place, when
   every record before them is applied (`LogReader.apply_landed`); else by the reader.

**Group commit** (`write_grouped`, `write_grouped_async`): concurrent writes share
one append, each still planned on the state it lands on (`store.group_commit`).

Also here: the leader's fence (a NOOP record naming its term, carrying the id
watermarks that `store.ids` keeps, so that compaction can never free an id for reuse,
DESIGN invariant 3), and re-stating keys whose newest record readers dropped (so
compaction cannot make it hide the valid record before it). Plans allocate ids and
raise the watermarks through `LogWriter.ids` (`store.ids.SchemaIds`).

Raises only store exceptions: `NotWriter`, `StoreTimeout` (`store.deadlines`),
`LogUnavailable`, `RecordTooLarge`; the HTTP layer maps them to Confluent's errors in
one place.
"""
from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterable
from typing import Protocol

from store.cache import Cache
from store.deadlines import REQUEST_STARTED, NoTimeLeft, RequestStart, StoreTimeout, remaining
from store.group_commit import GroupCommit
from store.ids import SchemaIds
from store.log import Log, LogConflict, LogUnavailable, RecordTooLarge
from store.plans import WRITE_ATTEMPTS, GroupPlan, PendingWrites, Plan, PlanAlone, Record, Restated, T
from store.reader import LogReader
from store.records import (
    DEFAULT_CONTEXT,
    FenceValue,
    Key,
    LogRecord,
    NoopKey,
    RecordFormatError,
    Value,
    decode_key,
    encode_key,
    encode_value,
)

__all__ = ["REQUEST_STARTED", "Election", "GroupPlan", "LogWriter", "NoTimeLeft", "NotWriter", "PendingWrites",
           "Plan", "PlanAlone", "Record", "RequestStart", "Restated", "StoreTimeout"]

log = logging.getLogger(__name__)

_ELECTION_POLL_SECONDS = 0.01


class Election(Protocol):
    """What the writer needs to know of the election (see `election.elector.Elector`).

    Both never block.
    """

    def is_leader(self) -> bool:
        """This node may write: elected, and not in doubt about its claim."""

    def leads_elsewhere(self) -> bool:
        """Another node is known to lead: waiting will not make this one the writer."""


class NotWriter(RuntimeError):
    """This node may not append now: it is not in office, or its fence was superseded.

    The write should go to the leader instead (or fail while there is none).
    """


class LogWriter(GroupCommit):
    """Appends to `log` for this node; see the module docstring for the protocol.

    `election` is consulted before every append, so that a node stops writing the
    moment it doubts its claim, before its demotion callback has even run. `timeout`
    bounds every wait: on the log, and for an election under way.
    Thread-safe: writes are serialised by one lock.
    """

    def __init__(self, log_: Log, cache: Cache, reader: LogReader, election: Election, *,
                 timeout: float = 10.0) -> None:
        self._log = log_
        self._cache = cache
        self._reader = reader
        self._election = election
        #: Id allocation and the id watermarks, for the plans this writer runs.
        self.ids = SchemaIds(cache)
        self._timeout = timeout
        self._lock = threading.Lock()
        self._token: str | None = None
        self._known_end: int | None = None
        self._caught_up = False
        self._ready_target: int | None = None
        self._repairing = False
        self.accepted_appends = 0  # records this node appended that the log took in place
        self._init_group_commit()

    @property
    def timeout(self) -> float:
        return self._timeout

    # ---- readiness ---------------------------------------------------------------

    def caught_up(self) -> bool:
        """True once this node has applied the log up to its end as seen at start-up:
        from then on it may serve reads.

        Never blocks and never touches the log (it is called on the serving event
        loop); `wait_caught_up` learns the end offset to reach.
        """
        if not self._caught_up and self._ready_target is not None:
            self._caught_up = self._reader.next_offset >= self._ready_target
        return self._caught_up

    def wait_caught_up(self, timeout: float) -> bool:
        """Block until `caught_up()` or `timeout` seconds pass; asks the log for its end."""
        deadline = time.monotonic() + timeout
        while not self.caught_up():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if self._ready_target is None:
                try:
                    self._ready_target = self._log.end_offset()
                except LogUnavailable:
                    time.sleep(min(remaining, 0.5))
                continue
            self._reader.wait_until(self._ready_target, min(remaining, 1.0))
        return True

    def writable(self) -> bool:
        """True while a write would be taken: this node is in office, or another node
        leads (the write is forwarded there). Never blocks."""
        return self.in_office() or self._election.leads_elsewhere()

    def is_ready(self) -> bool:
        """Reads and writes work: caught up, and a writer is known. Never blocks."""
        return self.caught_up() and self.writable()

    def wait_ready(self, timeout: float) -> bool:
        """Block until `is_ready()` or `timeout` seconds pass."""
        deadline = time.monotonic() + timeout
        if not self.wait_caught_up(timeout):
            return False
        while not self.writable():
            if time.monotonic() >= deadline:
                return False
            time.sleep(_ELECTION_POLL_SECONDS)
        return True

    # ---- office ------------------------------------------------------------------

    def take_office(self, leader: str) -> None:
        """Fence the log with a fresh token naming `leader`, then accept writes.

        The fence is appended at the log's end as this node caught up to it (retried if
        someone else appends first) and carries the id watermark. Blocks until it is
        applied, which also means this node has read the log to its end. Raises
        StoreTimeout or LogUnavailable; then this node stays out of office.
        """
        token = uuid.uuid4().hex
        self._known_end = None  # a new term: ask the log where it ends

        def fence() -> tuple[list[Record], None]:
            return [(NoopKey(), self.ids.fence(token, leader))], None

        self._write(fence, permitted=False, deadline=time.monotonic() + self._timeout)
        with self._lock:
            self._token = token
        log.info("fenced the log with %s; accepting writes", token)

    def leave_office(self) -> None:
        """Stop writing at once. Never blocks on the log."""
        with self._lock:
            self._token = None

    def in_office(self) -> bool:
        """True while this node may append: in office, leading, and holding the latest fence."""
        token = self._token
        fence = self._cache.fence
        return token is not None and fence is not None and fence.token == token and self._election.is_leader()

    def latest_fence(self) -> FenceValue | None:
        return self._cache.fence

    # ---- writing -----------------------------------------------------------------

    def write(self, plan: Plan[T]) -> T:
        """Run `plan` against a cache caught up with the log, append the records it
        returns, and return its result once this node has applied them.

        `plan` runs under the write lock and may raise to refuse the write (nothing is
        appended then). With no records, nothing is appended and no permission is
        needed. On a follower (another node leads) the log is not touched at all: what
        `plan` answers without records it answers from this node's cache, anything else
        raises NotWriter at once, to be forwarded. Blocks for the lock, the catch-up,
        the append and the apply, all within one timeout from the call, or from
        `REQUEST_STARTED` when the caller set it earlier. Raises NotWriter, StoreTimeout,
        LogUnavailable, or what `plan` raises.
        """
        deadline = self._deadline()
        result = self._write(plan, permitted=True, deadline=deadline)
        if self._reader.misplaced_latest:
            self._repair_within(deadline)
        return result

    def _deadline(self) -> float:
        """One timeout from now, or from `REQUEST_STARTED` when set. When a request used
        its whole timeout before getting here it is refused before touching the log,
        rather than starting a write with no time left to be acknowledged in: with
        StoreTimeout if it waited all that time for a server thread, with NoTimeLeft if
        a thread took it up in time and its own checks (parsing, compatibility) spent it."""
        now = time.monotonic()
        deadline = now + self._timeout
        started = REQUEST_STARTED.get()
        if started is not None:
            deadline = min(deadline, started + self._timeout)
            if deadline <= now:
                taken_up = REQUEST_STARTED.taken_up()
                if taken_up is not None and taken_up < deadline:
                    raise NoTimeLeft(f"{now - taken_up:.1f} s of checks, past the request's "
                                     f"{self._timeout:g} s, before it reached the log")
                raise StoreTimeout(f"no time left: the request came in {self._timeout:g} s ago")
        return deadline

    def _append_many(self, records: list[tuple[bytes, bytes | None]], expected: int, deadline: float) -> list[int]:
        """`Log.append_many`, or one conditional append per record where the log lacks it."""
        append_many = getattr(self._log, "append_many", None)
        if append_many is not None:
            return append_many(records, expected, timeout=remaining(deadline))
        offsets: list[int] = []
        for index, (raw_key, raw_value) in enumerate(records):
            try:
                offsets.append(self._log.append(raw_key, raw_value, expected_offset=expected + index,
                                                timeout=remaining(deadline)))
            except LogConflict:
                if not offsets:
                    raise
                break
        return offsets + [expected - 1] * (len(records) - len(offsets))  # the rest: not in place

    # ---- ids and repair ----------------------------------------------------------

    def id_watermark(self, released: Iterable[int]) -> tuple[Key, Value]:
        """The record raising the default context's id watermark over `released`, the ids
        a write frees: `SchemaIds.raised` (see `store.ids`)."""
        return self.ids.raised({DEFAULT_CONTEXT: max(released, default=0)})

    def watermark(self) -> int:
        """The default context's id watermark as the latest fence states it (`SchemaIds.watermark`)."""
        return self.ids.watermark()

    def _repair_within(self, deadline: float) -> None:
        """After a write of ours: re-state dropped records now, but only within the
        write's own deadline. With a timeout of its own, a repair the log would not take
        made the write answer up to a whole timeout late, and fail though its records
        were in. An unfinished repair is not the write's failure: the leader's repair
        loop (`LeaderGate`) tries again within a second."""
        if deadline <= time.monotonic():
            return
        try:
            self.repair_misplaced(deadline)
        except (StoreTimeout, LogUnavailable, RecordTooLarge) as exc:
            log.warning("re-stating dropped records after a write did not finish: %s; will retry", exc)

    def repair_misplaced(self, deadline: float | None = None) -> int:
        """Re-state every key whose newest record in the log is one readers dropped.

        A record that landed out of place (a deposed leader's late append) has no
        effect, but it is its key's newest record: once Kafka compacts the topic it
        would be the only one left, and the valid value before it would be lost on
        replay. Appending the current value again under the same key bytes makes the
        valid record newest. Does nothing out of office. Returns how many keys it
        re-stated. Blocks until `deadline` at most (default: one timeout from now).
        """
        def plan() -> tuple[list[Record], int]:
            if not self.in_office():
                return [], 0  # a follower leaves this to the leader
            restated: list[Record] = []
            for raw_key in list(self._reader.misplaced_latest):
                try:
                    key = decode_key(raw_key)
                except RecordFormatError:
                    continue
                restated.append(Restated(raw_key, self._cache.current_value(key)))
            return restated, len(restated)

        if not self._reader.misplaced_latest or self._repairing or not self.in_office():
            return 0
        self._repairing = True
        try:
            until = time.monotonic() + self._timeout if deadline is None else deadline
            repaired = self._write(plan, permitted=True, deadline=until)
        except NotWriter:  # lost office meanwhile
            return 0
        finally:
            self._repairing = False
        if repaired:
            log.info("re-stated %d keys whose newest record had been dropped", repaired)
        return repaired

    def _await_office(self, deadline: float) -> None:
        """Wait while an election is under way, until this node is in office.

        Raises NotWriter at once while another node leads, and at `deadline` when the
        election has not settled on this node.
        """
        while not self.in_office():
            if self._election.leads_elsewhere():
                raise NotWriter("another node leads")
            if time.monotonic() >= deadline:
                raise NotWriter(f"no leader elected within {self._timeout:g} s")
            time.sleep(_ELECTION_POLL_SECONDS)

    def _write(self, plan: Plan[T], *, permitted: bool, deadline: float) -> T:
        for _ in range(WRITE_ATTEMPTS):
            if permitted and self._election.leads_elsewhere():
                return self._answer_as_follower(plan)
            if not self._lock.acquire(timeout=remaining(deadline)):
                raise StoreTimeout("timed out waiting for the writes ahead of this one")
            try:
                self._await_flights(deadline)
                end = self._catch_up(deadline)
                records, result = plan()
                if not records:
                    return result
                waiting = permitted and not self.in_office()
                if not waiting:
                    self._known_end = None  # unknown until the append says where it landed
                    try:
                        last = self._append(records, end, deadline)
                    except LogConflict:
                        continue
                    self._known_end = last + 1
                    self.accepted_appends += len(records)
            finally:
                self._lock.release()
            if waiting:
                self._await_office(deadline)  # outside the lock; then plan again on what is new
                continue
            if not self._reader.wait_until(last + 1, remaining(deadline)):
                raise StoreTimeout("timed out waiting for the write to be applied")
            return result
        raise StoreTimeout("gave up writing: other writers kept appending first")

    def _answer_as_follower(self, plan: Plan[T]) -> T:
        """What `plan` answers from this node's cache when it needs no append (a schema
        the subject already has, say), as Confluent's followers answer; otherwise
        NotWriter, without waiting on the log (which this node may not even reach):
        the leader decides, on its own caught-up state."""
        try:
            records, result = plan()
        except Exception:  # a refusal on this node's state is the leader's to make
            raise NotWriter("another node leads") from None
        if records:
            raise NotWriter("another node leads")
        return result

    def _catch_up(self, deadline: float) -> int:
        """Apply the log up to its end; return that end offset.

        Right after our own append we know where the log ends without asking it (a
        broker round trip with Kafka). Should someone else have appended since, the
        next conditional append fails with LogConflict and we ask again.
        """
        end = self._known_end if self._known_end is not None else self._log.end_offset(remaining(deadline))
        if not self._reader.wait_until(end, remaining(deadline)):
            raise StoreTimeout("timed out reading the schema log to its end")
        return end

    def _append(self, records: list[Record], expected: int, deadline: float) -> int:
        """Append `records` at offsets `expected`, `expected + 1`, ...; return the last offset.

        Raises RecordTooLarge, before anything is appended, if one of them is larger
        than the log accepts.
        """
        encoded = self._encode_all(records)
        if len(encoded) == 1:
            raw_key, raw_value = encoded[0]
            last = self._log.append(raw_key, raw_value, expected_offset=expected, timeout=remaining(deadline))
            self._apply_landed(encoded, expected)  # in place, else LogConflict was raised
            return last
        # Several records (a bulk import, a delete with its config): one transaction or one
        # produce round trip for all, where one append each would cost a commit each.
        offsets = self._append_many(encoded, expected, deadline)
        if offsets == list(range(expected, expected + len(encoded))):
            self._apply_landed(encoded, expected)
            return offsets[-1]
        if -1 in offsets:
            raise LogUnavailable("the log did not confirm every record of the write")
        # Some landed elsewhere (readers drop those): the caller plans again on what landed.
        raise LogConflict(f"records of the write landed at {offsets}, not from {expected}")

    def _apply_landed(self, encoded: list[tuple[bytes, bytes | None]], start: int) -> None:
        """Apply records the log acknowledged in place from `start` (`LogReader.apply_landed`):
        the writer answers without waiting for the reader to read them back (a reader
        that rests, store/reader.py, would first have to fetch again)."""
        self._reader.apply_landed([LogRecord(offset, raw_key, raw_value, offset)
                                   for offset, (raw_key, raw_value) in enumerate(encoded, start)],
                                  start + len(encoded))

    def _encode_all(self, records: list[Record]) -> list[tuple[bytes, bytes | None]]:
        """The (key, value) bytes to append for `records`, in order.

        Raises RecordTooLarge, before anything is appended, if one of them is larger
        than the log accepts.
        """
        encoded = [self._encode(item) for item in records]
        limit = self._log.max_record_bytes
        if limit is not None:
            for forms, raw_value in encoded:
                size = max(len(k) for k in forms) + len(raw_value or b"")
                if size > limit:
                    raise RecordTooLarge(f"a record of {size} bytes is larger than the {limit} bytes "
                                         "the schema log accepts")
        return [(raw_key, raw_value) for forms, raw_value in encoded for raw_key in forms]

    def _encode(self, item: Record) -> tuple[list[bytes], bytes | None]:
        """The key byte forms to append `item` under, and its value bytes."""
        if isinstance(item, Restated):
            return [item.raw_key], encode_value(item.value)
        key, value = item
        raw_value = encode_value(value)
        # Reuse every byte form the log holds for this key, so compaction replaces (or
        # a tombstone removes) exactly what is there.
        forms = self._cache.key_bytes(key) or [encode_key(key)]
        if raw_value is not None:
            forms = forms[-1:]
        return forms, raw_value
