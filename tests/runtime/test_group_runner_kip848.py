"""The group runner driving a consumer-protocol member (KIP-848) against a scripted coordinator:
a heartbeat answer that changes nothing waits for the runner's next wakeup, as a classic
Heartbeat's does (tests/runtime/test_group_runner.py), so an idle member costs the runner one
wakeup per heartbeat, not two; an answer that brings something new is read at once; and a
subscription change made while an answer waits goes out at once, not at the next interval.
"""

from __future__ import annotations

import queue
import threading
import time
import uuid
from concurrent.futures import Future
from typing import Any

from groupkit.group import Assigned, Coordinator, GroupConfig
from groupkit.group.kip848 import ConsumerGroupMachine, MemberState, SubscriptionHolder
from groupkit.group.kip848.heartbeat import QuietAnswer
from groupkit.group.outputs import Send
from groupkit.protocol.messages.consumer_group import (
    ConsumerGroupHeartbeatAssignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatTopicPartitions,
)
from groupkit.protocol.messages.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from groupkit.runtime.group_runner import GroupRunner
from groupkit.runtime.standing import Standing
from tests.runtime.test_group_runner import sent_once

GROUP = "g"


class Coordinator848:
    """Answers FindCoordinator at once and each ConsumerGroupHeartbeat ``delay`` seconds after
    it was sent, from one thread of its own (as a connection's reader thread does): epoch 1,
    no partitions, the interval ``interval_ms``. Records each heartbeat with its send time."""

    def __init__(self, delay: float, interval_ms: int) -> None:
        self.delay, self.interval_ms = delay, interval_ms
        self.sent: list[tuple[float, ConsumerGroupHeartbeatRequest]] = []
        self.queue: queue.SimpleQueue[tuple[float, Future[Any], Any]] = queue.SimpleQueue()
        threading.Thread(target=self._answer, daemon=True).start()

    def _answer(self) -> None:
        while True:
            at, future, request = self.queue.get()
            time.sleep(max(0.0, at - time.monotonic()))
            first = request.member_epoch == 0
            future.set_result(ConsumerGroupHeartbeatResponse(
                error_code=0, member_id=request.member_id,
                member_epoch=request.member_epoch if request.member_epoch < 0 else 1,
                heartbeat_interval_ms=self.interval_ms,
                assignment=ConsumerGroupHeartbeatAssignment(topic_partitions=[])
                if first else None))

    def send(self, request: Any, version: int | None = None, *,
             timeout_ms: int | None = None, callback: Any = None,
             standing: Standing | None = None) -> Future[Any]:
        sent_once(standing)
        future: Future[Any] = Future()
        if callback is not None:
            future.add_done_callback(callback)
        if isinstance(request, FindCoordinatorRequest):
            future.set_result(FindCoordinatorResponse(error_code=0, node_id=1, host="h",
                                                      port=1))
            return future
        assert isinstance(request, ConsumerGroupHeartbeatRequest)
        self.sent.append((time.monotonic(), request))
        self.queue.put((time.monotonic() + self.delay, future, request))
        return future


class CountingMachine(ConsumerGroupMachine):
    """Counts the runner's steps: it polls the machine once per step."""

    __slots__ = ()
    steps = 0

    def poll(self, now: float) -> list[Any]:
        type(self).steps += 1
        return super().poll(now)


def stable_runner(delay: float, interval_ms: int) -> tuple[GroupRunner, Coordinator848,
                                                           SubscriptionHolder]:
    """A runner whose member has joined (epoch 1, nothing assigned) and acknowledged it."""
    holder = SubscriptionHolder()
    holder.subscribe(["t"])
    machine = CountingMachine(GroupConfig(group_id=GROUP), holder)
    coordinator = Coordinator848(delay, interval_ms)
    woken = threading.Event()

    def connect(found: Coordinator, purpose: str) -> Any:
        return coordinator

    runner = GroupRunner(machine, lambda: coordinator, connect, wakeup=woken.set)  # type: ignore[arg-type]
    runner.start()
    deadline = time.monotonic() + 10
    while not any(isinstance(e, Assigned) for e in runner.events()):
        assert woken.wait(max(0.0, deadline - time.monotonic())), "never assigned"
        woken.clear()
    runner.assignment_applied()
    while runner.state is not MemberState.STABLE:
        assert time.monotonic() < deadline, runner.state
        time.sleep(0.01)
    return runner, coordinator, holder


def test_an_idle_members_runner_steps_once_per_heartbeat() -> None:
    runner, coordinator, _ = stable_runner(0.005, 100)
    try:
        time.sleep(0.3)  # past the acknowledgement and its answer
        sent, steps = len(coordinator.sent), CountingMachine.steps
        time.sleep(3.0)
        beats = len(coordinator.sent) - sent
        stepped = CountingMachine.steps - steps
    finally:
        runner.leave(5)
    assert beats >= 15, beats  # every 100 ms, on a loaded machine
    # Woken for each answer as well as for each heartbeat due, the runner would step twice
    # per heartbeat; reading each answer when the next heartbeat is due, once.
    assert stepped < 1.4 * beats, (stepped, beats)


def test_a_subscription_change_goes_out_at_once_while_an_answer_waits() -> None:
    # Heartbeats every 3 s, each answered 300 ms after it went out; the subscription changes
    # 100 ms after a heartbeat, before its answer. The answer must then not wait for the next
    # interval: the new subscription goes out as soon as the answer is in.
    runner, coordinator, holder = stable_runner(0.3, 3_000)
    try:
        count = len(coordinator.sent)
        deadline = time.monotonic() + 10
        while len(coordinator.sent) == count:  # the first heartbeat sent in STABLE
            assert time.monotonic() < deadline, "no heartbeat in STABLE"
            time.sleep(0.005)
        time.sleep(0.1)
        holder.subscribe(["t", "u"])
        changed = time.monotonic()
        runner.request_rejoin("the subscription changed")
        while not any(r.subscribed_topic_names == ["t", "u"] for _, r in coordinator.sent):
            assert time.monotonic() < changed + 5, "the new subscription never went out"
            time.sleep(0.005)
        went = next(at for at, r in coordinator.sent if r.subscribed_topic_names == ["t", "u"])
    finally:
        runner.leave(5)
    assert went - changed < 1.5, went - changed  # the answer came at +0.2 s; the interval, +2.9


def test_only_a_stable_members_answers_may_wait_and_only_when_they_change_nothing() -> None:
    holder = SubscriptionHolder()
    holder.subscribe(["t"])
    machine = ConsumerGroupMachine(GroupConfig(group_id=GROUP), holder,
                                   make_member_id=lambda: "me")
    machine.start(0.0)
    find = next(o for o in machine.poll(0.0) if isinstance(o, Send))
    machine.on_response(find.token, FindCoordinatorResponse(node_id=1, host="h", port=1), 0.0)
    [join] = [o for o in machine.poll(0.0) if isinstance(o, Send)]
    assert not join.answer_may_wait and machine.heartbeat_due is None  # JOINING
    machine.on_response(join.token, ConsumerGroupHeartbeatResponse(
        member_id="me", member_epoch=1, heartbeat_interval_ms=1_000,
        assignment=ConsumerGroupHeartbeatAssignment(topic_partitions=[])), 0.0)
    machine.poll(0.0)
    machine.assignment_applied(0.0)
    [ack] = [o for o in machine.poll(0.0) if isinstance(o, Send)]
    assert not ack.answer_may_wait  # sent ACKNOWLEDGING
    assert machine.state is MemberState.STABLE
    machine.on_response(ack.token, ConsumerGroupHeartbeatResponse(
        member_id="me", member_epoch=1, heartbeat_interval_ms=1_000), 0.0)
    assert machine.heartbeat_due == 1.0
    [beat] = [o for o in machine.poll(1.0) if isinstance(o, Send)]
    assert beat.answer_may_wait and beat.quiet_if == QuietAnswer(1, "me", 1.0)
    quiet = beat.quiet_if
    plain = ConsumerGroupHeartbeatResponse(member_id="me", member_epoch=1,
                                           heartbeat_interval_ms=1_000)
    assert quiet(plain)
    assigned = ConsumerGroupHeartbeatAssignment(topic_partitions=[
        ConsumerGroupHeartbeatTopicPartitions(topic_id=uuid.UUID(int=1), partitions=[0])])
    for changed in ({"assignment": assigned}, {"member_epoch": 2},
                    {"heartbeat_interval_ms": 2_000}, {"member_id": "other"}):
        assert not quiet(ConsumerGroupHeartbeatResponse(
            **{"member_id": "me", "member_epoch": 1, "heartbeat_interval_ms": 1_000,
               **changed})), changed
