"""`KafkaGroupElector`: the leader is whichever member of a consumer group owns partition 0.

    elector = KafkaGroupElector(me, "kafka:9092", group_id="schema-registry")
    elector.start(on_elected=take_office, on_demoted=leave_office)
    elector.leader()   # from the group's committed announcement, never blocks

Who leads. Every eligible node runs a consumer in one group (``group_id``) subscribed
to a dedicated coordination topic with one partition (created if absent; nothing is
ever written to it). The coordinator lets exactly one member own partition 0 at a
time, and that member may lead. We use the ``cooperative-sticky`` assignor: a
rebalance moves partition 0 only when its owner leaves, so nodes joining or leaving do
not depose a healthy leader (with an eager assignor every rebalance would revoke
partition 0 and re-elect, re-running the whole fencing and catch-up). Ineligible
nodes do not join the group: they could be handed partition 0, and confluent-kafka
offers no custom assignor to prevent it.

How everyone learns who leads. Owning partition 0 is not yet leading. The owner first
commits an offset for partition 0 as the group's member: the offset is the new epoch
(the previous committed offset + 1) and the commit's metadata is its identity JSON plus
a ``beat`` counter. Only then does it start its term (``on_elected``). While leading it
re-commits with the next ``beat`` every ``beat_interval`` seconds. Every node, member
or not, reads the committed offset every ``refresh_interval`` seconds with a
consumer that never joins the group (OffsetFetch), and trusts what it reads only while
the beat keeps changing: an announcement unchanged for a session timeout is stale and
``leader()`` says None. A leader that closes gracefully commits an empty announcement
before leaving, so the others stop naming it at once.

Why commits and not something else:
- The coordinator accepts a commit only from a current member of the current group
  generation. A deposed leader that wakes up from a pause, or is cut off, has its
  commits refused (UNKNOWN_MEMBER_ID once evicted): it can never announce itself over
  its successor, and a beat refused so demotes it at once. A beat refused only because
  the group is rebalancing (ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS: a node joined or
  left) is sent again once the group settles; if the rebalance moved partition 0 away,
  its revocation demotes the leader. A leader that
  published its identity to a topic would not be fenced like that: paused between
  winning and publishing, it could publish after its successor and be believed.
- ``AdminClient.describe_consumer_groups`` (find the member holding partition 0) was
  the first design, and was dropped: in librdkafka up to at least 2.16,
  coordinator-targeted admin requests abort the whole process
  (``rd_kafka_enq_once_del_source_return: Assertion `eonce->refcnt > 0'``,
  confluentinc/librdkafka#4605) when the coordinator connection drops, which happens on
  every broker restart. OffsetFetch and OffsetCommit go through the consumer's
  well-trodden group code instead.
- The beat costs one tiny write to ``__consumer_offsets`` (compacted) per interval.

Losing leadership. The poll loop runs on its own thread and only polls, claims and
beats; callbacks run on the callback thread, so ``on_elected`` can take as long as it
needs without missing a heartbeat or the poll interval. The leader is demoted when
partition 0 is revoked (graceful rebalance) or lost (librdkafka noticed that its session
lapsed: coordinator unreachable, or the process was paused), or when the coordinator
refuses a beat. ``is_leader()`` is also false when the poll loop has not run for a
session timeout, so a process resumed after a pause does not report itself leader
before librdkafka has had a chance to tell it that it was evicted.

Timeouts. The group uses the classic protocol, where the client chooses its session
timeout; the broker accepts [``group.min.session.timeout.ms``,
``group.max.session.timeout.ms``], by default [6 s, 30 min]. A crashed leader is
replaced after about ``session_timeout_ms``; a graceful ``close()`` sends LeaveGroup and
the others rejoin at their next heartbeat. (KIP-848's ``consumer`` protocol sets the
session timeout on the broker, 45 s by default: too slow here.)

Trade-off against the ZooKeeper elector: ZooKeeper re-elects only when the leader's
session ends and no one else notices anything. Here every membership change (a node
starting, stopping or crashing) makes the whole group rebalance and every member
rejoin. Thanks to the sticky assignor the leader itself is not disturbed, but a
crashed node (leader or not) holds up the rebalance until its session times out. The
price of ZooKeeper is another system to run.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_END, Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from election.elector import ElectionCallback
from election.identity import LeaderIdentity
from election.leadership import Leadership

log = logging.getLogger(__name__)

DEFAULT_TOPIC = "_schema_registry_election"
_LEADER_PARTITION = 0
_POLL_SECONDS = 0.1
_CLAIM_RETRY_SECONDS = 0.5
# The coordinator refused a commit because this member is not (any more) in the
# current generation: whatever it claimed is void.
# The coordinator no longer knows this member: it was evicted (a session that lapsed
# while paused or cut off) or replaced. A beat refused so means deposed.
_FENCED = frozenset({
    KafkaError.UNKNOWN_MEMBER_ID,
    KafkaError.FENCED_INSTANCE_ID,
})
# The member is known but the group's generation moved on: a rebalance (a node joining
# or leaving) is under way or just ended. The leader keeps partition 0 through it (the
# sticky assignor; losing it calls on_revoke/on_lost), so its beat is simply sent again
# once the group has settled.
_REBALANCING = frozenset({
    KafkaError.ILLEGAL_GENERATION,
    KafkaError.REBALANCE_IN_PROGRESS,
})
_BEAT_RETRY_SECONDS = 0.2


@dataclass(frozen=True, slots=True)
class _Announcement:
    """What the committed offset of partition 0 says."""

    epoch: int  # the committed offset; 0 if nothing was ever committed
    leader: LeaderIdentity | None  # None: vacant (or unreadable)
    beat: int


@dataclass(frozen=True, slots=True)
class _Observation:
    announcement: _Announcement
    changed_at: float  # monotonic time this node first saw this exact announcement


class KafkaGroupElector:
    """An `Elector` on a Kafka consumer group; the owner of partition 0 leads.

    ``config`` holds extra librdkafka properties for every client this elector makes
    (security settings, say). ``session_timeout_ms`` and ``heartbeat_interval_ms`` are
    the group's. The session timeout bounds how long a crashed member (the leader
    included) stalls the group, and how long an announcement stays believed without a
    beat; 10 s is Confluent's default, 6 s the least a broker with default settings
    accepts. The heartbeat interval bounds how long the others take to notice a
    graceful leave, hence the hand-off time: with 500 ms (not Kafka's 3 s) a hand-off
    takes 0.2 to 1 s (librdkafka sends at most one JoinGroup a second, so a leader
    leaving right after a rebalance is replaced after about a second). ``max_poll_interval_ms`` defaults to the session timeout, the least
    librdkafka accepts (our loop polls every 0.1 s, so it only fires if the process is
    starved). ``refresh_interval`` is how often (seconds) the announcement is read;
    ``beat_interval`` how often the leader renews it. ``resign_backoff`` is how long
    this node leaves the group after its ``on_elected`` raised.

    Threads: the poll loop (eligible nodes only), the announcement reader, and the
    callback thread. librdkafka's own threads heartbeat.
    """

    def __init__(
        self,
        identity: LeaderIdentity,
        bootstrap_servers: str,
        *,
        eligible: bool = True,
        group_id: str = "schema-registry",
        topic: str = DEFAULT_TOPIC,
        session_timeout_ms: int = 10_000,
        heartbeat_interval_ms: int = 500,
        max_poll_interval_ms: int | None = None,
        refresh_interval: float = 0.25,
        beat_interval: float = 1.0,
        resign_backoff: float = 1.0,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        self._identity = identity
        self._eligible = eligible
        self._group_id = group_id
        self._topic = topic
        self._lease = session_timeout_ms / 1000
        self._refresh_interval = refresh_interval
        self._beat_interval = beat_interval
        self._resign_backoff = resign_backoff
        self._partition = TopicPartition(topic, _LEADER_PARTITION)
        name = identity.url if identity.node_id is None else f"{identity.url} {identity.node_id}"
        common = {**dict(config or {}), "bootstrap.servers": bootstrap_servers, "logger": log}
        self._admin_config = {**common, "client.id": f"election-admin {name}"}
        self._reader_config = {
            **common,
            "client.id": f"election-reader {name}",
            "group.id": group_id,  # only to read the group's offsets: it never subscribes
            "enable.auto.commit": False,
        }
        self._member_config = {
            **common,
            "client.id": f"election-member {name}",
            "group.id": group_id,
            "group.protocol": "classic",
            "partition.assignment.strategy": "cooperative-sticky",
            "session.timeout.ms": session_timeout_ms,
            "heartbeat.interval.ms": heartbeat_interval_ms,
            "max.poll.interval.ms": max_poll_interval_ms or session_timeout_ms,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "latest",
            "on_commit": self._on_commit,
        }
        self._leadership = Leadership(f"kafka-group {identity}", resign=self._resign)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._refresh = threading.Event()
        self._threads: list[threading.Thread] = []
        # Guarded by _lock:
        self._closing = False
        self._owns_partition = False  # librdkafka assigned us partition 0
        self._claimed = False  # ... and our claim commit was accepted: a term is running
        self._epoch: int | None = None  # our term's epoch while claimed
        self._beat = 0
        self._last_poll = time.monotonic()
        self._observed: _Observation | None = None
        self._resigning = False
        self._rejoin_at = 0.0
        # Touched only by the poll loop and the commit callback it runs:
        self._commit_in_flight: str | None = None  # "claim", "beat" or "vacate"
        self._commit_epoch = 0
        self._commit_sent_at = 0.0
        self._next_claim_at = 0.0
        self._next_beat_at = 0.0

    @property
    def identity(self) -> LeaderIdentity:
        return self._identity

    @property
    def eligible(self) -> bool:
        return self._eligible

    @property
    def group_id(self) -> str:
        return self._group_id

    @property
    def topic(self) -> str:
        return self._topic

    def start(self, on_elected: ElectionCallback, on_demoted: ElectionCallback) -> None:
        """Start reading the announcement (and, if eligible, join the group); never blocks.

        Raises RuntimeError if called twice or after ``close()``.
        """
        self._leadership.start(on_elected, on_demoted)
        targets = [(self._read_loop, f"election-kafka-reader {self._identity}")]
        if self._eligible:
            targets.append((self._member_loop, f"election-kafka-member {self._identity}"))
        for target, thread_name in targets:
            thread = threading.Thread(target=target, name=thread_name, daemon=True)
            self._threads.append(thread)
            thread.start()

    def leader(self) -> LeaderIdentity | None:
        """This node while its term runs; else the announced leader, if its beat changed
        within the last session timeout."""
        now = time.monotonic()
        with self._lock:
            if self._claimed and self._polling(now):
                return self._identity
            seen = self._observed
            if seen is None or now - seen.changed_at > self._lease:
                return None
            if seen.announcement.leader == self._identity:
                return None  # our own announcement, and our term is over
            return seen.announcement.leader

    def is_leader(self) -> bool:
        """As in `Elector`, and also false while the poll loop is a session timeout late."""
        with self._lock:
            polling = self._polling(time.monotonic())
        return polling and self._leadership.is_leader()

    def epoch(self) -> int | None:
        """The current leader's epoch: the offset it committed when claiming partition 0.

        Grows by one with every term; None while ``leader()`` is None.
        """
        now = time.monotonic()
        with self._lock:
            if self._claimed and self._polling(now):
                return self._epoch
            seen = self._observed
            if seen is None or now - seen.changed_at > self._lease or seen.announcement.leader is None:
                return None
            if seen.announcement.leader == self._identity:
                return None
            return seen.announcement.epoch

    def close(self) -> None:
        """Demote (waiting for ``on_demoted``), vacate the announcement, leave the group,
        stop the threads.

        Leaving sends LeaveGroup, so the others rebalance at their next heartbeat
        instead of after the session timeout. Blocks until a running callback returns,
        then for as long as librdkafka takes to leave: normally milliseconds, a few
        seconds if a rebalance is in progress or the broker is unreachable. Idempotent.
        """
        with self._lock:
            if self._closing:
                return
            self._closing = True
            self._claimed = False
        self._leadership.close()
        self._stop.set()
        self._refresh.set()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join()
        with self._lock:
            self._observed = None

    def _polling(self, now: float) -> bool:
        # Called with _lock held.
        return now - self._last_poll < self._lease

    # -- the poll loop (eligible nodes)

    def _member_loop(self) -> None:
        consumer: Consumer | None = None
        subscribed = False
        settled_at = 0.0
        try:
            while not self._stop.is_set():
                if consumer is None:
                    if not self._ensure_topic():
                        self._stop.wait(1.0)
                        continue
                    consumer = Consumer(self._member_config)
                    subscribed = False
                    settled_at = time.monotonic() + self._lease
                with self._lock:
                    resigning, rejoin_at = self._resigning, self._rejoin_at
                if resigning and subscribed:
                    consumer.unsubscribe()  # leaves the group; partition 0 moves on
                    subscribed = False
                elif resigning and time.monotonic() >= rejoin_at:
                    with self._lock:
                        self._resigning = False
                elif not resigning and not subscribed:
                    consumer.subscribe(
                        [self._topic], on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
                    )
                    subscribed = True
                self._claim_or_beat(consumer)
                message = consumer.poll(_POLL_SECONDS)
                with self._lock:
                    self._last_poll = time.monotonic()
                if message is not None and message.error() is not None:
                    error = message.error()
                    if error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART and time.monotonic() > settled_at:
                        # After a broker restart (or if the topic was deleted) librdkafka
                        # may not look for the topic again for minutes: start afresh.
                        # Right after creating the topic this is only metadata lag.
                        log.warning("elector %s: %s; re-creating the consumer", self._identity, error)
                        self._close_consumer(consumer)
                        consumer = None
                        self._stop.wait(1.0)
                    else:
                        log.warning("elector %s: consumer error: %s", self._identity, error)
        except Exception:
            log.exception("elector %s: poll loop failed; leaving the election", self._identity)
        finally:
            if consumer is not None:
                self._close_consumer(consumer)

    def _close_consumer(self, consumer: Consumer) -> None:
        """Vacate our announcement if we still own partition 0, then leave the group."""
        with self._lock:
            owns, epoch = self._owns_partition, self._epoch
            self._claimed = self._owns_partition = False
        self._leadership.lost()
        if owns and epoch is not None:
            deadline = time.monotonic() + 1.0
            self._await_commit(consumer, deadline)  # a beat, say: the vacate must come last
            self._commit(consumer, "vacate", epoch, "")
            self._await_commit(consumer, deadline)
        consumer.close()  # LeaveGroup: the hand-off starts now

    def _await_commit(self, consumer: Consumer, deadline: float) -> None:
        """Poll until the commit in flight has its outcome, or until ``deadline``."""
        while self._commit_in_flight is not None and time.monotonic() < deadline:
            consumer.poll(0.05)

    def _ensure_topic(self) -> bool:
        """Create the one-partition coordination topic unless it exists. Blocks up to ~10 s."""
        admin = AdminClient(self._admin_config)
        futures = admin.create_topics(
            [NewTopic(self._topic, num_partitions=1, replication_factor=-1)], request_timeout=5.0
        )
        try:
            futures[self._topic].result(timeout=10.0)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                log.warning("elector %s: cannot create topic %s: %s", self._identity, self._topic, e)
                return False
        except TimeoutError:
            log.warning("elector %s: creating topic %s timed out", self._identity, self._topic)
            return False
        finally:
            admin.poll(0)  # serve queued log lines
        return True

    def _claim_or_beat(self, consumer: Consumer) -> None:
        """Commit a claim when we own partition 0 without a term, or a beat when due."""
        now = time.monotonic()
        if self._commit_in_flight is not None:
            if now - self._commit_sent_at < self._lease:
                return
            # librdkafka reports every commit's outcome; this is a safety net only.
            log.warning("elector %s: no outcome for the %s commit; sending again", self._identity, self._commit_in_flight)
            self._commit_in_flight = None
        with self._lock:
            owns, claimed, epoch = self._owns_partition, self._claimed, self._epoch
            may_claim = not (self._resigning or self._closing)
            beat = self._beat + 1
        if claimed and epoch is not None and now >= self._next_beat_at:
            self._next_beat_at = now + self._beat_interval
            self._commit(consumer, "beat", epoch, self._announce(beat))
        elif owns and not claimed and may_claim and now >= self._next_claim_at:
            self._next_claim_at = now + _CLAIM_RETRY_SECONDS
            try:
                [committed] = consumer.committed([self._partition], timeout=min(2.0, self._lease / 3))
            except KafkaException as e:
                log.info("elector %s: cannot read the epoch to claim leadership: %s", self._identity, e)
                return
            previous = committed.offset if committed.offset >= 0 else 0
            with self._lock:
                self._beat = 0
            self._commit(consumer, "claim", previous + 1, self._announce(0))

    def _announce(self, beat: int) -> str:
        return json.dumps({**json.loads(self._identity.to_json()), "beat": beat}, separators=(",", ":"))

    def _commit(self, consumer: Consumer, kind: str, epoch: int, metadata: str) -> None:
        self._commit_in_flight = kind
        self._commit_epoch = epoch
        self._commit_sent_at = time.monotonic()
        try:
            consumer.commit(
                offsets=[TopicPartition(self._topic, _LEADER_PARTITION, epoch, metadata)], asynchronous=True
            )
        except KafkaException as e:
            self._commit_in_flight = None
            log.info("elector %s: %s commit not sent: %s", self._identity, kind, e)

    # Callbacks from librdkafka: run inside consumer.poll() on the poll loop's thread.

    def _on_commit(self, error: KafkaError | None, partitions: list[TopicPartition]) -> None:
        kind, self._commit_in_flight = self._commit_in_flight, None
        errors = [error] if error is not None else [p.error for p in partitions if p.error is not None]
        if kind is None:
            return
        if errors:
            fenced = any(e.code() in _FENCED for e in errors)
            rebalancing = not fenced and any(e.code() in _REBALANCING for e in errors)
            log.log(logging.WARNING if fenced else logging.INFO,
                    "elector %s: %s commit refused: %s", self._identity, kind, errors[0])
            if fenced and kind == "beat":
                with self._lock:
                    self._claimed = False
                    if self._leadership.lost():
                        log.warning("elector %s: the coordinator refused our beat; demoted", self._identity)
            elif rebalancing and kind == "beat":
                self._next_beat_at = time.monotonic() + _BEAT_RETRY_SECONDS
            return
        with self._lock:
            if kind == "claim" and self._owns_partition and not (self._resigning or self._closing):
                self._claimed = True
                self._epoch = self._commit_epoch
                self._next_beat_at = time.monotonic() + self._beat_interval
                self._leadership.won()
            elif kind == "beat":
                self._beat += 1
        self._refresh.set()

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # Nothing is ever read from the topic, and the committed offset is an epoch, not
        # a position: start at the end and do not fetch at all.
        consumer.incremental_assign([TopicPartition(tp.topic, tp.partition, OFFSET_END) for tp in partitions])
        if partitions:
            consumer.pause(partitions)
        if self._holds_leader_partition(partitions):
            with self._lock:
                self._owns_partition = True
            self._next_claim_at = 0.0  # claim on the next turn of the loop

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._release(partitions, "revoked")

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._release(partitions, "lost (session lapsed)")

    def _release(self, partitions: list[TopicPartition], how: str) -> None:
        if self._holds_leader_partition(partitions):
            with self._lock:
                self._owns_partition = self._claimed = False
                if self._leadership.lost():
                    log.warning("elector %s: partition %d %s; demoted", self._identity, _LEADER_PARTITION, how)
            self._refresh.set()

    def _holds_leader_partition(self, partitions: list[TopicPartition]) -> bool:
        return any(tp.topic == self._topic and tp.partition == _LEADER_PARTITION for tp in partitions)

    def _resign(self) -> None:
        # Called on the callback thread after on_elected raised.
        with self._lock:
            self._resigning = True
            self._claimed = False
            self._rejoin_at = time.monotonic() + self._resign_backoff

    # -- the announcement reader (every node)

    def _read_loop(self) -> None:
        reader: Consumer | None = None
        try:
            while not self._stop.is_set():
                if reader is None:
                    reader = Consumer(self._reader_config)
                try:
                    [committed] = reader.committed([self._partition], timeout=min(5.0, self._lease / 2))
                except KafkaException as e:
                    log.debug("elector %s: cannot read the announcement: %s", self._identity, e)
                else:
                    if committed.error is None:
                        self._record(self._parse(committed))
                reader.poll(0)  # serve queued log lines
                self._refresh.wait(self._refresh_interval)
                self._refresh.clear()
        finally:
            if reader is not None:
                reader.close()

    def _parse(self, committed: TopicPartition) -> _Announcement:
        epoch = max(committed.offset, 0)
        if not committed.metadata:
            return _Announcement(epoch, None, 0)
        try:
            leader = LeaderIdentity.from_json(committed.metadata)
            beat = json.loads(committed.metadata).get("beat", 0)
        except ValueError as e:
            log.warning("elector %s: unreadable announcement in group %s: %s", self._identity, self._group_id, e)
            return _Announcement(epoch, None, 0)
        return _Announcement(epoch, leader, beat if isinstance(beat, int) else 0)

    def _record(self, announcement: _Announcement) -> None:
        now = time.monotonic()
        with self._lock:
            if self._observed is None or self._observed.announcement != announcement:
                self._observed = _Observation(announcement, now)
