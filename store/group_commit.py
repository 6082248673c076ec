"""Group commit: writes that arrive while a batch is being appended share the next one.

    value = writer.write_grouped(plan)               # plan(pending) -> (records, result)
    value = await writer.write_grouped_async(plan)   # the same, for a caller on an event loop

Registrations that arrive while a batch is being written queue up; the next writer to
find no batch under way plans every queued write in order, each against the cache
caught up to the log's end plus the records of the writes planned before it in the
batch (`PendingWrites`), and appends them all with one `Log.append_many` (one produce
round trip, one SQLite transaction), every record still conditional on its offset. A
write whose record keys collide with an earlier one in the batch waits for the next
batch, so it is planned on the state the earlier one left. Several batches may be in
flight at once (`_MAX_FLIGHTS`), each planned on the records of those before it. Each
write keeps its own deadline, and returns once this node has applied its records.

`GroupCommit` is the part of `store.writer.LogWriter` that does this: it shares the
writer's lock, its knowledge of the log's end and its single-write steps (catch up,
encode, apply what landed, wait for office), which the writer defines.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from store.deadlines import NoTimeLeft, StoreTimeout, remaining
from store.log import LogConflict, LogUnavailable, RecordTooLarge
from store.plans import WRITE_ATTEMPTS, GroupPlan, PendingWrites, PlanAlone, Restated, T
from store.records import Key, Value

if TYPE_CHECKING:
    from store.log import Log
    from store.reader import LogReader
    from store.writer import Election

log = logging.getLogger(__name__)



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


# Threads preparing writes at once (`write_prepared_async`): a Protobuf schema's waits
# for a free compiler run on them, never on the loop; the writes themselves are batched.
_PREPARERS = 4
# What `_settled` answers for a write to be queued again once this node is in office.
_AGAIN = object()


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


class GroupCommit:
    """The writer's group commit (see the module docstring); a base of `LogWriter`.

    Thread-safe: the queue and the batches in flight change under `_queue_changed`;
    planning runs under the writer's lock, one batch at a time.
    """

    # The writer's, which the group commit shares (`LogWriter.__init__`).
    _log: Log
    _reader: LogReader
    _election: Election
    _timeout: float
    _lock: threading.Lock
    _known_end: int | None
    accepted_appends: int

    def _init_group_commit(self) -> None:
        # Writes waiting for a batch, and whether a writer is running one.
        self._queue: list[_Queued] = []
        self._queue_changed = threading.Condition()
        self._combining = False
        self._flights: list[_Flight] = []  # appended or being appended, not yet applied
        self._resync = False  # a batch did not land in place: ask the log where it ends
        self._committer: threading.Thread | None = None  # runs the batches of event loops' writes
        self._closing = False
        # Where `write_prepared_async` prepares plans (parses and checks): made with its first.
        self._preparers: ThreadPoolExecutor | None = None
        self.batches = 0  # batches grouped writes were appended in (for tests and benches)

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
                                                                               remaining(deadline)):
                    raise StoreTimeout("timed out waiting for the write to be applied")
                if self._reader.misplaced_latest:
                    self._repair_within(deadline)
                return item.result  # type: ignore[return-value]
            if item.kind == _FAILED:
                raise _taken_error(item)
            if item.kind == _AWAIT_OFFICE:
                self._await_office(deadline)

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
            self._enqueue(item)
            outcome = await self._settled(item, future, deadline, loop)
            if outcome is not _AGAIN:
                return outcome  # type: ignore[return-value]

    async def write_prepared_async(self, prepare: Callable[[], GroupPlan[T]]) -> T:
        """`write_grouped_async` of the plan `prepare()` returns, `prepare` run on a thread
        of the writer's own (what it does, parsing and checking, never runs on the loop), which
        also queues the plan for the committer: the loop is woken once, when the write
        settles, not also when `prepare` returns (each wake of a loop from another thread
        is a system call and a turn of the loop; about 50 us of CPU a registration).
        Raises what `prepare` raises, else as `write_grouped_async`."""
        loop = asyncio.get_running_loop()
        deadline = self._deadline()
        future = loop.create_future()
        waker = _Waker(loop, future)
        # What the thread left: the item it queued, the plan a follower answers, or an error.
        outcome: list[Any] = []

        def prepare_and_queue() -> None:
            try:
                plan = prepare()
                if self._election.leads_elsewhere():
                    outcome.append(plan)
                else:
                    item = _Queued(plan, deadline, waker)
                    outcome.append(item)  # before it is queued: the committer may settle it at once
                    self._enqueue(item)
                    return
            except BaseException as exc:  # handed to the waiting coroutine, raised there
                outcome[:] = [exc]
            waker()

        if self._preparers is None:
            with self._queue_changed:
                if self._preparers is None:
                    self._preparers = ThreadPoolExecutor(max_workers=_PREPARERS, thread_name_prefix="prepare")
        self._preparers.submit(prepare_and_queue)
        timer = loop.call_at(loop.time() + remaining(deadline), _wake, future)
        try:
            await future
        finally:
            timer.cancel()
        if not outcome:
            # The checks spent the request's time: its fault, not the log's (nothing was
            # queued; the thread, when it ends, queues nothing past the deadline).
            raise NoTimeLeft("the checks took the request's whole timeout; nothing was written")
        first = outcome.pop()
        if isinstance(first, BaseException):
            # Raised with no reference left to it here or in the thread's list: its
            # traceback holds this frame and the thread's, which would make a cycle.
            try:
                raise first
            finally:
                first = None
        if not isinstance(first, _Queued):
            plan = first
            return self._answer_as_follower(lambda: plan(PendingWrites()))
        settled = await self._settled(first, future, deadline, loop, waited=True)
        if settled is not _AGAIN:
            return settled  # type: ignore[return-value]
        return await self.write_grouped_async(first.plan)

    def _enqueue(self, item: _Queued) -> None:
        """Queue `item` for the committer (from any thread). Raises StoreTimeout when the
        writer is closing, or the item's deadline has passed (nobody waits for it)."""
        with self._queue_changed:
            if self._closing:
                raise StoreTimeout("the writer is closing")
            if remaining(item.deadline) <= 0:
                raise StoreTimeout("timed out before the write was queued")
            self._queue.append(item)
            if self._committer is None:
                self._committer = threading.Thread(target=self._commit, name="group-commit", daemon=True)
                self._committer.start()
            self._queue_changed.notify_all()

    async def _settled(self, item: _Queued, future: asyncio.Future[None], deadline: float,
                       loop: asyncio.AbstractEventLoop, waited: bool = False) -> Any:
        """The result of a queued `item` once `future` is woken (by the committer, or the
        deadline's timer; `waited`: the caller awaited it already), or `_AGAIN` when the
        write must be queued again once this node is in office. Raises as `write`."""
        if not waited:
            timer = loop.call_at(loop.time() + remaining(deadline), _wake, future)
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
                                                  remaining(deadline)):
                    raise StoreTimeout("timed out waiting for the write to be applied")
            if self._reader.misplaced_latest:
                await loop.run_in_executor(None, self._repair_within, deadline)
            return item.result
        if item.kind == _FAILED:
            raise _taken_error(item)
        if item.kind == _AWAIT_OFFICE:
            await loop.run_in_executor(None, self._await_office, deadline)
        return _AGAIN

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
                self._reader.wait_until(max(item.applied_at or 0 for item in applied), remaining(earliest))
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
        if self._preparers is not None:
            self._preparers.shutdown(wait=False, cancel_futures=True)

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
            if not self._lock.acquire(timeout=remaining(earliest)):
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
                    if not self._queue_changed.wait(remaining(until)):
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
                self._reader.wait_until(end, min(remaining(until), _POLL_FOR_APPLY))
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
                offsets = flight.wait(remaining(earliest))
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
            if item.conflicts >= WRITE_ATTEMPTS:
                self._settle(item, _FAILED, error=StoreTimeout("gave up writing: other writers kept appending first"))
            else:
                again.append(item)
        return again

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

    def _await_flights(self, deadline: float) -> None:
        """Under the write lock: wait until every grouped batch has landed, so that the
        log's end is known (or known to be unknown) before a write of its own."""
        with self._queue_changed:
            while any(not f.landed for f in self._flights):
                if not self._queue_changed.wait(remaining(deadline)):
                    raise StoreTimeout("timed out waiting for the writes ahead of this one")
            if self._resync:
                self._flights, self._resync, self._known_end = [], False, None


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
