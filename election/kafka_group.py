"""`KafkaGroupElector`: the leader is whichever member of a consumer group owns partition 0.

    elector = KafkaGroupElector(me, "kafka:9092", group_id="schema-registry")
    elector.start(on_elected=take_office, on_demoted=leave_office)
    elector.leader()   # from the group coordinator's view of the group, never blocks

How it works. Every eligible node runs a consumer in one group (``group_id``),
subscribed to a dedicated coordination topic with one partition (created if absent;
nothing is ever written to it). The coordinator lets exactly one member own partition
0 at a time, and that member leads. The rule is deterministic because there is only
one thing to own; which member gets it is the assignor's choice. We use the
``cooperative-sticky`` assignor: a rebalance moves partition 0 only when its owner
leaves, so nodes joining or leaving do not depose a healthy leader (with an eager
assignor every rebalance would revoke partition 0 and re-elect, re-running the whole
fencing and catch-up). Ineligible nodes do not join the group at all: they could
be handed partition 0, and confluent-kafka offers no custom assignor to prevent it.

Finding the leader. Each member's ``client.id`` is its identity JSON, and every node,
member or not, asks the coordinator which member owns partition 0
(``describe_consumer_groups``): every ``refresh_interval`` seconds, at once after each
of its own rebalance callbacks, and every 50 ms while the group is rebalancing.
The alternative, the leader publishing its identity to a compacted topic, was
rejected: a leader paused between winning and publishing could publish after its
successor and be believed indefinitely, and a crashed leader's last announcement stays
until the next one. The coordinator's answer cannot be forged by a zombie and is never
staler than the group itself. The cost is one small request per node per interval.
- During a rebalance the coordinator shows no assignments; the previous owner is kept
  while it is still a member (cooperative rebalancing does not take partition 0 from
  a member that stays).
- An answer older than the session timeout (the coordinator is unreachable) is not
  used: ``leader()`` is None.
- This node's own leadership comes from its own assignment, never from the poll:
  it names itself exactly while it holds a term.

Losing leadership. The poll loop runs on its own thread and only polls; rebalance
callbacks just record the change (callbacks run on the callback thread), so
``on_elected`` can take as long as it needs without missing a heartbeat or the poll
interval. The leader is demoted when partition 0 is revoked (graceful rebalance) or
lost (librdkafka noticed that its session lapsed: coordinator unreachable, or the
process was paused). ``is_leader()`` is also false when the poll loop has not run for a
session timeout, so a process resumed after a pause does not report itself leader
before librdkafka has had a chance to tell it that it was evicted.

Timeouts. The group uses the classic protocol, where the client chooses its session
timeout; the broker accepts [``group.min.session.timeout.ms``,
``group.max.session.timeout.ms``], by default [6 s, 30 min]. A crashed leader is
replaced after about ``session_timeout_ms`` plus a heartbeat interval; a graceful
``close()`` sends LeaveGroup and the others rejoin at their next heartbeat. (KIP-848's
``consumer`` protocol sets the session timeout on the broker, default 45 s, too slow here.)

Trade-off against the ZooKeeper elector: ZooKeeper re-elects only when the leader's
session ends and no one else notices anything. Here every membership change (a node
starting, stopping or crashing) makes the whole group rebalance, every member
rejoins, and followers may briefly see no leader. Thanks to the sticky assignor the
leader itself is not disturbed, but a crashed node (leader or not) stalls the
rebalance until its session times out. The price of ZooKeeper is another system to run.
"""
from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, ConsumerGroupState, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConsumerGroupDescription, NewTopic

from election.elector import ElectionCallback
from election.identity import LeaderIdentity
from election.leadership import Leadership

log = logging.getLogger(__name__)

DEFAULT_TOPIC = "_schema_registry_election"
_LEADER_PARTITION = 0
_POLL_SECONDS = 0.1
_REBALANCING = (ConsumerGroupState.PREPARING_REBALANCING, ConsumerGroupState.COMPLETING_REBALANCING)
_REBALANCE_REFRESH_SECONDS = 0.05


@dataclass(frozen=True, slots=True)
class _Observation:
    member_id: str | None  # the member owning partition 0, None if nobody does
    leader: LeaderIdentity | None
    at: float  # monotonic time the question was asked


class KafkaGroupElector:
    """An `Elector` on a Kafka consumer group; the owner of partition 0 leads.

    ``config`` holds extra librdkafka properties for every client this elector makes
    (security settings, say). ``session_timeout_ms`` and ``heartbeat_interval_ms`` are
    the group's. The session timeout bounds how long a crashed member (the leader
    included) stalls the group; 10 s is Confluent's default, 6 s the least a broker
    with default settings accepts. The heartbeat interval bounds how long the others
    take to notice a graceful leave, hence the hand-off time: 500 ms (not Kafka's
    3 s) keeps a hand-off under a second for the price of two tiny requests a second
    per node. ``max_poll_interval_ms`` defaults to the session timeout, the least
    librdkafka accepts (our loop polls every 0.1 s, so it only fires if the process is
    starved). ``refresh_interval`` is how often (seconds) the group is described to
    find the leader. ``resign_backoff`` is how long this node leaves the group after
    its ``on_elected`` raised.

    Threads: the poll loop (eligible nodes only), the group observer, and the callback
    thread. librdkafka's own threads heartbeat.
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
        refresh_interval: float = 0.5,
        resign_backoff: float = 1.0,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        self._identity = identity
        self._eligible = eligible
        self._group_id = group_id
        self._topic = topic
        self._session_timeout = session_timeout_ms / 1000
        self._refresh_interval = refresh_interval
        self._resign_backoff = resign_backoff
        common = {**dict(config or {}), "bootstrap.servers": bootstrap_servers, "logger": log}
        self._admin_config = {**common, "client.id": f"{identity.to_json()}-observer"}
        self._consumer_config = {
            **common,
            "group.id": group_id,
            # How the other nodes learn this member's identity (see the module docstring).
            "client.id": identity.to_json(),
            "group.protocol": "classic",
            "partition.assignment.strategy": "cooperative-sticky",
            "session.timeout.ms": session_timeout_ms,
            "heartbeat.interval.ms": heartbeat_interval_ms,
            "max.poll.interval.ms": max_poll_interval_ms or session_timeout_ms,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "latest",
        }
        self._leadership = Leadership(f"kafka-group {identity}", resign=self._resign)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._refresh = threading.Event()
        self._threads: list[threading.Thread] = []
        self._admin: AdminClient | None = None
        # Guarded by _lock:
        self._closing = False
        self._holding = False  # our consumer owns partition 0 and we are not resigning
        self._member_id: str | None = None
        self._last_poll = time.monotonic()
        self._observed: _Observation | None = None
        self._resigning = False
        self._rejoin_at = 0.0

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
        """Start observing (and, if eligible, joining) the group; never blocks.

        Raises RuntimeError if called twice or after ``close()``.
        """
        self._leadership.start(on_elected, on_demoted)
        self._admin = AdminClient(self._admin_config)
        name = f"{self._identity}"
        targets = [(self._observe_loop, f"election-kafka-observer {name}")]
        if self._eligible:
            targets.append((self._member_loop, f"election-kafka-member {name}"))
        for target, thread_name in targets:
            thread = threading.Thread(target=target, name=thread_name, daemon=True)
            self._threads.append(thread)
            thread.start()

    def leader(self) -> LeaderIdentity | None:
        """This node while it holds partition 0; else the owner the coordinator last
        reported, if that report is younger than the session timeout."""
        now = time.monotonic()
        with self._lock:
            if self._holding and self._polling(now):
                return self._identity
            seen = self._observed
            if seen is None or now - seen.at > self._session_timeout:
                return None
            if seen.member_id is not None and seen.member_id == self._member_id:
                return None  # that was us, and we no longer hold it
            return seen.leader

    def is_leader(self) -> bool:
        """As in `Elector`, and also false while the poll loop is a session timeout late."""
        with self._lock:
            polling = self._polling(time.monotonic())
        return polling and self._leadership.is_leader()

    def epoch(self) -> int | None:
        """None: the group's generation is not exposed by confluent-kafka."""
        return None

    def close(self) -> None:
        """Demote (waiting for ``on_demoted``), leave the group, stop the threads.

        Leaving sends LeaveGroup, so the others rebalance at their next heartbeat
        instead of after the session timeout. Blocks until a running callback returns,
        then for as long as librdkafka takes to leave (normally milliseconds, at most
        about its socket timeout if the broker is unreachable). Idempotent.
        """
        with self._lock:
            if self._closing:
                return
            self._closing = True
            self._holding = False
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
        return now - self._last_poll < self._session_timeout

    # -- the poll loop (eligible nodes)

    def _member_loop(self) -> None:
        consumer: Consumer | None = None
        subscribed = False
        try:
            while not self._stop.is_set():
                if consumer is None:
                    if not self._ensure_topic():
                        self._stop.wait(1.0)
                        continue
                    consumer = Consumer(self._consumer_config)
                with self._lock:
                    resigning, rejoin_at = self._resigning, self._rejoin_at
                if resigning and subscribed:
                    consumer.unsubscribe()  # leaves the group; partition 0 moves on
                    subscribed = False
                elif not subscribed and time.monotonic() >= rejoin_at:
                    with self._lock:
                        self._resigning = False
                    consumer.subscribe(
                        [self._topic],
                        on_assign=self._on_assign,
                        on_revoke=self._on_revoke,
                        on_lost=self._on_lost,
                    )
                    subscribed = True
                message = consumer.poll(_POLL_SECONDS)
                with self._lock:
                    self._last_poll = time.monotonic()
                if message is not None and message.error() is not None:
                    log.warning("elector %s: consumer error: %s", self._identity, message.error())
        except Exception:
            log.exception("elector %s: poll loop failed; leaving the election", self._identity)
            with self._lock:
                self._holding = False
            self._leadership.lost()
        finally:
            if consumer is not None:
                consumer.close()  # LeaveGroup: the hand-off starts now

    def _ensure_topic(self) -> bool:
        """Create the one-partition coordination topic unless it exists. Blocks up to ~5 s."""
        assert self._admin is not None
        futures = self._admin.create_topics(
            [NewTopic(self._topic, num_partitions=1, replication_factor=-1)], request_timeout=5.0
        )
        try:
            futures[self._topic].result(timeout=10.0)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                log.warning("elector %s: cannot create topic %s: %s", self._identity, self._topic, e)
                return False
        except concurrent.futures.TimeoutError:
            log.warning("elector %s: creating topic %s timed out", self._identity, self._topic)
            return False
        return True

    # Rebalance callbacks: run inside consumer.poll() on the poll loop's thread.

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        won = self._holds_leader_partition(partitions)
        with self._lock:
            self._member_id = consumer.memberid()
            if won and not self._resigning and not self._closing:
                self._holding = True
                self._leadership.won()
        self._refresh.set()

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._release(partitions, "revoked")

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._release(partitions, "lost (session lapsed)")

    def _release(self, partitions: list[TopicPartition], how: str) -> None:
        if self._holds_leader_partition(partitions):
            with self._lock:
                self._holding = False
                if self._leadership.lost():
                    log.warning("elector %s: partition %d %s; demoted", self._identity, _LEADER_PARTITION, how)
        self._refresh.set()

    def _holds_leader_partition(self, partitions: list[TopicPartition]) -> bool:
        return any(tp.topic == self._topic and tp.partition == _LEADER_PARTITION for tp in partitions)

    def _resign(self) -> None:
        # Called on the callback thread after on_elected raised.
        with self._lock:
            self._resigning = True
            self._holding = False
            self._rejoin_at = time.monotonic() + self._resign_backoff

    # -- the observer (every node)

    def _observe_loop(self) -> None:
        assert self._admin is not None
        while not self._stop.is_set():
            asked_at = time.monotonic()
            interval = self._refresh_interval
            try:
                description = self._describe()
            except (KafkaException, concurrent.futures.TimeoutError) as e:
                log.debug("elector %s: cannot describe group %s: %s", self._identity, self._group_id, e)
            else:
                if description is not None:
                    self._record(description, asked_at)
                    if description.state in _REBALANCING:
                        # The outcome is due within round trips: look again soon.
                        interval = min(interval, _REBALANCE_REFRESH_SECONDS)
            self._admin.poll(0)  # serve librdkafka's log callbacks
            self._refresh.wait(interval)
            self._refresh.clear()

    def _describe(self) -> ConsumerGroupDescription | None:
        """Ask the coordinator about the group; None if closing. Blocks up to ~5 s."""
        assert self._admin is not None
        future = self._admin.describe_consumer_groups([self._group_id], request_timeout=5.0)[self._group_id]
        while not future.done():
            if self._stop.wait(0.05):
                return None
        return future.result()

    def _record(self, description: ConsumerGroupDescription, asked_at: float) -> None:
        members = {m.member_id: m for m in description.members}
        owner = next(
            (m for m in description.members if self._holds_leader_partition(m.assignment.topic_partitions)),
            None,
        )
        with self._lock:
            previous = self._observed
        if owner is None and previous is not None and previous.member_id in members:
            # Mid-rebalance the coordinator reports no assignments; a cooperative
            # rebalance leaves partition 0 with its owner while that owner stays.
            observation = _Observation(previous.member_id, previous.leader, asked_at)
        elif owner is None:
            observation = _Observation(None, None, asked_at)
        else:
            try:
                leader: LeaderIdentity | None = LeaderIdentity.from_json(owner.client_id)
            except ValueError as e:
                log.warning("elector %s: group %s member %s has no identity: %s",
                            self._identity, self._group_id, owner.member_id, e)
                leader = None
            observation = _Observation(owner.member_id, leader, asked_at)
        with self._lock:
            if self._observed is None or self._observed.at <= asked_at:
                self._observed = observation
