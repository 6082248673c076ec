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

**Group commit** (`write_grouped`): registrations that arrive while a batch is being
written queue up; the next writer to find no batch under way plans every queued write
in order, each against the cache caught up to the log's end plus the records of the
writes planned before it in the batch (`PendingWrites`), and appends them all with one
`Log.append_many` (one produce round trip, one SQLite transaction), every record still
conditional on its offset. A write whose record keys collide with an earlier one in
the batch waits for the next batch, so it is planned on the state the earlier one left.
Each write keeps its own deadline, and returns once this node has applied its records.

Also here: the leader's fence (a NOOP record naming its term, carrying the id
watermarks that `store.ids` keeps, so that compaction can never free an id for reuse,
DESIGN invariant 3), and re-stating keys whose newest record readers dropped (so
compaction cannot make it hide the valid record before it). Plans allocate ids and
raise the watermarks through `LogWriter.ids` (`store.ids.SchemaIds`).

Raises only store exceptions: `NotWriter`, `StoreTimeout`, `LogUnavailable`,
`RecordTooLarge`; the HTTP
layer maps them to Confluent's errors in one place.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from contextvars import ContextVar, Token
from collections.abc import Callable, Iterable
from typing import Any, Final, Protocol

from store.cache import Cache
from store.ids import SchemaIds
from store.log import Log, LogConflict, LogUnavailable, RecordTooLarge
from store.plans import GroupPlan, PendingWrites, Plan, PlanAlone, Record, Restated, T
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

_WRITE_ATTEMPTS = 20


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


class StoreTimeout(RuntimeError):
    """The log did not let us catch up, or apply our own write, within the timeout."""


class NoTimeLeft(StoreTimeout):
    """A thread took the request up in time, but its own checks (parsing, compatibility)
    spent its timeout before its write reached the writer: nothing was waited for in the
    log and nothing appended. A StoreTimeout to the store's callers, kept apart so that
    the HTTP layer answers it as the request's fault, not the log's."""


# Batches whose round trips may overlap: below librdkafka's five requests in flight,
# within which an idempotent producer keeps their order.
_MAX_FLIGHTS = 4
_POLL_FOR_APPLY = 0.05

# What became of a queued write (`_Queued.kind`).
_DONE, _FAILED, _AWAIT_OFFICE, _FOLLOW = range(4)


class _Flight:
    """A batch being appended: its writes, their records, and where it lands."""

    def __init__(self, start: int) -> None:
        self.start = start
        self.end = start  # the offset after its last record, once in place
        self.items: list[_Queued] = []
        self.results: list[object] = []
        self.sizes: list[int] = []
        self.encoded: list[tuple[bytes, bytes | None]] = []
        self.records: list[tuple[Key, Value | None]] = []
        self.raw_keys: set[bytes] = set()
        self.wait: Callable[[float], list[int]] | None = None
        self.failure: Exception | None = None
        self.landed = False

    def add(self, item: _Queued, result: object, encoded: list[tuple[bytes, bytes | None]],
            records: list[tuple[Key, Value | None]], raw_keys: set[bytes]) -> None:
        self.items.append(item)
        self.results.append(result)
        self.sizes.append(len(encoded))
        self.encoded += encoded
        self.records += records
        self.raw_keys |= raw_keys
        self.end += len(encoded)


class _Queued:
    """One write waiting for, or planned in, a batch. Fields change under the queue's
    condition only."""

    __slots__ = ("plan", "deadline", "taken", "kind", "result", "error", "applied_at", "conflicts", "wake")

    def __init__(self, plan: GroupPlan, deadline: float, wake: _Waker | None = None) -> None:
        self.plan = plan
        # A waiter on an event loop (`write_grouped_async`): called once settled, by the
        # settling thread; the committer calls it only once the records are applied.
        self.wake = wake
        self.deadline = deadline
        self.taken = False  # in a batch being written: the waiter can no longer withdraw it
        self.kind: int | None = None
        self.result: object = None
        self.error: BaseException | None = None
        self.applied_at: int | None = None  # applied once the reader reaches this offset
        self.conflicts = 0  # appends of it that someone else's append displaced


class LogWriter:
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
        # Group commit: writes waiting for a batch, and whether a writer is running one.
        self._queue: list[_Queued] = []
        self._queue_changed = threading.Condition()
        self._combining = False
        self._flights: list[_Flight] = []  # appended or being appended, not yet applied
        self._resync = False  # a batch did not land in place: ask the log where it ends
        self._committer: threading.Thread | None = None  # runs the batches of event loops' writes
        self._closing = False
        self.batches = 0  # batches grouped writes were appended in (for tests and benches)
        self.accepted_appends = 0  # records this node appended that the log took in place

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

    def write_grouped(self, plan: GroupPlan[T]) -> T:
        """As `write`, but `plan` may share one append with other writes (group commit,
        see the module docstring): it is called with the `PendingWrites` of the writes
        planned before it in its batch and must plan as if their records were applied.
        It may raise `PlanAlone` to be planned again first in the next batch.

        Blocks within one timeout from the call, as `write`: for the writes queued
        ahead, the batch's append and the apply of this write's records. A write that
        times out while in a batch being appended may still land. Raises as `write`.
        """
        deadline = self._deadline()
        while True:
            if self._election.leads_elsewhere():
                return self._answer_as_follower(lambda: plan(PendingWrites()))
            item = _Queued(plan, deadline)
            self._run_queued(item)
            if item.kind == _DONE:
                if item.applied_at is not None and not self._reader.wait_until(item.applied_at,
                                                                               _remaining(deadline)):
                    raise StoreTimeout("timed out waiting for the write to be applied")
                if self._reader.misplaced_latest:
                    self._repair_within(deadline)
                return item.result  # type: ignore[return-value]
            if item.kind == _FAILED:
                raise _taken_error(item)
            if item.kind == _AWAIT_OFFICE:
                self._await_office(deadline)
            # _FOLLOW: another node leads now; the loop answers as a follower

    async def write_grouped_async(self, plan: GroupPlan[T]) -> T:
        """`write_grouped` for a caller on an event loop: the same batches, run by the
        writer's own committer thread, while the caller waits without a thread (each
        hand-off between threads cost tens of microseconds, more than planning a write).
        The committer wakes the loop once the write's records are applied.

        Answers within one timeout from the call, as `write_grouped`, however long the
        log takes: the wait is the loop's timer, not a blocked thread. (A write that
        times out while in a batch being appended may still land.) Raises as `write`.
        """
        loop = asyncio.get_running_loop()
        deadline = self._deadline()
        while True:
            if self._election.leads_elsewhere():
                return self._answer_as_follower(lambda: plan(PendingWrites()))
            future = loop.create_future()
            item = _Queued(plan, deadline, _Waker(loop, future))
            with self._queue_changed:
                if self._closing:
                    raise StoreTimeout("the writer is closing")
                self._queue.append(item)
                if self._committer is None:
                    self._committer = threading.Thread(target=self._commit, name="group-commit", daemon=True)
                    self._committer.start()
                self._queue_changed.notify_all()
            timer = loop.call_at(loop.time() + _remaining(deadline), _wake, future)
            try:
                await future
            finally:
                timer.cancel()
            if item.kind is None:
                with self._queue_changed:
                    if item.kind is None:  # the deadline came first
                        if not item.taken:
                            self._queue.remove(item)
                            raise StoreTimeout("timed out waiting for the writes ahead of this one")
                        raise StoreTimeout("timed out waiting for the write to be appended")
            if item.kind == _DONE:
                if item.applied_at is not None and self._reader.next_offset < item.applied_at:
                    # Settled by a thread that does not wait for the apply (or the apply
                    # came after the deadline): wait here, within it.
                    if not await loop.run_in_executor(None, self._reader.wait_until, item.applied_at,
                                                      _remaining(deadline)):
                        raise StoreTimeout("timed out waiting for the write to be applied")
                if self._reader.misplaced_latest:
                    await loop.run_in_executor(None, self._repair_within, deadline)
                return item.result  # type: ignore[return-value]
            if item.kind == _FAILED:
                raise _taken_error(item)
            if item.kind == _AWAIT_OFFICE:
                await loop.run_in_executor(None, self._await_office, deadline)
            # _FOLLOW: another node leads now; the loop answers as a follower

    def _commit(self) -> None:
        """The committer thread: run the queued writes' batches, land each, and wake
        the waiters on event loops once their records are applied (one wait on the
        reader for the whole batch, where each waiter would have waited on its own)."""
        while True:
            with self._queue_changed:
                while not self._closing and (not self._queue or self._combining):
                    self._queue_changed.wait()
                if self._closing:
                    return
                self._combining = True
            flight = None
            try:
                flight = self._combine()
            except Exception:  # its writes are answered (`_run_batch`); the committer goes on
                log.exception("a group commit batch failed")
            if flight is None:
                continue
            try:
                self._land(flight)
            except Exception:
                log.exception("landing a group commit batch failed")
            applied = [item for item in flight.items
                       if item.wake is not None and item.kind == _DONE and item.applied_at is not None]
            if applied:
                # No longer than the earliest deadline, so that one slow apply does not
                # hold the next batches up: a waiter woken before its records are applied
                # waits for them itself (`write_grouped_async`).
                earliest = min(item.deadline for item in applied)
                self._reader.wait_until(max(item.applied_at or 0 for item in applied), _remaining(earliest))
                _wake_together([item.wake for item in applied if item.wake is not None])

    def close(self) -> None:
        """Stop the committer thread (if a write on an event loop started it); writes
        queued for it fail. Returns once it has ended, or after 5 s."""
        with self._queue_changed:
            self._closing = True
            waiting = [item for item in self._queue if item.wake is not None and not item.taken]
            self._queue_changed.notify_all()
        for item in waiting:
            self._settle(item, _FAILED, error=StoreTimeout("the writer is closing"))
        committer = self._committer
        if committer is not None and committer is not threading.current_thread():
            committer.join(timeout=5)

    def _run_queued(self, item: _Queued) -> None:
        """Queue `item` and return once a batch has decided its fate (`item.kind`): run
        batches here while no other thread does, else wait for the one that does.
        Raises StoreTimeout at the item's deadline."""
        with self._queue_changed:
            self._queue.append(item)
        while True:
            with self._queue_changed:
                while item.kind is None and self._combining:
                    remaining = item.deadline - time.monotonic()
                    if remaining <= 0:
                        if not item.taken:
                            self._queue.remove(item)
                            raise StoreTimeout("timed out waiting for the writes ahead of this one")
                        raise StoreTimeout("timed out waiting for the write to be appended")
                    self._queue_changed.wait(remaining)
                if item.kind is not None:
                    return
                if item.taken:  # in a batch in flight: its landing settles it
                    remaining = item.deadline - time.monotonic()
                    if remaining <= 0:
                        raise StoreTimeout("timed out waiting for the write to be appended")
                    self._queue_changed.wait(remaining)
                    continue
                self._combining = True
            flight = self._combine()
            if flight is None:
                continue
            # The next batch may be planned and produced while this one's round trip is
            # under way: it is planned on this one's records (pending).
            if item in flight.items:
                self._land(flight)  # no later than this write's own deadline (`_land`)
            else:
                # This write is answered (it needed no record, or was refused) or waits
                # for the next batch: it must not wait for the others' round trip, nor
                # up to their deadlines, later than its own.
                threading.Thread(target=self._land, args=(flight,), name="group-commit-landing",
                                 daemon=True).start()

    def _combine(self) -> _Flight | None:
        """`_run_batch`, by the thread that set `_combining`; clears it after."""
        try:
            return self._run_batch()
        finally:
            with self._queue_changed:
                self._combining = False
                self._queue_changed.notify_all()

    def _run_batch(self) -> _Flight | None:
        """Take every queued write, plan them in order and start appending them together.
        Returns the batch in flight, whose landing (`_land`) settles its writes."""
        with self._queue_changed:
            batch, self._queue = self._queue, []
            for item in batch:
                item.taken = True
        if not batch:
            return None
        deferred: list[_Queued] = []
        flight: _Flight | None = None
        try:
            # The batch blocks (for the lock, the log's end, flights ahead) no longer than
            # its earliest deadline: the thread running it answers a write of its own,
            # which must not wait past its timeout for later writes' sake.
            earliest = min(item.deadline for item in batch)
            if not self._lock.acquire(timeout=_remaining(earliest)):
                for item in batch:
                    if time.monotonic() >= item.deadline:
                        self._settle(item, _FAILED, error=StoreTimeout(
                            "timed out waiting for the writes ahead of this one"))
                    else:
                        deferred.append(item)  # time left: the next batch tries again
                return None
            try:
                deferred, flight = self._plan_and_start(batch, earliest)
            finally:
                self._lock.release()
        except BaseException as exc:  # never leave a waiter without an answer
            for item in batch:
                if item.kind is None and item not in deferred:
                    self._settle(item, _FAILED, error=exc)
            raise
        finally:
            with self._queue_changed:
                for item in deferred:
                    item.taken = False
                self._queue[:0] = deferred  # first in the next batch, in their order
                self._queue_changed.notify_all()
        return flight

    def _base(self, until: float) -> tuple[int, PendingWrites]:
        """Under the write lock: where the next batch lands and what is pending before it
        (the records of batches in flight or landed but not applied yet)."""
        with self._queue_changed:
            self._prune_flights()
            if self._resync or len(self._flights) >= _MAX_FLIGHTS:
                # After a batch that did not land in place the log's end is unknown;
                # and only so many round trips may overlap.
                while any(not f.landed for f in self._flights):
                    if not self._queue_changed.wait(_remaining(until)):
                        raise StoreTimeout("timed out waiting for the writes ahead of this one")
                if self._resync:
                    self._flights, self._resync, self._known_end = [], False, None
            self._prune_flights()
            flights = list(self._flights)
        pending = PendingWrites()
        for flight in flights:
            pending.add(flight.records, flight.raw_keys)
        if flights:
            return flights[-1].end, pending
        return self._catch_up(until), pending

    def _prune_flights(self) -> None:
        """Forget the oldest batches once landed and applied: the cache holds them now.
        Only from the front: the reader may apply a batch whose acknowledgement is yet
        to arrive, and a later batch's must not be forgotten before it."""
        applied = self._reader.next_offset
        while self._flights and self._flights[0].landed and self._flights[0].end <= applied:
            self._flights.pop(0)

    def _plan_and_start(self, batch: list[_Queued], until: float) -> tuple[list[_Queued], _Flight | None]:
        """Under the write lock: plan `batch` in order and start appending what it plans
        in one go. Settles every item, except those returned: to be planned again next
        batch, and those in the flight returned."""
        try:
            end, pending = self._base(until)
        except (StoreTimeout, LogUnavailable) as exc:
            for item in batch:
                self._settle(item, _FAILED, error=exc)
            return [], None
        if self._election.leads_elsewhere():
            for item in batch:
                self._settle(item, _FOLLOW)
            return [], None
        in_flight = bool(pending)
        in_office = self.in_office()
        deferred: list[_Queued] = []
        flight = _Flight(end)
        for item in batch:
            if time.monotonic() >= item.deadline:
                self._settle(item, _FAILED, error=StoreTimeout("timed out waiting for the writes ahead of this one"))
                continue
            try:
                records, result = item.plan(pending)
                if not records:
                    self._settle(item, _DONE, result=result)
                    continue
                if not in_office:
                    self._settle(item, _AWAIT_OFFICE)
                    continue
                encoded = self._encode_all(records)
            except PlanAlone as exc:
                if pending:
                    deferred.append(item)
                else:  # alone already: deferring would never end
                    self._settle(item, _FAILED, error=RuntimeError(f"a plan asked to be planned alone "
                                                                   f"while it was: {exc}"))
                continue
            except Exception as exc:  # the plan's refusal, or RecordTooLarge: this write's own
                self._settle(item, _FAILED, error=exc)
                continue
            raw_keys = {raw_key for raw_key, _ in encoded}
            if not raw_keys.isdisjoint(pending.raw_keys):
                deferred.append(item)  # planned on a state an earlier write changes
                continue
            mine = [r for r in records if not isinstance(r, Restated)]
            pending.add(mine, raw_keys)
            flight.add(item, result, encoded, mine, raw_keys)
        if not flight.items:
            if deferred and in_flight:
                # Every write waits on a record still in flight: let it be applied
                # rather than plan the same collision again at once.
                self._reader.wait_until(end, min(_remaining(until), _POLL_FOR_APPLY))
            return deferred, None
        self._known_end = None  # unknown until the batch lands
        self.batches += 1
        try:
            flight.wait = self._start_append(flight.encoded, end)
        except (LogConflict, LogUnavailable, RecordTooLarge) as exc:
            flight.failure = exc
        with self._queue_changed:
            self._flights.append(flight)
        return deferred, flight

    def _start_append(self, records: list[tuple[bytes, bytes | None]], expected: int
                      ) -> Callable[[float], list[int]]:
        """Start appending `records` at `expected`, ...: `Log.start_append_many` where the
        log can pipeline, else the whole append now. Returns what waits for the outcome."""
        start = getattr(self._log, "start_append_many", None)
        if start is not None:
            return start(records, expected)
        offsets = self._append_many(records, expected, time.monotonic() + self._timeout)
        return lambda timeout: offsets

    def _land(self, flight: _Flight) -> None:
        """Wait for `flight`'s append and settle its writes: done where all of a write's
        records landed in place, else the log's error, or planned again (queued first)
        where someone else's append displaced them."""
        # No longer than the earliest deadline, as `_run_batch`: the landing thread answers
        # one of these writes. (A write not acknowledged by then may still land; its
        # client was told it failed, as with any timeout.)
        earliest = min(item.deadline for item in flight.items)
        offsets: list[int] = []
        failure = flight.failure
        if failure is None:
            assert flight.wait is not None
            try:
                offsets = flight.wait(_remaining(earliest))
            except Exception as exc:  # whatever it is, its writes must be answered and the flight landed
                failure = exc
        displaced: list[_Queued] = []
        if isinstance(failure, LogConflict):
            displaced = list(flight.items)
        elif failure is not None:
            for item in flight.items:
                self._settle(item, _FAILED, error=failure)
        else:
            if offsets == list(range(flight.start, flight.end)):
                # All in place: applied here, without waiting for the reader to read
                # them back, if nothing before them waits to be.
                self._apply_landed(flight.encoded, flight.start)
            position = flight.start
            done: list[tuple[_Queued, object, int]] = []
            accepted = 0
            for item, result, size in zip(flight.items, flight.results, flight.sizes):
                mine = offsets[position - flight.start:position - flight.start + size]
                expected = range(position, position + size)
                position += size
                if len(mine) == size and all(landed == wanted for landed, wanted in zip(mine, expected)):
                    done.append((item, result, position))
                    accepted += size
                elif -1 in mine:
                    self._settle(item, _FAILED, error=LogUnavailable("the log did not confirm the write"))
                else:
                    displaced.append(item)
            self._settle_done(done, accepted)
        in_place = failure is None and not displaced and -1 not in offsets
        again = self._displaced(displaced)
        with self._queue_changed:
            flight.landed = True
            if not in_place:
                self._resync = True  # the log's end is unknown: later batches were planned on this one
                self._flights.remove(flight)
            elif not self._resync and flight is self._flights[-1]:
                self._known_end = flight.end
            for item in again:
                item.taken = False
            self._queue[:0] = again
            self._queue_changed.notify_all()

    def _displaced(self, items: list[_Queued]) -> list[_Queued]:
        """`items` lost their place to someone else's append: those with attempts left,
        to be planned again on the new state; the others give up."""
        again = []
        for item in items:
            item.conflicts += 1
            if item.conflicts >= _WRITE_ATTEMPTS:
                self._settle(item, _FAILED, error=StoreTimeout("gave up writing: other writers kept appending first"))
            else:
                again.append(item)
        return again

    def _append_many(self, records: list[tuple[bytes, bytes | None]], expected: int, deadline: float) -> list[int]:
        """`Log.append_many`, or one conditional append per record where the log lacks it."""
        append_many = getattr(self._log, "append_many", None)
        if append_many is not None:
            return append_many(records, expected, timeout=_remaining(deadline))
        offsets: list[int] = []
        for index, (raw_key, raw_value) in enumerate(records):
            try:
                offsets.append(self._log.append(raw_key, raw_value, expected_offset=expected + index,
                                                timeout=_remaining(deadline)))
            except LogConflict:
                if not offsets:
                    raise
                break
        return offsets + [expected - 1] * (len(records) - len(offsets))  # the rest: not in place

    def _settle(self, item: _Queued, kind: int, *, result: object = None, error: BaseException | None = None,
                applied_at: int | None = None) -> None:
        with self._queue_changed:
            item.result, item.error, item.applied_at = result, error, applied_at
            item.kind = kind
            self._queue_changed.notify_all()
        if item.wake is not None and not (kind == _DONE and applied_at is not None
                                          and threading.current_thread() is self._committer):
            item.wake()

    def _settle_done(self, done: list[tuple[_Queued, object, int]], accepted: int) -> None:
        """`_settle` as done each (write, result, applied at) of a batch that landed in
        place, with the `accepted` records: under one hold of the queue's condition, not
        two a write."""
        with self._queue_changed:  # batches land on several threads
            self.accepted_appends += accepted
            for item, result, applied_at in done:
                item.result, item.error, item.applied_at = result, None, applied_at
                item.kind = _DONE
            self._queue_changed.notify_all()
        if threading.current_thread() is not self._committer:
            for item, _, _ in done:
                if item.wake is not None:
                    item.wake()

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
        for _ in range(_WRITE_ATTEMPTS):
            if permitted and self._election.leads_elsewhere():
                return self._answer_as_follower(plan)
            if not self._lock.acquire(timeout=_remaining(deadline)):
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
            if not self._reader.wait_until(last + 1, _remaining(deadline)):
                raise StoreTimeout("timed out waiting for the write to be applied")
            return result
        raise StoreTimeout("gave up writing: other writers kept appending first")

    def _await_flights(self, deadline: float) -> None:
        """Under the write lock: wait until every grouped batch has landed, so that the
        log's end is known (or known to be unknown) before a write of its own."""
        with self._queue_changed:
            while any(not f.landed for f in self._flights):
                if not self._queue_changed.wait(_remaining(deadline)):
                    raise StoreTimeout("timed out waiting for the writes ahead of this one")
            if self._resync:
                self._flights, self._resync, self._known_end = [], False, None

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
        end = self._known_end if self._known_end is not None else self._log.end_offset(_remaining(deadline))
        if not self._reader.wait_until(end, _remaining(deadline)):
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
            last = self._log.append(raw_key, raw_value, expected_offset=expected, timeout=_remaining(deadline))
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


class _Waker:
    """What wakes `future`'s waiter from another thread (nothing once its loop is closed)."""

    __slots__ = ("loop", "future")

    def __init__(self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[None]) -> None:
        self.loop, self.future = loop, future

    def __call__(self) -> None:
        _call_on(self.loop, _wake, self.future)


def _wake_together(wakers: list[_Waker]) -> None:
    """Wake the waiters of a batch: one call into each event loop for all of its own
    (each call into a loop writes to its wake-up pipe: a system call, and a turn of it)."""
    by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
    for waker in wakers:
        by_loop.setdefault(waker.loop, []).append(waker.future)
    for loop, futures in by_loop.items():
        _call_on(loop, _wake_all, futures)


def _call_on(loop: asyncio.AbstractEventLoop, callback: Callable[[Any], None], argument: Any) -> None:
    try:
        loop.call_soon_threadsafe(callback, argument)
    except RuntimeError:  # the loop is closed: nobody waits any more
        pass


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _wake_all(futures: list[asyncio.Future[None]]) -> None:
    for future in futures:
        if not future.done():
            future.set_result(None)


def _taken_error(item: _Queued) -> BaseException:
    """The error that failed `item`, which no longer holds it. Raised by the waiter,
    whose frame the error's traceback then holds (as it holds the frames that planned
    `item`): if `item` still held the error, that would be a cycle, left for the
    garbage collector on every refused write."""
    error, item.error = item.error, None
    assert error is not None
    return error


def _remaining(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.0)
