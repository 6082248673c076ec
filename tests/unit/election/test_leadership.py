"""StaticElector, and the callback machinery (`Leadership`) every elector shares.

No network: ``Leadership`` is driven directly with ``won()``/``lost()`` as a backend
would, from any thread.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from election import Elector, LeaderIdentity, StaticElector, static
from election.leadership import Leadership
from tests.unit.polling import wait_until

ME = LeaderIdentity("http", "127.0.0.1", 8081, "me")
OTHER = LeaderIdentity("http", "127.0.0.1", 8082, "other")


class Calls:
    """Records callbacks; ``gate`` (if set) blocks on_elected until released."""

    def __init__(self, is_leader: Callable[[], bool] | None = None) -> None:
        self.log: list[str] = []
        self.threads: set[str] = set()
        self.leader_inside_elected: list[bool] = []
        self.gate: threading.Event | None = None
        self.entered = threading.Event()
        self.fail_elected = False
        self._is_leader = is_leader

    def on_elected(self) -> None:
        gate = self.gate  # read before announcing entry: tests swap it afterwards
        self.threads.add(threading.current_thread().name)
        if self._is_leader is not None:
            self.leader_inside_elected.append(self._is_leader())
        self.entered.set()
        if gate is not None:
            gate.wait(5)
        self.log.append("elected")
        if self.fail_elected:
            raise RuntimeError("cannot take office")

    def on_demoted(self) -> None:
        self.threads.add(threading.current_thread().name)
        self.log.append("demoted")


@pytest.fixture
def leadership() -> Iterator[Leadership]:
    made = Leadership("unit")
    yield made
    made.close()


# --------------------------------------------------------------------------- Leadership


def test_is_leader_turns_true_only_after_on_elected_returned(leadership: Leadership) -> None:
    calls = Calls(is_leader=leadership.is_leader)
    calls.gate = threading.Event()
    leadership.start(calls.on_elected, calls.on_demoted)

    assert leadership.won() is True, "won() starts a term"
    calls.entered.wait(5)
    # A node must not accept writes while on_elected (fencing, catch-up) is running.
    assert not leadership.is_leader(), "is_leader() must stay false during on_elected"
    calls.gate.set()
    wait_until(leadership.is_leader, "is_leader() is true after on_elected returned")
    assert calls.leader_inside_elected == [False]


def test_lost_is_immediate_and_on_demoted_follows(leadership: Leadership) -> None:
    calls = Calls()
    leadership.start(calls.on_elected, calls.on_demoted)
    leadership.won()
    wait_until(leadership.is_leader, "leading")

    assert leadership.lost() is True, "lost() ends the running term"
    # A deposed leader must stop writing before its callback has even been scheduled.
    assert not leadership.is_leader(), "is_leader() must be false as soon as lost() returns"
    wait_until(lambda: calls.log == ["elected", "demoted"], "on_demoted ran")


def test_won_and_lost_are_idempotent_within_a_term(leadership: Leadership) -> None:
    calls = Calls()
    leadership.start(calls.on_elected, calls.on_demoted)
    assert leadership.won() is True, "the first won() starts a term"
    assert leadership.won() is False, "a second won() in the same term must not start another"
    wait_until(leadership.is_leader, "leading")
    assert leadership.lost() is True, "the first lost() ends it"
    assert leadership.lost() is False, "a second lost() must not queue a second on_demoted"
    leadership.close()
    assert calls.log == ["elected", "demoted"], "exactly one callback of each per term"


def test_loss_during_on_elected_runs_on_demoted_right_after(leadership: Leadership) -> None:
    calls = Calls()
    calls.gate = threading.Event()
    leadership.start(calls.on_elected, calls.on_demoted)
    leadership.won()
    calls.entered.wait(5)
    leadership.lost()  # e.g. the session was lost while catching up
    calls.gate.set()

    wait_until(lambda: calls.log == ["elected", "demoted"], "on_demoted followed on_elected")
    assert not leadership.is_leader(), "a term lost during on_elected must never report leadership"


def test_a_term_that_ended_before_its_callback_ran_is_skipped_entirely(leadership: Leadership) -> None:
    calls = Calls()
    blocker = threading.Event()
    # Occupy the callback thread so that the next terms queue up behind it.
    calls.gate = blocker
    leadership.start(calls.on_elected, calls.on_demoted)
    leadership.won()
    calls.entered.wait(5)
    leadership.lost()
    calls.gate = None
    leadership.won()  # term 2 starts ...
    leadership.lost()  # ... and ends before its on_elected could run
    leadership.won()  # term 3 is the one that counts
    blocker.set()

    wait_until(leadership.is_leader, "term 3 leads")
    # Term 2 produced neither callback: callbacks still alternate, and no on_elected
    # runs for a term that is already over.
    assert calls.log == ["elected", "demoted", "elected"]


def test_callbacks_run_on_one_dedicated_thread(leadership: Leadership) -> None:
    calls = Calls()
    leadership.start(calls.on_elected, calls.on_demoted)
    for _ in range(3):
        leadership.won()
        leadership.lost()
    leadership.won()
    wait_until(leadership.is_leader, "leading")
    leadership.close()
    assert len(calls.threads) == 1 and next(iter(calls.threads)).startswith("election-callbacks"), (
        f"callbacks must all run on the one callback thread: {calls.threads}"
    )
    assert calls.log[0] == "elected" and calls.log[-1] == "demoted", f"terms open and close: {calls.log}"
    assert all(a != b for a, b in zip(calls.log, calls.log[1:])), f"callbacks must alternate: {calls.log}"


def test_failing_on_elected_is_paired_with_on_demoted_and_resigns() -> None:
    resigned = threading.Event()
    leadership = Leadership("unit", resign=resigned.set)
    calls = Calls()
    calls.fail_elected = True
    leadership.start(calls.on_elected, calls.on_demoted)
    try:
        leadership.won()
        # A node that cannot take office must hand the seat back, not sit on it.
        assert resigned.wait(5), "the backend must be told to resign"
        wait_until(lambda: calls.log == ["elected", "demoted"], "on_demoted paired with the failed on_elected")
        assert not leadership.is_leader(), "a node whose on_elected failed must not lead"
        assert not leadership.held, "the term must be over after resigning"
    finally:
        leadership.close()
    assert calls.log == ["elected", "demoted"], "no second on_demoted when the term then ends"


def test_close_runs_on_demoted_and_then_nothing_more(leadership: Leadership) -> None:
    calls = Calls()
    leadership.start(calls.on_elected, calls.on_demoted)
    leadership.won()
    wait_until(leadership.is_leader, "leading")
    leadership.close()
    # close() blocks until on_demoted ran: the caller may hand over right after.
    assert calls.log == ["elected", "demoted"]
    assert leadership.won() is False, "a closed Leadership never starts a term"
    assert calls.log == ["elected", "demoted"]
    with pytest.raises(RuntimeError):
        leadership.start(calls.on_elected, calls.on_demoted)


def test_on_demoted_errors_do_not_stop_the_callback_thread(leadership: Leadership) -> None:
    log: list[str] = []

    def bad_demoted() -> None:
        log.append("demoted")
        raise RuntimeError("boom")

    leadership.start(lambda: log.append("elected"), bad_demoted)
    leadership.won()
    wait_until(leadership.is_leader, "the first term leads")
    leadership.lost()
    leadership.won()
    wait_until(leadership.is_leader, "the second term leads despite the failed on_demoted")
    assert log == ["elected", "demoted", "elected"]


# --------------------------------------------------------------------------- StaticElector


def test_static_single_node_leads_from_start_to_close() -> None:
    elector = StaticElector(ME)
    assert isinstance(elector, Elector), "StaticElector implements the Elector protocol"
    assert elector.leader() is None and not elector.is_leader(), "nothing is known before start()"
    calls = Calls(is_leader=elector.is_leader)
    elector.start(calls.on_elected, calls.on_demoted)
    try:
        wait_until(elector.is_leader, "the single node leads")
        assert elector.leader() == ME, "the single node names itself"
        assert elector.epoch() == 0, "static leadership has one term, epoch 0"
        assert calls.leader_inside_elected == [False], "on_elected runs before the node reports leadership"
    finally:
        elector.close()
    assert calls.log == ["elected", "demoted"], "close() demotes the single node"
    assert not elector.is_leader() and elector.leader() is None, "a closed elector neither leads nor knows a leader"


def test_static_node_claims_again_when_taking_office_failed() -> None:
    """A first catch-up slower than the store timeout must not leave a single node
    without a writer forever: the claim is made again until taking office succeeds."""
    elector = StaticElector(ME)
    attempts: list[float] = []

    def on_elected() -> None:
        attempts.append(time.monotonic())
        if len(attempts) < 3:
            raise TimeoutError("the log could not be read to its end in time")

    elector.start(on_elected, lambda: None)
    try:
        wait_until(elector.is_leader, "the node to lead after two failed attempts", timeout=10)
        assert len(attempts) == 3, attempts
        assert attempts[2] - attempts[1] >= 0.9, "claims are spaced, not retried in a busy loop"
    finally:
        elector.close()


def test_a_closed_static_node_claims_no_more(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(static, "_RETRY_SECONDS", 0.1)  # the claim after a failure, 1 s apart
    elector = StaticElector(ME)
    attempts: list[int] = []

    def on_elected() -> None:
        attempts.append(1)
        raise TimeoutError("never")

    elector.start(on_elected, lambda: None)
    wait_until(lambda: attempts, "the first attempt")
    elector.close()
    # Not a wait for something: nothing may happen, so the test outlasts five retry
    # intervals, within which a claim left behind by close() would have come.
    time.sleep(0.5)
    assert attempts == [1], "no claim after close()"


def test_static_follower_names_the_configured_leader_and_is_never_called_back() -> None:
    elector = StaticElector(ME, leader=OTHER)
    calls = Calls()
    elector.start(calls.on_elected, calls.on_demoted)
    try:
        assert elector.leader() == OTHER, "a follower forwards to the configured leader"
        assert not elector.is_leader(), "a follower never leads"
    finally:
        elector.close()
    assert calls.log == [], "a node that is not the configured leader is never elected"


def test_static_configured_as_itself_leads() -> None:
    elector = StaticElector(ME, leader=ME)
    elector.start(lambda: None, lambda: None)
    try:
        wait_until(elector.is_leader, "the node configured as leader leads")
    finally:
        elector.close()


def test_static_ineligible_node_never_leads() -> None:
    with pytest.raises(ValueError):
        StaticElector(ME, eligible=False)  # nobody to follow
    elector = StaticElector(ME, leader=ME, eligible=False)
    calls = Calls()
    elector.start(calls.on_elected, calls.on_demoted)
    try:
        assert elector.leader() == ME, "it still names the configured leader"
        assert not elector.is_leader(), "leader.eligibility=false must win over the configured leader"
    finally:
        elector.close()
    assert calls.log == []


def test_static_close_is_idempotent_and_start_after_close_fails() -> None:
    elector = StaticElector(ME)
    elector.start(lambda: None, lambda: None)
    elector.close()
    elector.close()
    with pytest.raises(RuntimeError):
        elector.start(lambda: None, lambda: None)
