"""The group runner thread with a scripted coordinator (no broker): routing, events, hooks.

The broker tests in tests/test_consumer.py run the same runner against Tansu; these pin down
what is hard to provoke there: which connection each request takes, that a raising hook does
not stop the thread, and the commit-error round trip to the machine.
"""

from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import Future
from typing import Any

import pytest

from assignors import ClusterView, TopicPartition
from groupkit.errors import CommitFailedError
from groupkit.group import Assigned, Coordinator, GroupConfig, GroupMachine, Left, MemberState
from groupkit.group.consumer_protocol import ConsumerProtocol
from groupkit.hooks import HeartbeatAnswered, Joined, Synced
from groupkit.protocol.messages.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    FindCoordinatorResponseCoordinator,
)
from groupkit.protocol.messages.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupkit.runtime.group_runner import GroupRunner
from groupkit.runtime.standing import Standing
from tests.support import wakeups

GROUP = "g"
ILLEGAL_GENERATION = 22


def sent_once(standing: Standing | None) -> None:
    """A scripted connection lets no request stand: it sends it once (as a connection does
    when it cannot), so each answer completes its Future."""
    if standing is not None:
        standing.end()


def with_callback(future: Future[Any], callback: Any) -> Future[Any]:
    """``future`` with ``callback`` added, as ``BrokerConnection.send(callback=)`` adds it."""
    if callback is not None:
        future.add_done_callback(callback)
    return future


class ScriptedBroker:
    """Answers every request at once, like a one-member coordinator; records what went where."""

    def __init__(self, name: str, log: list[tuple[str, str]]) -> None:
        self.name, self.log = name, log

    def send(self, request: Any, version: int | None = None, *,
             timeout_ms: int | None = None, callback: Any = None,
             standing: Standing | None = None) -> Future[Any]:
        sent_once(standing)
        self.log.append((self.name, type(request).__name__))
        future: Future[Any] = Future()
        future.set_result(self.answer(request))
        return with_callback(future, callback)

    def answer(self, request: Any) -> Any:
        if isinstance(request, FindCoordinatorRequest):
            return FindCoordinatorResponse(error_code=0, node_id=1, host="h", port=1, coordinators=[
                FindCoordinatorResponseCoordinator(key=GROUP, node_id=1, host="h", port=1,
                                                   error_code=0)])
        if isinstance(request, JoinGroupRequest):
            return JoinGroupResponse(
                error_code=0, generation_id=3, protocol_type="consumer", protocol_name="range",
                leader="m1", member_id="m1", members=[JoinGroupResponseMember(
                    member_id="m1", metadata=request.protocols[0].metadata)])
        if isinstance(request, SyncGroupRequest):
            return SyncGroupResponse(error_code=0, protocol_type="consumer",
                                     protocol_name="range",
                                     assignment=request.assignments[0].assignment)
        if isinstance(request, HeartbeatRequest):
            return HeartbeatResponse(error_code=0)
        assert isinstance(request, LeaveGroupRequest)
        return LeaveGroupResponse(error_code=0, members=[])


def make_runner(hooks: list[Any], **settings: int
                ) -> tuple[GroupRunner, list[tuple[str, str]], threading.Event]:
    log: list[tuple[str, str]] = []
    protocol = ConsumerProtocol(["range"], cluster_view=lambda t: ClusterView({"t": 2}))
    protocol.subscribe(["t"])
    config = GroupConfig(group_id=GROUP, **{"session_timeout_ms": 6000,
                                            "heartbeat_interval_ms": 100, **settings})
    machine = GroupMachine(config, protocol)
    woken = threading.Event()
    any_broker = ScriptedBroker("any", log)

    def connect(found: Coordinator, purpose: str) -> Any:
        assert found == Coordinator(1, "h", 1)
        return ScriptedBroker(purpose, log)

    runner = GroupRunner(machine, lambda: any_broker, connect, hooks, wakeup=woken.set)
    return runner, log, woken


def wait_for_event(runner: GroupRunner, woken: threading.Event, kind: type) -> Any:
    for _ in range(50):
        assert woken.wait(5), f"no {kind.__name__} event"
        woken.clear()
        for event in runner.events():
            if isinstance(event, kind):
                return event
    raise AssertionError(f"no {kind.__name__} event")


def test_runner_joins_heartbeats_and_routes_requests_despite_a_raising_hook() -> None:
    seen: list[Any] = []
    heartbeats = threading.Event()

    def hook(event: Any) -> None:
        seen.append(event)
        if isinstance(event, HeartbeatAnswered) and sum(
                isinstance(e, HeartbeatAnswered) for e in seen) >= 3:
            heartbeats.set()
        raise RuntimeError("broken hook")

    runner, log, woken = make_runner([hook])
    runner.start()
    try:
        assigned = wait_for_event(runner, woken, Assigned)
        assert assigned.units == {TopicPartition("t", 0), TopicPartition("t", 1)}
        assert heartbeats.wait(5), "heartbeats stopped"
        assert runner.state is MemberState.STABLE
        assert runner.commit_fence().generation_id == 3
    finally:
        assert runner.leave(5)
    # FindCoordinator goes to any broker; heartbeats to their own coordinator connection (so
    # they never queue behind a held SyncGroup), the rest to the main coordinator connection.
    assert log[0] == ("any", "FindCoordinatorRequest")
    assert {where for where, api in log[1:] if api == "HeartbeatRequest"} == {"heartbeat"}
    assert {where for where, api in log[1:] if api != "HeartbeatRequest"} == {"coordinator"}
    assert [api for _, api in log].count("LeaveGroupRequest") == 1
    joined = next(e for e in seen if isinstance(e, Joined))
    assert joined.leader and joined.generation_id == 3
    assert any(isinstance(e, Synced) and e.partitions == 2 for e in seen)
    assert runner.finished


def test_a_commit_refused_for_an_old_generation_raises_and_rejoins() -> None:
    runner, log, woken = make_runner([])
    runner.start()
    try:
        wait_for_event(runner, woken, Assigned)
        fence = runner.commit_fence()
        decision = runner.commit_error(fence, ILLEGAL_GENERATION, 1, timeout=5)
        assert isinstance(decision.error, CommitFailedError)
        # The machine reset its generation and rejoined: a new Assigned arrives.
        wait_for_event(runner, woken, Assigned)
        assert [api for _, api in log].count("JoinGroupRequest") == 2
    finally:
        runner.leave(5)
    with pytest.raises(CommitFailedError):
        runner.commit_fence()


def test_joining_is_called_as_each_join_group_goes_out_even_if_it_raises() -> None:
    runner, log, woken = make_runner([])
    calls: list[int] = []

    def joining() -> None:
        calls.append(len(log))
        raise RuntimeError("broken callback")

    runner.joining = joining
    runner.start()
    try:
        wait_for_event(runner, woken, Assigned)
    finally:
        assert runner.leave(5)
    # Each call saw exactly the requests sent before its JoinGroup.
    assert calls == [i for i, (_, api) in enumerate(log) if api == "JoinGroupRequest"]
    assert calls


# Heartbeats far apart, so the runner sleeps unless something wakes it.
QUIET = {"session_timeout_ms": 30_000, "heartbeat_interval_ms": 10_000}


@pytest.mark.skipif(not wakeups.available, reason="counts context switches in /proc (Linux)")
def test_polls_of_a_joined_member_keep_it_in_the_group_without_waking_the_runner() -> None:
    runner, _, woken = make_runner([], max_poll_interval_ms=1000, **QUIET)
    runner.start()
    try:
        wait_for_event(runner, woken, Assigned)
        thread = wakeups.thread_named(f"groupkit-group-{GROUP}")
        before = wakeups.switches(thread)
        # 2.5 poll intervals of polls 50 ms apart (pacing, not waiting for an outcome).
        for _ in range(50):
            runner.application_polled()
            time.sleep(0.05)
        switched = wakeups.switches(thread) - before
        # Every noted poll reached the machine before its interval could expire.
        assert not [e for e in runner.events() if isinstance(e, Left)]
        assert runner.state is MemberState.STABLE
        # Woken per poll, the runner switched at least 50 times; now it wakes only when the
        # interval of the last poll it knows of ends (about every second here).
        assert switched < 15, switched
    finally:
        assert runner.leave(5)


def test_a_poll_after_the_poll_interval_expired_rejoins_at_once() -> None:
    runner, log, woken = make_runner([], max_poll_interval_ms=300, **QUIET)
    runner.start()
    try:
        wait_for_event(runner, woken, Assigned)
        wait_for_event(runner, woken, Left)
        assert runner.state is MemberState.UNJOINED
        joins = [api for _, api in log].count("JoinGroupRequest")
        # Nothing else is due for 10 s: only the poll itself can wake the runner to rejoin.
        runner.application_polled()
        wait_for_event(runner, woken, Assigned)
        assert [api for _, api in log].count("JoinGroupRequest") == joins + 1
    finally:
        runner.leave(5)


class SlowHeartbeats(ScriptedBroker):
    """Answers heartbeats ``delay`` seconds after they were sent, from one thread of its own
    (as a connection's reader thread does); the rest at once."""

    def __init__(self, name: str, log: list[tuple[str, str]], delay: float) -> None:
        super().__init__(name, log)
        self.delay = delay
        self.queue: queue.SimpleQueue[tuple[float, Future[Any]]] = queue.SimpleQueue()
        threading.Thread(target=self._answer, daemon=True).start()

    def _answer(self) -> None:
        while True:
            at, future = self.queue.get()
            time.sleep(max(0.0, at - time.monotonic()))
            future.set_result(HeartbeatResponse(error_code=0))

    def send(self, request: Any, version: int | None = None, *,
             timeout_ms: int | None = None, callback: Any = None,
             standing: Standing | None = None) -> Future[Any]:
        sent_once(standing)
        if not isinstance(request, HeartbeatRequest):
            return super().send(request, version, timeout_ms=timeout_ms, callback=callback)
        self.log.append((self.name, type(request).__name__))
        future: Future[Any] = Future()
        with_callback(future, callback)
        self.queue.put((time.monotonic() + self.delay, future))
        return future


def run_with_slow_heartbeats(delay: float, count: int, **settings: int) -> int:
    """Join, then wait for ``count`` answered heartbeats; the runner's context switches."""
    answered: list[Any] = []
    enough = threading.Event()

    def hook(event: Any) -> None:
        if isinstance(event, HeartbeatAnswered):
            answered.append(event)
            if len(answered) == count:
                enough.set()

    runner, log, woken = make_runner([hook], **settings)
    runner.connect = lambda found, purpose: SlowHeartbeats(purpose, log, delay)
    runner.start()
    try:
        wait_for_event(runner, woken, Assigned)
        thread = wakeups.thread_named(f"groupkit-group-{GROUP}")
        before = wakeups.switches(thread) if wakeups.available else 0
        answered.clear()
        assert enough.wait(10), f"{len(answered)} of {count} heartbeats answered"
        switched = wakeups.switches(thread) - before if wakeups.available else 0
        assert runner.state is MemberState.STABLE
        return switched
    finally:
        runner.leave(5)


@pytest.mark.skipif(not wakeups.available, reason="counts context switches in /proc (Linux)")
def test_a_successful_heartbeat_answer_waits_for_the_next_heartbeat_not_a_wakeup() -> None:
    switched = run_with_slow_heartbeats(0.005, 40, heartbeat_interval_ms=50)
    # Woken for each answer as well as for each heartbeat due, the runner switches at least
    # twice per heartbeat (about 90 times here); reading each answer when the next heartbeat
    # is due, once (measured 1.2-1.35 times per heartbeat, the rest waiting for the GIL).
    assert switched < 1.7 * 40, switched


def test_a_heartbeat_answered_after_the_next_was_due_lets_it_go_at_once() -> None:
    # Each answer comes 300 ms after its heartbeat, past the next one's due time (100 ms):
    # it must wake the runner, which would otherwise sleep until the session deadline (30 s).
    run_with_slow_heartbeats(0.3, 5, session_timeout_ms=30_000, heartbeat_interval_ms=100)


class _CountedFuture(Future[Any]):
    """A Future that counts how often a thread other than the test's looks at its outcome."""

    looks = 0

    def result(self, timeout: float | None = None) -> Any:
        self._count()
        return super().result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._count()
        return super().exception(timeout)

    def _count(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            self.looks += 1


def test_each_answer_is_read_from_its_future_with_one_look() -> None:
    answered: list[_CountedFuture] = []

    class Counting(ScriptedBroker):
        def send(self, request: Any, version: int | None = None, *,
                 timeout_ms: int | None = None, callback: Any = None,
                 standing: Standing | None = None) -> Future[Any]:
            sent_once(standing)
            future = _CountedFuture()
            future.set_result(self.answer(request))
            answered.append(future)
            return with_callback(future, callback)

    runner, _, woken = make_runner([])
    runner.any_broker = lambda: Counting("any", [])
    runner.connect = lambda found, purpose: Counting(purpose, [])
    runner.start()
    try:
        wait_for_event(runner, woken, Assigned)
        deadline = time.monotonic() + 5
        while sum(isinstance(f.result(), HeartbeatResponse) for f in list(answered)) < 3:
            assert time.monotonic() < deadline, "heartbeats stopped"
            time.sleep(0.01)
    finally:
        assert runner.leave(5)
    # The runner's callback looks once; taking the error and then the result would lock the
    # future twice per answer.
    assert answered and all(f.looks == 1 for f in answered), [f.looks for f in answered]
