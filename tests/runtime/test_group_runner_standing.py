"""A settled member's heartbeat standing on its connection (``runtime/standing_beat.py``),
against a fake coordinator on a real socket: the heartbeat connection sends the heartbeat
again every interval by itself while its answer stays the same, the runner thread sleeps until
the session deadline (telling the machine how far the heartbeats got), and every way the
standing ends hands control back as before: an answer that differs, no answer within the
session, the poll interval expiring, a leave, a stop, a commit's error, a rejoin asked for, a
consumer-protocol subscription change; with hooks, every round trip is still told."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest

from assignors import ClusterView
from groupkit.errors import ApiKey, ErrorCode
from groupkit.group import Assigned, GroupConfig, GroupMachine, MemberState, Revoked
from groupkit.group.consumer_protocol import ConsumerProtocol
from groupkit.group.kip848 import ConsumerGroupMachine, SubscriptionHolder
from groupkit.hooks import Event, HeartbeatAnswered, HeartbeatSent
from groupkit.protocol.headers import RequestHeader
from groupkit.protocol.messages.consumer_group import (
    ConsumerGroupHeartbeatAssignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupkit.protocol.messages.find_coordinator import (
    FindCoordinatorResponse,
    FindCoordinatorResponseCoordinator,
)
from groupkit.protocol.messages.group import (
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupkit.protocol.schema import Request
from groupkit.runtime.connection import BrokerConnection
from groupkit.runtime.group_runner import GroupRunner
from tests.support import wakeups
from tests.support.fake_broker import FakeBroker, reply
from tests.support.waits import wait_for

GROUP = "g"
INTERVAL_S = 0.1
#: Heartbeats every 100 ms; a session of 2 s, so several session deadlines pass in a test.
TIMING = {"heartbeat_interval_ms": 100, "session_timeout_ms": 2_000}


class FakeCoordinator:
    """A one-member classic coordinator on a loopback socket: each JoinGroup starts a new
    generation led by this member; each Heartbeat is answered with ``code`` (or not at all
    while ``silent``). Keeps every request's API and generation, in order."""

    def __init__(self) -> None:
        self.code = 0
        self.silent = False
        self.generation = 0
        self.log: list[tuple[int, int]] = []  # (api key, generation it carried or -1)
        self.lock = threading.Lock()
        self.broker = FakeBroker(self._answer)

    def _answer(self, sock: socket.socket, header: RequestHeader, request: Request) -> None:
        with self.lock:
            self.log.append((header.api_key, getattr(request, "generation_id", -1)))
        if header.api_key == ApiKey.FIND_COORDINATOR:
            port = self.broker.port
            reply(sock, header, FindCoordinatorResponse(coordinators=[
                FindCoordinatorResponseCoordinator(key=GROUP, node_id=1, host="127.0.0.1",
                                                   port=port, error_code=0)]))
        elif isinstance(request, JoinGroupRequest):
            with self.lock:
                self.generation += 1
            reply(sock, header, JoinGroupResponse(
                error_code=0, generation_id=self.generation, protocol_type="consumer",
                protocol_name="range", leader="m1", member_id="m1",
                members=[JoinGroupResponseMember(member_id="m1",
                                                 metadata=request.protocols[0].metadata)]))
        elif isinstance(request, SyncGroupRequest):
            self.code = 0  # a new generation is answered as accepted
            reply(sock, header, SyncGroupResponse(
                error_code=0, protocol_type="consumer", protocol_name="range",
                assignment=request.assignments[0].assignment))
        elif header.api_key == ApiKey.HEARTBEAT:
            if not self.silent:
                reply(sock, header, HeartbeatResponse(error_code=self.code))
        elif header.api_key == ApiKey.LEAVE_GROUP:
            reply(sock, header, LeaveGroupResponse(error_code=0, members=[]))

    def count(self, api: int, generation: int | None = None) -> int:
        with self.lock:
            return sum(1 for key, gen in self.log
                       if key == api and (generation is None or gen == generation))

    def after(self, api: int) -> list[tuple[int, int]]:
        """What came after the last request of ``api``."""
        with self.lock:
            last = max(i for i, (key, _) in enumerate(self.log) if key == api)
            return self.log[last + 1:]


class Member:
    """A GroupRunner of a classic member, on real connections to a FakeCoordinator."""

    def __init__(self, hooks: list[Any] | None = None, **settings: int) -> None:
        self.fake = FakeCoordinator()
        protocol = ConsumerProtocol(["range"], cluster_view=lambda t: ClusterView({"t": 1}))
        protocol.subscribe(["t"])
        self.machine = GroupMachine(GroupConfig(group_id=GROUP, **{**TIMING, **settings}),
                                    protocol)
        self.connections: list[BrokerConnection] = []
        self.woken = threading.Event()
        self.runner = GroupRunner(self.machine, self._connection,
                                  lambda found, purpose: self._connection(),
                                  hooks or [], wakeup=self.woken.set)

    def _connection(self) -> BrokerConnection:
        conn = BrokerConnection("127.0.0.1", self.fake.broker.port)
        self.connections.append(conn)
        return conn

    def join(self) -> None:
        """Start and wait until the heartbeat stands (the runner's record of it is live)."""
        self.runner.start()
        self.wait_standing()

    def serve(self) -> None:
        """The application's side: answer each Revoked and Assigned, as a consumer does."""
        self.woken.wait(0.05)
        self.woken.clear()
        for event in self.runner.events():
            if isinstance(event, Revoked):
                self.runner.revocation_done()
            elif isinstance(event, Assigned):
                self.runner.assignment_applied()

    def wait_standing(self) -> None:
        wait_for(lambda: self.runner._beat is not None and self.runner._beat.standing.live
                 and self.runner._beat.standing.sent_at > 0, 10, "the heartbeat to stand",
                 step=self.serve)

    def rejoined_from(self, generation: int) -> None:
        """The member rejoins from ``generation``, its new heartbeat stands, and no heartbeat
        of ``generation`` went after the JoinGroup (three intervals' pacing for one to)."""
        wait_for(lambda: self.fake.generation == generation + 1, 5, "the rejoin",
                 step=self.serve)
        self.wait_standing()
        pace(3)
        log = self.fake.log
        join = max(i for i, (key, _) in enumerate(log) if key == ApiKey.JOIN_GROUP)
        assert not [g for key, g in log[join:] if key == ApiKey.HEARTBEAT and g == generation]

    def beats(self, generation: int | None = None) -> int:
        return self.fake.count(ApiKey.HEARTBEAT, generation)

    def wait_beats(self, more: int) -> None:
        """Until ``more`` heartbeats came after those so far."""
        start = self.beats()
        wait_for(lambda: self.beats() >= start + more, 10, f"{more} more heartbeats")

    def close(self) -> None:
        self.runner.stop(5)
        for conn in self.connections:
            conn.close()
        self.fake.broker.close()


@pytest.fixture
def member() -> Any:
    made: list[Member] = []

    def make(hooks: list[Any] | None = None, **settings: int) -> Member:
        made.append(Member(hooks, **settings))
        return made[-1]

    yield make
    for m in made:
        m.close()


def pace(intervals: int) -> None:
    """Let ``intervals`` heartbeat intervals pass (pacing, not waiting for an outcome): time
    for heartbeats that should not go to show up."""
    time.sleep(intervals * INTERVAL_S)


@pytest.mark.skipif(not wakeups.available, reason="counts context switches in /proc (Linux)")
def test_a_standing_heartbeat_keeps_the_session_without_waking_the_runner(member: Any) -> None:
    m = member()
    m.join()
    thread = wakeups.thread_named(f"groupkit-group-{GROUP}")
    before = wakeups.switches(thread)
    # Over two and a half session timeouts: without the standing's progress told to the
    # machine (``fold``), its session would expire and the member look for its coordinator.
    finds = m.fake.count(ApiKey.FIND_COORDINATOR)
    m.wait_beats(50)
    switched = wakeups.switches(thread) - before
    assert m.runner.state is MemberState.STABLE
    assert m.fake.count(ApiKey.FIND_COORDINATOR) == finds
    # Woken for each heartbeat, the runner switches 50+ times; it wakes about once per
    # session deadline (2 s) now.
    assert switched < 15, switched
    assert m.runner._beat is not None and m.runner._beat.standing.live


def test_an_answer_that_differs_reaches_the_machine_at_once(member: Any) -> None:
    m = member()
    m.join()
    joins = m.fake.count(ApiKey.JOIN_GROUP)
    m.fake.code = ErrorCode.REBALANCE_IN_PROGRESS
    wait_for(lambda: m.fake.count(ApiKey.JOIN_GROUP) > joins, 5, "the rejoin", step=m.serve)
    m.wait_standing()  # the new generation's heartbeat stands again


def test_a_coordinator_that_stops_answering_is_lost_at_the_session_deadline(
        member: Any) -> None:
    m = member()
    m.join()
    beat = m.runner._beat
    assert beat is not None
    finds = m.fake.count(ApiKey.FIND_COORDINATOR)
    m.fake.silent = True
    wait_for(lambda: m.fake.count(ApiKey.FIND_COORDINATOR) > finds, 10,
             "the coordinator to be looked for again")
    # The heartbeat that stood on the lost coordinator's connection ends. (The runner's
    # ``_beat`` itself may already be a newer one: a heartbeat to the coordinator found again
    # is marked to stand before its connection has taken it.)
    assert not beat.standing.live


def test_the_poll_interval_expiring_leaves_and_ends_the_heartbeats(member: Any) -> None:
    m = member(max_poll_interval_ms=1_500)
    m.join()
    generation = m.fake.generation
    wait_for(lambda: m.fake.count(ApiKey.LEAVE_GROUP) == 1, 10, "the leave")
    pace(5)
    assert m.fake.after(ApiKey.LEAVE_GROUP) == []
    assert m.runner.state is MemberState.UNJOINED
    # A poll rejoins; the heartbeats of the new generation stand again.
    m.runner.application_polled()
    wait_for(lambda: m.fake.generation == generation + 1, 10, "the rejoin", step=m.serve)
    m.wait_standing()


def test_leaving_ends_the_heartbeats(member: Any) -> None:
    m = member()
    m.join()
    assert m.runner.leave(5)
    pace(5)
    assert m.fake.count(ApiKey.LEAVE_GROUP) == 1
    assert m.fake.after(ApiKey.LEAVE_GROUP) == []


def test_stopping_the_runner_ends_the_heartbeats(member: Any) -> None:
    m = member()
    m.join()
    m.runner.stop(5)
    beats = m.beats()
    pace(5)
    assert m.beats() <= beats + 1  # the one in flight as it stopped, at most


def test_a_commit_refused_for_the_generation_rejoins(member: Any) -> None:
    m = member()
    m.join()
    generation = m.fake.generation
    fence = m.runner.commit_fence()
    m.runner.commit_error(fence, ErrorCode.ILLEGAL_GENERATION, 1, timeout=5)
    m.rejoined_from(generation)


def test_a_rejoin_asked_for_ends_the_old_generations_heartbeats(member: Any) -> None:
    m = member()
    m.join()
    generation = m.fake.generation
    m.runner.request_rejoin("the subscription changed")
    m.rejoined_from(generation)


def test_a_hook_hears_of_every_standing_heartbeat(member: Any) -> None:
    told: list[Event] = []
    m = member(hooks=[told.append])
    m.join()
    sent = sum(1 for e in told if isinstance(e, HeartbeatSent))
    answered = sum(1 for e in told if isinstance(e, HeartbeatAnswered))
    beats = m.beats()
    m.wait_beats(10)
    wait_for(lambda: sum(1 for e in told if isinstance(e, HeartbeatSent)) >= sent + 10, 5,
             "ten heartbeats told as sent")
    now_sent = sum(1 for e in told if isinstance(e, HeartbeatSent)) - sent
    now_answered = sum(1 for e in told if isinstance(e, HeartbeatAnswered)) - answered
    # Each heartbeat sent is told once, and each answer once the next heartbeat went.
    assert abs(now_sent - (m.beats() - beats)) <= 1, (now_sent, m.beats() - beats)
    assert now_sent - 1 <= now_answered <= now_sent, (now_sent, now_answered)
    latencies = [e.latency_s for e in told if isinstance(e, HeartbeatAnswered)]
    assert all(0 <= x < 1 for x in latencies), latencies
    assert m.runner._beat is not None and m.runner._beat.standing.live


class Fake848:
    """A consumer-protocol coordinator: epoch 1, nothing assigned, interval 100 ms; keeps
    every ConsumerGroupHeartbeat."""

    def __init__(self) -> None:
        self.beats: list[ConsumerGroupHeartbeatRequest] = []
        self.broker = FakeBroker(self._answer)

    def _answer(self, sock: socket.socket, header: RequestHeader, request: Request) -> None:
        if header.api_key == ApiKey.FIND_COORDINATOR:
            port = self.broker.port
            reply(sock, header, FindCoordinatorResponse(coordinators=[
                FindCoordinatorResponseCoordinator(key=GROUP, node_id=1, host="127.0.0.1",
                                                   port=port, error_code=0)]))
            return
        assert isinstance(request, ConsumerGroupHeartbeatRequest)
        self.beats.append(request)
        first = request.member_epoch == 0
        reply(sock, header, ConsumerGroupHeartbeatResponse(
            error_code=0, member_id=request.member_id,
            member_epoch=request.member_epoch if request.member_epoch < 0 else 1,
            heartbeat_interval_ms=100,
            assignment=ConsumerGroupHeartbeatAssignment(topic_partitions=[]) if first
            else None))


def test_a_consumer_protocol_subscription_change_ends_the_standing_heartbeat() -> None:
    fake = Fake848()
    holder = SubscriptionHolder()
    holder.subscribe(["t"])
    machine = ConsumerGroupMachine(GroupConfig(group_id=GROUP), holder)
    conns: list[BrokerConnection] = []

    def connection(*_: Any) -> BrokerConnection:
        conns.append(BrokerConnection("127.0.0.1", fake.broker.port))
        return conns[-1]

    runner = GroupRunner(machine, connection, connection)
    try:
        runner.start()
        wait_for(lambda: any(isinstance(e, Assigned) for e in runner.events()), 10,
                 "the assignment")
        runner.assignment_applied()
        wait_for(lambda: runner._beat is not None and runner._beat.standing.live
                 and runner._beat.standing.sent_at > 0, 10, "the heartbeat to stand")
        standing = runner._beat.standing  # type: ignore[union-attr]
        count = len(fake.beats)
        wait_for(lambda: len(fake.beats) >= count + 5, 10, "five standing heartbeats")
        assert all(b.subscribed_topic_names is None for b in fake.beats[count:])
        holder.subscribe(["t", "u"])
        runner.request_rejoin("the subscription changed")
        wait_for(lambda: any(b.subscribed_topic_names == ["t", "u"] for b in fake.beats), 5,
                 "the new subscription to go out")
        assert not standing.live
        wait_for(lambda: runner._beat is not None and runner._beat.standing.live
                 and runner._beat.standing is not standing, 10, "the heartbeat to stand again")
    finally:
        runner.leave(5)
        for conn in conns:
            conn.close()
        fake.broker.close()
