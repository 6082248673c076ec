"""A `Log` on partition 0 of a compacted Kafka topic (Confluent's `_schemas`).

    log = KafkaLog(KafkaLogConfig.from_kafkastore({"bootstrap.servers": "localhost:9092"}))
    offset = log.append(key, value, expected_offset=log.end_offset())
    batch = log.read(0, 5000, 0.5)      # LogBatch(records, next_offset)

Built on confluent-kafka's primitives: an idempotent `Producer` with `acks=all`, a
`Consumer` assigned to partition 0 (no group membership, no commits, read_committed),
and, at start-up, an `AdminClient` with which `store.kafka_topic` creates and checks
the topic. `store.kafka_config` maps Confluent's `kafkastore.*` properties to
librdkafka: `security.protocol`, `sasl.*` and `ssl.*` pass through with the prefix
stripped; Java-only forms (JKS/PEM stores, `sasl.jaas.config`) are translated or
refused with a message naming the property (its module docstring has the table).

Conditional appends. Kafka cannot refuse a write because the log's end moved, so a
conditional record carries the offset it expects in the `expected-offset` header
(8 bytes, big-endian, signed, like Kafka's LongSerializer). If the broker puts it
elsewhere, `append` raises LogConflict and every reader drops the record
(`LogRecord.misplaced`), so it has no effect anywhere, and a deposed leader's late
append is as harmless. Confluent's and Karapace's readers ignore headers, so the
records stay theirs to read. (They would apply a misplaced record, as they apply
whatever is in the topic; only concurrent writers produce one.) Limitation: compaction
keeps the latest record per key, so a misplaced record can, once the cleaner has run,
shadow the valid record of the same key that it lost the race to. Transactional
appends (abort instead of leaving a misplaced record; a fixed `transactional.id` to
fence a deposed leader) would close that gap; see DESIGN invariant 2.

The log's end. `end_offset` is the partition's last stable offset (the high watermark
unless a foreign transaction is open), asked of the broker by a read_committed
consumer. Offsets below it may hold no record: compaction removes records (a trailing
tombstone too, once `delete.retention.ms` passes), transaction markers and aborted
records take offsets. A reader therefore cannot conclude "caught up" from the last
record it saw, nor wait for a record at end - 1; `read` reports the position
librdkafka's fetcher reached, taken from the partition-EOF event
(`enable.partition.eof`), whose offset is that end.
"""
from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from store.kafka_config import KafkaLogConfig
from store.kafka_topic import ensure_topic
from store.log import LogBatch, LogConflict, LogMisconfigured, LogUnavailable, RecordTooLarge
from store.records import LogRecord

log = logging.getLogger(__name__)

EXPECTED_OFFSET_HEADER = "expected-offset"
# Who wrote a record: an opaque name the node gives (`KafkaLog.origin`), for audits
# such as the failover tests' check that only the fence holder's records count.
ORIGIN_HEADER = "origin"

# A slice of read()'s wait: close() waits at most this long for a read in progress.
_POLL_SLICE = 0.1
# A write's delivery callback is served by the thread waiting for it, one polling thread
# at a time (`_await_delivery`). A writer that finds another polling waits for its own
# callback, which that poll may serve; once the other stops, it takes over within this.
_HANDOVER = 0.001
# What no writer waits for (librdkafka's log and error events, the late delivery of a
# write that timed out) is served this often by a thread of its own.
_IDLE_POLL = 0.25
# How long a produced record may wait for the records produced after it to share its
# produce request. A writer sends what it produced at once by flushing while it waits
# (`_await_delivery`), so this bounds only records nobody waits for any more.
_LINGER_MS = 5
# After a broker restart, reconnect within a second, not librdkafka's default 10 s.
_RECONNECT = {"reconnect.backoff.ms": "100", "reconnect.backoff.max.ms": "1000"}
_PARTITION = 0
_LIBRDKAFKA_MESSAGE_MAX_BYTES = 1_000_000  # librdkafka's default message.max.bytes
_FRAMING_BYTES = 512  # record batch header, record overhead and our two headers, with room
# librdkafka's consumer can stop fetching an assigned partition after a broker restart
# and never resume (confluentinc/librdkafka#5153; seen here: one node of three stayed
# 41 records behind for minutes while the others went on). Only a new consumer
# recovers. A read that has delivered nothing for this long, while the broker reports
# records past the position, replaces the consumer. An idle log is not a stall: its
# end equals the position.
_STALL_SECONDS = 5.0


def encode_expected_offset(offset: int) -> bytes:
    return offset.to_bytes(8, "big", signed=True)


def decode_expected_offset(raw: bytes | None) -> int:
    """The offset a header names; -1 (never a real offset) for a malformed header, so a
    record whose precondition cannot be read is dropped rather than trusted."""
    if raw is None or len(raw) != 8:
        return -1
    return int.from_bytes(raw, "big", signed=True)


class KafkaLog:
    """A `Log` on a one-partition compacted topic. Thread-safe: any thread may append
    or ask for the end; one thread (the reader) reads."""

    def __init__(self, config: KafkaLogConfig) -> None:
        """Connect, create or check the topic, and start the clients.

        Blocks up to `config.init_timeout` while Kafka cannot be reached. Raises
        LogUnavailable, or LogMisconfigured for an unusable topic or client setting.
        """
        self._topic = config.topic
        self._partition = TopicPartition(config.topic, _PARTITION)
        self.origin: bytes = b""  # set by the node: stamped on every record it appends
        self._timeout = config.timeout
        # librdkafka's own log lines go to Python logging, not raw to stderr.
        # A connection to a broker that vanished (a restarted container's address) would
        # hang for librdkafka's default 30 s before the client tries another: no longer
        # than the store timeout.
        setup = {"socket.connection.setup.timeout.ms": str(max(1000, int(config.timeout * 1000)))}
        base = {**_RECONNECT, **setup, **config.client, "logger": logging.getLogger("librdkafka")}
        # Only start-up needs the admin client; dropping it closes its connections.
        facts = ensure_topic(_client(AdminClient, base), config)
        self.cluster_id = facts.cluster_id
        # A record Kafka would refuse must be refused before the append (a clear 42209,
        # not a failed produce): the smaller of the topic's and the producer's limits,
        # less room for the batch and record framing and our headers.
        limits = [int(config.client.get("message.max.bytes", _LIBRDKAFKA_MESSAGE_MAX_BYTES))]
        if facts.max_message_bytes is not None:
            limits.append(facts.max_message_bytes)
        self.max_record_bytes: int | None = min(limits) - _FRAMING_BYTES
        self._producer_config = {
            **base,
            "acks": "all",
            "enable.idempotence": True,
            # Records wait (`_LINGER_MS`) until their writer flushes: with linger.ms 0,
            # librdkafka's broker thread woke on a batch's first record and sent it alone,
            # the rest in a second request (1.6 requests a batch of 6, 2.0 of 12). Each
            # request is a round trip of its own: the broker serves one at a time per
            # connection. A batch of 6 took 0.38-0.41 ms, sent whole 0.24-0.29.
            "linger.ms": _LINGER_MS,
            # librdkafka fails a message it could not deliver within the store timeout,
            # so a write during an outage ends with an error, never a hang.
            "message.timeout.ms": int(config.timeout * 1000),
        }
        self._producer_lock = threading.Lock()
        # Created now, so the producer id is fetched before the first write needs it.
        self._producer: Producer = _client(Producer, self._producer_config)
        self._consumer_config: dict[str, Any] = {
            **base,
            "group.id": f"{config.topic}-reader",  # required by the client; never joined or committed
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,  # the EOF event tells read() where the end is
            "auto.offset.reset": "earliest",
            # Cold start reads the whole topic: fetch in big batches.
            "fetch.max.bytes": 16 * 1024 * 1024,
            "max.partition.fetch.bytes": 4 * 1024 * 1024,
            "queued.max.messages.kbytes": 16 * 1024,
            # Catching up fills that queue faster than the reader drains it, and
            # librdkafka then pauses fetching for fetch.queue.backoff.ms (1 s by default):
            # a second lost in every cold start. A short pause resumes as soon as the
            # reader has made room; once caught up the queue stays near empty.
            "fetch.queue.backoff.ms": 10,
        }
        self._consumer: Consumer = _client(Consumer, self._consumer_config)
        self._delivered_at = time.monotonic()  # when a read last moved the position
        self.consumer_replacements = 0  # stalled consumers replaced (see _STALL_SECONDS)
        self.seeks = 0  # reads that had to (re)position the consumer: a reader reads on
        self.rests = 0  # times the reader stopped the fetching (`rest`)
        # The log's end comes from a consumer of its own, not the AdminClient: librdkafka's
        # admin ListOffsets keeps a stale leader epoch after a broker restart and fails
        # with FENCED_LEADER_EPOCH until its metadata refreshes (minutes). A read_committed
        # consumer's watermark query answers the last stable offset.
        self._end_queries = ThreadPoolExecutor(max_workers=2, thread_name_prefix="kafka-log-end")
        self._ends: Consumer = _client(Consumer, {
            **base, "group.id": f"{config.topic}-reader", "isolation.level": "read_committed",
            "enable.auto.commit": False})
        self._read_lock = threading.Lock()
        self._position: int | None = None  # where the consumer delivers next; None: seek
        self._resting_at: int | None = None  # where the consumer stopped fetching (`rest`)
        self._closed = False
        self._polling = threading.Lock()  # held by the thread polling the producer
        # (thread, what it waits for, the producer it flushes) while a thread flushes the
        # producer to wait for a delivery (`_await_delivery`)
        self._flushing: tuple[int, _Signal, Producer] | None = None
        self._stopped = threading.Event()
        self._poller = threading.Thread(target=self._poll_idle, name="kafka-log-producer", daemon=True)
        self._poller.start()

    def _poll_idle(self) -> None:
        """Serve the producer's events that no writer waits for, while no writer polls."""
        while not self._stopped.wait(_IDLE_POLL):
            if self._polling.acquire(blocking=False):
                try:
                    self._producer.poll(0)
                finally:
                    self._polling.release()

    def _await_delivery(self, producer: Producer, done: _Signal, deadline: float) -> bool:
        """Wait until `done` is set by a delivery callback or `deadline` passes; True if set.

        The waiting thread serves the callbacks itself: a thread polling for every writer
        cost a hand-off per write (it woke, served the callback, woke the writer), ~1.4
        of the ~9 context switches a registration made under 10 writers; without it, 1
        to 21% more registrations a second (median 4.5%, 7 rounds alternating). One
        thread polls at a time: a second would sit out its whole poll once the first
        served its callback.

        It polls by flushing: while a flush is under way librdkafka sends what is queued
        at once, linger.ms notwithstanding, so a batch produced record by record goes in
        one produce request. A flush returns once every record produced is delivered,
        another writer's too: the callback that sets `done` ends it at once if anything
        else is still outstanding (`_ended_flush`).
        """
        polling = self._polling
        while not done.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if polling.acquire(blocking=False):
                try:
                    self._flushing = (threading.get_ident(), done, producer)
                    while not done.is_set():
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            return False
                        try:
                            # Under 0.2 s: a longer flush, confluent-kafka flushes in
                            # chunks and goes on after a callback's exception.
                            producer.flush(min(remaining, _POLL_SLICE))
                        except _Delivered:
                            pass
                finally:
                    self._flushing = None
                    polling.release()
                return True
            done.wait(min(remaining, _HANDOVER))  # another thread polls, and may serve ours
        return True

    def _ended_flush(self, done: _Signal) -> None:
        """Called by a delivery callback that just set `done`: if the thread serving it
        flushes for `done` and the producer holds more than this callback's record
        (another writer's records, events not served yet), end that flush now
        (`_await_delivery`). An exception in a callback makes confluent-kafka stop
        serving callbacks (`rd_kafka_yield`) and raise it from `flush`; the callbacks
        not served yet wait for the next poll.

        With nothing else outstanding the flush ends by itself once the callback returns,
        and cheaper: a batch of 4 took ~10 us less of its thread's CPU (the exception,
        and the next batch's first produce, which cost more after a flush cut short).
        A record another thread produces between this check and the callback's return
        keeps the flush for its round trip at most (`_POLL_SLICE` if it never lands)."""
        flushing = self._flushing
        if (flushing is not None and flushing[1] is done and flushing[0] == threading.get_ident()
                and len(flushing[2]) > 1):
            raise _Delivered

    # ---- writing ------------------------------------------------------------

    def append(self, key: bytes, value: bytes | None, expected_offset: int | None = None,
               timeout: float | None = None) -> int:
        """Produce one record to partition 0 and return its offset once all in-sync
        replicas have it.

        Blocks until acknowledged, at most `timeout` (or the store timeout); a record
        not acknowledged by then may still be delivered later. Raises LogUnavailable
        (not acknowledged in time, or refused) or LogConflict (it landed elsewhere than
        `expected_offset`; readers will drop it).
        """
        headers = [(ORIGIN_HEADER, self.origin)] if self.origin else []
        if expected_offset is not None:
            headers.append((EXPECTED_OFFSET_HEADER, encode_expected_offset(expected_offset)))
        done = _Signal()
        outcome: list[tuple[KafkaError | None, int]] = []

        def delivered(err: KafkaError | None, msg: Message) -> None:
            outcome.append((err, msg.offset() if err is None else -1))
            done.set()
            self._ended_flush(done)

        producer = self._producer
        try:
            producer.produce(self._topic, key=key, value=value, partition=_PARTITION,
                             headers=headers or None, on_delivery=delivered)
        except BufferError:
            raise LogUnavailable("the Kafka producer's queue is full") from None
        except KafkaException as exc:
            if exc.args[0].code() == KafkaError.MSG_SIZE_TOO_LARGE:
                raise RecordTooLarge(f"Kafka refused the record as too large: {exc.args[0].str()}") from None
            raise LogUnavailable(f"Kafka refused the write: {exc.args[0].str()}") from None
        # message.timeout.ms fails the record first; this margin only guards a lost callback.
        deadline = time.monotonic() + (self._timeout + 2.0 if timeout is None else timeout)
        if not self._await_delivery(producer, done, deadline):
            raise LogUnavailable("Kafka did not acknowledge the write in time")
        err, offset = outcome[0]
        if err is not None:
            if err.code() in (KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE):
                raise RecordTooLarge(f"Kafka refused the record as too large: {err.str()}")
            if err.fatal():
                self._renew_producer(producer)
            raise LogUnavailable(f"Kafka did not acknowledge the write: {err.str()}")
        if expected_offset is not None and offset != expected_offset:
            raise LogConflict(f"the record landed at offset {offset}, not {expected_offset}: "
                              "another writer appended first")
        return offset

    def append_many(self, records: list[tuple[bytes, bytes | None]], expected_offset: int,
                    timeout: float | None = None) -> list[int]:
        """Produce `records` in order, the i-th expecting offset `expected_offset + i`,
        and wait for all of them at once: one acks=all round trip for the lot (librdkafka
        puts what is queued together into one produce request). Returns where each
        landed, -1 for one not acknowledged in time or refused; readers drop those that
        landed elsewhere than they expected.

        Blocks at most `timeout` (or the store timeout). Raises LogUnavailable when no
        record was acknowledged, RecordTooLarge when Kafka refused one as too large
        before any was acknowledged.
        """
        return self.start_append_many(records, expected_offset)(timeout)

    def start_append_many(self, records: list[tuple[bytes, bytes | None]], expected_offset: int
                          ) -> Callable[[float | None], list[int]]:
        """`append_many` in two steps: produce now, in order after every record produced
        before, and return the function that waits for the acknowledgements (as
        `append_many`, with its `timeout`). Between the two, more records may be
        produced: writes pipeline without waiting for each other's round trips.
        Raises RecordTooLarge now when the first record is refused as too large."""
        origin = [(ORIGIN_HEADER, self.origin)] if self.origin else []
        offsets = [-1] * len(records)
        errors: list[KafkaError] = []
        # Callbacks run in whichever thread polls the producer, maybe while we still
        # produce. One settle is due per record and one for the producing itself; the
        # last sets `done`. Counted by `next` on an itertools.count, one step in C under
        # the GIL whatever thread takes it. A batch of 4 took 75-83 us of its thread's
        # CPU against 38-42 for the bare produce and flush calls; a lock and a
        # threading.Event a batch and a hold of the lock a record were ~14 us of that.
        settled = itertools.count(1)
        due = len(records) + 1
        done = _Signal()

        def settle() -> None:
            if next(settled) == due:
                done.set()
                self._ended_flush(done)

        def delivered_at(index: int) -> Callable[[KafkaError | None, Message], None]:
            def delivered(err: KafkaError | None, msg: Message) -> None:
                if err is None:
                    offsets[index] = msg.offset()
                else:
                    errors.append(err)
                settle()
            return delivered

        producer = self._producer
        refused: str | None = None
        for index, (key, value) in enumerate(records):
            headers = [*origin, (EXPECTED_OFFSET_HEADER, encode_expected_offset(expected_offset + index))]
            try:
                producer.produce(self._topic, key=key, value=value, partition=_PARTITION,
                                 headers=headers, on_delivery=delivered_at(index))
            except BufferError:
                refused = "the Kafka producer's queue is full"
            except KafkaException as exc:
                if exc.args[0].code() == KafkaError.MSG_SIZE_TOO_LARGE and not index:
                    raise RecordTooLarge(f"Kafka refused the record as too large: {exc.args[0].str()}") from None
                refused = f"Kafka refused the write: {exc.args[0].str()}"
            if refused is not None:
                # What is queued already is delivered (or fails) all the same; the rest
                # would land after a gap, misplaced: not produced, and settled here.
                for _ in range(len(records) - index):
                    settle()
                break
        settle()  # the producing is over
        return lambda timeout: self._acknowledged(producer, done, offsets, errors, refused, timeout)

    def _acknowledged(self, producer: Producer, done: _Signal, offsets: list[int],
                      errors: list[KafkaError], refused: str | None, timeout: float | None) -> list[int]:
        deadline = time.monotonic() + (self._timeout + 2.0 if timeout is None else timeout)
        self._await_delivery(producer, done, deadline)
        if offsets.count(-1) == len(offsets):  # none acknowledged
            if any(e.code() in (KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE) for e in errors):
                raise RecordTooLarge(f"Kafka refused the record as too large: {errors[0].str()}")
            if any(e.fatal() for e in errors):
                self._renew_producer(producer)
            detail = refused or (errors[0].str() if errors else "not acknowledged in time")
            raise LogUnavailable(f"Kafka did not acknowledge the write: {detail}")
        if errors and any(e.fatal() for e in errors):
            self._renew_producer(producer)
        return offsets

    def _renew_producer(self, failed: Producer) -> None:
        # An idempotent producer that hit a fatal error refuses every later write.
        with self._producer_lock:
            if self._producer is failed:
                log.warning("replacing the Kafka producer after a fatal error")
                self._producer = _client(Producer, self._producer_config)

    # ---- reading ------------------------------------------------------------

    def read(self, from_offset: int, max_records: int, timeout: float) -> LogBatch:
        """Records from `from_offset` and the position reached.

        Blocks up to `timeout` seconds while none arrive. Raises LogUnavailable when
        the consumer reports a fatal error or the topic is gone.
        """
        deadline = time.monotonic() + timeout
        with self._read_lock:
            if self._closed:
                return LogBatch([], from_offset)
            if from_offset != self._position:
                # assign() rather than seek(): it works before the first fetch too.
                self._consumer.assign([TopicPartition(self._topic, _PARTITION, from_offset)])
                if from_offset != self._resting_at:
                    self.seeks += 1
                self._position, self._resting_at = from_offset, None
            # consume(n, t) waits for all n or the whole t: take what is queued at once,
            # and only when nothing is, wait for the first message and then take the rest.
            messages = self._consumer.consume(max_records, 0)
            while not messages and not self._closed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                first = self._consumer.poll(min(remaining, _POLL_SLICE))
                if first is not None:
                    messages = [first]
                    if max_records > 1:
                        messages += self._consumer.consume(max_records - 1, 0)
            batch = self._batch(messages, from_offset)
            if batch.next_offset > from_offset:
                self._delivered_at = time.monotonic()
            elif not messages and not self._closed:
                self._replace_if_stalled(from_offset)
            return batch

    def rest(self) -> None:
        """Stop fetching until the next read, which fetches on from where the last one
        reached. For a reader whose records this node's writer applies as they land
        (store/reader.py): fetching them back cost the broker a fetch for every batch
        of registrations, half its CPU under 10 writers. (Unassigned, not paused: a
        pause keeps state that a later assign() may leave behind, librdkafka #5591.)"""
        with self._read_lock:
            if self._closed or self._position is None:
                return
            self._consumer.unassign()
            self._resting_at, self._position = self._position, None
            self.rests += 1

    def _replace_if_stalled(self, position: int) -> None:
        """Replace the consumer if it has delivered nothing for `_STALL_SECONDS` while
        the log holds records at or past `position`. Called with the read lock held."""
        now = time.monotonic()
        if now - self._delivered_at < _STALL_SECONDS:
            return
        self._delivered_at = now  # ask the broker at most once a stall period
        try:
            end = self.end_offset(min(self._timeout, _STALL_SECONDS))
        except LogUnavailable:
            return  # the broker is out of reach: there is nothing to fetch either
        if end <= position:
            return
        log.warning("the consumer of the schema topic %s delivered nothing for %.0f s at offset %d "
                    "while the topic ends at %d; replacing it", self._topic, _STALL_SECONDS, position, end)
        stalled, self._consumer = self._consumer, _client(Consumer, self._consumer_config)
        self._position = None  # the next read assigns the new consumer where the reader is
        self.consumer_replacements += 1
        # Closing a stalled consumer may wait on its broker threads: not on the reader.
        threading.Thread(target=stalled.close, name="kafka-log-stalled-close", daemon=True).start()

    def _batch(self, messages: list[Message], from_offset: int) -> LogBatch:
        records: list[LogRecord] = []
        append, new_record = records.append, tuple.__new__
        position = from_offset
        for message in messages:
            error = message.error()
            if error is None:
                offset = message.offset()
                if offset < from_offset:
                    # Only after an out-of-range reset to the log's start (a recreated
                    # topic): never hand the reader records it has already applied.
                    continue
                headers = message.headers()
                expected = None
                if headers:
                    for name, raw in headers:
                        if name == EXPECTED_OFFSET_HEADER:
                            expected = decode_expected_offset(raw)
                # tuple.__new__: the named tuple's own __new__ is a Python function, and
                # replaying a topic builds one record per message.
                append(new_record(LogRecord, (offset, message.key() or b"", message.value(), expected)))
                position = offset + 1
            elif error.code() == KafkaError._PARTITION_EOF:
                # The fetcher reached the end (the last stable offset): everything below
                # was read, including offsets compaction emptied and transaction markers.
                position = max(position, message.offset())
            elif error.fatal() or error.code() in _GONE:
                self._position = None  # the next read seeks back to where the reader is
                raise LogUnavailable(f"cannot read the schema topic {self._topic}: {error.str()}")
            else:
                # Transient (a broker restarting): librdkafka reconnects by itself.
                log.warning("reading the schema topic %s: %s", self._topic, error.str())
        self._position = position
        return LogBatch(records, position)

    def end_offset(self, timeout: float | None = None) -> int:
        """The last stable offset of partition 0, asked of the broker.

        Blocks one round trip, at most `timeout` (or the store timeout). Raises LogUnavailable.
        """
        wait = self._timeout if timeout is None else max(timeout, 0.01)
        # Asked on a thread of its own and waited for at most `wait`: with the broker
        # cut off, librdkafka's query was seen to return seconds past its timeout, and
        # a write must answer within its own. An abandoned query finishes on its thread.
        try:
            query = self._end_queries.submit(self._query_end, wait)
        except RuntimeError as exc:  # closed: the node is shutting down
            raise LogUnavailable(f"the Kafka log is closed: {exc}") from None
        try:
            return query.result(timeout=wait)
        except FutureTimeout:
            raise LogUnavailable(f"cannot read the end of the schema topic {self._topic}: "
                                 f"no answer within {wait:g} s") from None

    def _query_end(self, wait: float) -> int:
        try:
            _, end = self._ends.get_watermark_offsets(self._partition, timeout=wait, cached=False)
        except KafkaException as exc:
            raise LogUnavailable(f"cannot read the end of the schema topic {self._topic}: "
                                 f"{exc.args[0].str()}") from None
        except RuntimeError as exc:  # closed under us: the node is shutting down
            raise LogUnavailable(f"the Kafka log is closed: {exc}") from None
        return end

    def close(self) -> None:
        """Stop reading and release the clients. Blocks until a read in progress returns
        (at most a poll slice) and pending writes are delivered or time out."""
        with self._read_lock:
            if self._closed:
                return
            self._closed = True
            self._end_queries.shutdown(wait=False, cancel_futures=True)
            self._consumer.close()
            self._ends.close()
        self._stopped.set()
        self._poller.join(timeout=2 * _POLL_SLICE)
        self._producer.flush(self._timeout)


_GONE = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.TOPIC_AUTHORIZATION_FAILED,
                   KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC})


class _Signal:
    """Set once, by a delivery callback; waited for by the writer: `threading.Event`'s
    `is_set`, `set` and `wait`, on a lock held until set. An Event is a Python-level
    Condition, ~5 us to make and set; this is two lock operations in C. `set` must be
    called once only (the lock is released then): a callback is called once per record,
    and a batch's last settle once. One thread only may wait (the appending thread, or
    the one landing the batch): `wait` takes the lock back for a moment, and another
    thread's `is_set` would then read False."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held = threading.Lock()
        self._held.acquire()

    def set(self) -> None:
        self._held.release()

    def is_set(self) -> bool:
        return not self._held.locked()

    def wait(self, timeout: float) -> bool:
        if self._held.acquire(timeout=timeout):
            self._held.release()  # set for good: a later wait returns at once
            return True
        return False


class _Delivered(Exception):
    """Ends the flush of a thread waiting for a delivery that a callback just made."""


def _client(kind: type, config: dict[str, Any]) -> Any:
    """Create a client; a property librdkafka does not know is a configuration error."""
    try:
        return kind(config)
    except (KafkaException, ValueError, TypeError) as exc:
        detail = exc.args[0].str() if exc.args and isinstance(exc.args[0], KafkaError) else str(exc)
        raise LogMisconfigured(f"invalid Kafka client settings (kafkastore.*): {detail}") from None
