"""Timed writes through one node, and the checks that follow a partition or an
infrastructure fault.

    with WriteProbe(node) as probe:                    # a new schema every 0.2 s, on a thread
        ...                                            # cut, restart, heal ...
    probe.answers                                      # when each was sent, how long it took, what came back

`forwarded_to=<the node's advertised URL>` marks each write as a follower would when
forwarding it to that node as the leader (`X-Forward`), so the node must append it itself
or refuse it (50004), never forward it on. That is how a test asks a deposed or
partitioned leader whether it still acknowledges writes.
"""
from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import requests

from tests.cluster.harness import NodeProbes, wait_for
from tests.cluster.test_failover import HEADERS, Acked, Writers, audit_topic, check_every_node

if TYPE_CHECKING:
    from tests.cluster.containers import ContainerCluster, ContainerNode

# What a write may answer while there is no reachable leader or store: Confluent's
# 50001 (store error), 50002 (store timeout), 50003 (leader unreachable), 50004 (no leader).
LEADERLESS_CODES = frozenset({50001, 50002, 50003, 50004})


@dataclass(frozen=True)
class Answer:
    sent: float  # time.monotonic() when the request left
    elapsed: float  # seconds until the answer, or until the client gave up
    status: int | None  # None: no HTTP answer (timeout, connection reset)
    error_code: int | None
    subject: str
    schema_id: int | None
    detail: str

    @property
    def ok(self) -> bool:
        return self.status == 200

    def __str__(self) -> str:
        return f"{self.status}/{self.error_code} after {self.elapsed:.2f}s: {self.detail[:160]}"


class WriteProbe:
    """Registers a new schema through `node` every `interval` seconds until closed.

    Each request may take up to `timeout` seconds, far longer than any bound a test
    asserts, so that a hang shows up as a long answer rather than as a client timeout.
    """

    def __init__(self, node: NodeProbes, *, forwarded_to: str | None = None, interval: float = 0.2,
                 timeout: float = 30) -> None:
        self.node = node
        self._headers = dict(HEADERS)
        if forwarded_to is not None:
            self._headers["X-Forward"] = forwarded_to
        self._interval = interval
        self._timeout = timeout
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._answers: list[Answer] = []
        self._pending: float | None = None  # when the request in flight was sent
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"probe {node.url}")

    def __enter__(self) -> WriteProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(self._timeout + 5)

    @property
    def answers(self) -> list[Answer]:
        with self._lock:
            return list(self._answers)

    def acked(self) -> list[Acked]:
        return [Acked(a.subject, a.schema_id, self.node.url) for a in self.answers
                if a.ok and a.schema_id is not None]

    def acked_since(self, moment: float) -> list[Answer]:
        return [a for a in self.answers if a.ok and a.sent >= moment]

    def observed_since(self, moment: float, bound: float) -> bool:
        """An answer came to a write sent at or after `moment`, or the write in flight
        has been waiting longer than `bound` (a hang, which the checks then report)."""
        with self._lock:
            pending = self._pending
            answered = any(a.sent >= moment for a in self._answers)
        return answered or (pending is not None and time.monotonic() - pending > bound)

    def _run(self) -> None:
        session = requests.Session()
        while not self._stop.is_set():
            name = f"P{uuid.uuid4().hex}"
            subject = f"probe-{name}"
            body = json.dumps({"schema": json.dumps(
                {"type": "record", "name": name, "fields": [{"name": "a", "type": "int"}]})})
            sent = time.monotonic()
            with self._lock:
                self._pending = sent
            status = code = schema_id = None
            try:
                response = session.post(f"{self.node.url}/subjects/{subject}/versions", data=body,
                                        headers=self._headers, timeout=self._timeout)
                status, detail = response.status_code, response.text
                try:
                    payload = response.json()
                    schema_id = payload.get("id") if status == 200 else None
                    code = payload.get("error_code") if status != 200 else None
                except ValueError:
                    pass
            except requests.RequestException as exc:
                detail = repr(exc)
                session = requests.Session()  # do not reuse a connection in an unknown state
            with self._lock:
                self._pending = None
                self._answers.append(Answer(sent, time.monotonic() - sent, status, code, subject, schema_id, detail))
            self._stop.wait(self._interval)


def slow_or_unexpected(answers: list[Answer], bound: float, codes: frozenset[int] = LEADERLESS_CODES) -> list[Answer]:
    """The answers that took longer than `bound` seconds, or that are neither a success
    nor a Confluent error with one of `codes`."""
    return [a for a in answers
            if a.elapsed > bound or not (a.ok or (a.status is not None and a.error_code in codes))]


# How long a write may take to answer during a fault: the store timeout (which also bounds
# forwarding) plus this margin for scheduling on two busy cores.
ANSWER_MARGIN = 3.0


def answer_bound(cluster: ContainerCluster) -> float:
    return cluster.store_timeout_ms / 1000 + ANSWER_MARGIN


def hold_until_observed(all_probes: list[WriteProbe], moment: float, bound: float, what: str) -> None:
    """Keep a fault in place until every probe has seen it: an answer to a write sent at
    or after `moment`, or a write stuck for longer than `bound`."""
    wait_for(lambda: all(p.observed_since(moment, bound) for p in all_probes),
             max(0.0, moment - time.monotonic()) + 2 * bound + 10, what)


def assert_answers_bounded(all_probes: list[WriteProbe], bound: float, fault_at: float) -> None:
    """Every probe's every answer came within `bound` seconds, as a success or 50001-50004."""
    for probe in all_probes:
        bad = slow_or_unexpected(probe.answers, bound)
        assert not bad, (f"writes through {probe.node} must answer within {bound:.1f}s with a success or "
                         f"50001-50004, got: "
                         + "; ".join(f"(sent {a.sent - fault_at:+.1f}s from the fault) {a}" for a in bad[:5]))


@contextmanager
def probes(*specs: tuple[ContainerNode, str | None]) -> Iterator[list[WriteProbe]]:
    """One WriteProbe per (node, forwarded_to), all closed on exit."""
    with ExitStack() as stack:
        yield [stack.enter_context(WriteProbe(node, forwarded_to=forwarded_to)) for node, forwarded_to in specs]


def final_checks(cluster: ContainerCluster, writers: Writers, all_probes: list[WriteProbe]) -> None:
    """The checks of every failover scenario (check_every_node, the topic audit), counting
    the probes' acknowledged writes with the writers'."""
    # A probe's acknowledged registration is as binding as a writer's.
    for probe in all_probes:
        writers.acked.extend(probe.acked())
    check_every_node(cluster, writers)
    applied, _, violations = audit_topic(cluster.infra.kafka_bootstrap_host, cluster.topic)
    assert not violations, f"records took effect without their writer holding the fence: {violations[:5]}"
    assert applied > len({a.subject for a in writers.acked}), "the audit must have read the registrations"

