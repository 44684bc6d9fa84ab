"""The consumer-protocol member (KIP-848) against a fake coordinator, sans-IO on a fake clock.

Whole-group scenarios run ``ConsumerGroupMachine`` members against ``FakeConsumerCoordinator``
(Kafka's reconciliation rules); single-member cases script the answers by hand. The rules are
the Java client's (ConsumerMembershipManager, HeartbeatRequestManager); each test names one.
"""

from __future__ import annotations

import random
import uuid

import pytest

from assignors import TopicPartition
from groupkit.errors import CommitFailedError, ErrorCode, UnsupportedVersionError
from groupkit.group import GroupConfig
from groupkit.group.kip848 import ConsumerGroupMachine, MemberState, SubscriptionHolder
from groupkit.group.kip848.membership import new_member_id
from groupkit.group.outputs import (
    Assigned,
    CommitFence,
    CoordinatorLost,
    Fatal,
    GenerationJoined,
    Left,
    Lost,
    Output,
    Revoked,
    Send,
)
from groupkit.protocol.messages.consumer_group import (
    ConsumerGroupHeartbeatAssignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatTopicPartitions,
)
from groupkit.protocol.messages.find_coordinator import FindCoordinatorResponse
from groupkit.protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseTopic,
)
from tests.group.consumer_group_cluster import ConsumerGroupCluster

S = MemberState
TOPIC_ID = uuid.UUID("11111111-2222-3333-4444-555555555555")


def tps(*partitions: int, topic: str = "t") -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in partitions}


def cluster(partitions: int = 4) -> ConsumerGroupCluster:
    c = ConsumerGroupCluster()
    c.coordinator.add_topic("t", partitions)
    return c


# --- whole groups ------------------------------------------------------------------------------


def test_a_member_joins_with_epoch_zero_and_every_field_then_acknowledges_what_it_took() -> None:
    c = cluster()
    a = c.add("a", group_instance_id=None, client_rack="rack-1")
    c.run_until(lambda: c.settled(4))
    join, ack = a.heartbeats()[:2]
    assert join.member_epoch == 0 and join.member_id == "id-a"
    assert join.subscribed_topic_names == ["t"] and join.topic_partitions == []
    assert join.subscribed_topic_regex == ""  # "no pattern", sent with the names
    assert join.rebalance_timeout_ms == 60_000 and join.rack_id == "rack-1"
    assert ack.member_epoch == 1 and ack.subscribed_topic_names is None
    assert ack.rebalance_timeout_ms == -1 and ack.rack_id is None
    assert {p for tp in ack.topic_partitions or () for p in tp.partitions} == {0, 1, 2, 3}
    assert a.held == tps(0, 1, 2, 3)
    assert a.seen(GenerationJoined)[0].generation_id == 1


def test_later_heartbeats_carry_only_what_changed_at_the_interval_the_coordinator_gave() -> None:
    c = cluster()
    c.coordinator.heartbeat_interval_ms = 2_500
    a = c.add("a")
    c.run_until(lambda: c.settled(4))
    sent = len(a.heartbeats())
    c.advance(10)
    steady = a.heartbeats()[sent:]
    assert len(steady) == 4  # every 2.5 s
    assert all(h.topic_partitions is None and h.subscribed_topic_names is None
               and h.rebalance_timeout_ms == -1 for h in steady)


def test_a_joining_member_makes_the_first_revoke_before_it_gets_the_partitions() -> None:
    c = cluster()
    a = c.add("a")
    c.run_until(lambda: c.settled(4))
    b = c.add("b")
    c.run_until(lambda: c.settled(4))
    assert c.overlap is None
    assert len(a.held) == len(b.held) == 2
    revoked = a.seen(Revoked)[-1]
    assert set(revoked.units) == tps(0, 1, 2, 3) - a.held
    # a's application gave them up (revocation_done) before b's was handed them.
    b_assigned = next(o for o in b.seen(Assigned) if o.units)
    assert b.outputs.index(b_assigned) >= 0 and set(b_assigned.added) == b.held


def test_a_slow_revoker_keeps_the_partitions_from_the_joiner_until_it_answers() -> None:
    c = cluster()
    a = c.add("a")
    c.run_until(lambda: c.settled(4))
    c.slow("a")
    b = c.add("b")
    c.advance(20)
    assert a.machine.state is S.RECONCILING and a.unanswered
    assert b.held == set() and c.overlap is None
    c.answer_pending("a")
    c.run_until(lambda: c.settled(4))
    assert c.overlap is None and len(b.held) == 2


@pytest.mark.parametrize("seed", [848, 849, 850])
def test_members_joining_leaving_and_crashing_never_hold_a_partition_twice(seed: int) -> None:
    # A slow application answers within 20 s, well inside the rebalance timeout (60 s): past
    # it the coordinator takes the partitions away whatever the member does, in either
    # protocol, and only the commits are fenced.
    rng = random.Random(seed)
    c = cluster(8)
    live: list[str] = []
    slow_since: dict[str, float] = {}
    for step in range(60):
        choice = rng.random()
        if (choice < 0.45 or not live) and len(live) < 5:
            name = f"m{step}"
            c.add(name)
            live.append(name)
        elif choice < 0.65:
            name = rng.choice(live)
            c.nodes[name].machine.leave(c.now, "test leave")
            c.pump()
            c.nodes.pop(name)
            live.remove(name)
            slow_since.pop(name, None)
        elif choice < 0.75:
            name = rng.choice(live)
            c.crash(name)
            live.remove(name)
            slow_since.pop(name, None)
        elif live[0] not in slow_since:
            c.slow(live[0])
            slow_since[live[0]] = c.now
        c.advance(rng.choice([0.3, 1.0, 4.0, 9.0]))
        for name, since in list(slow_since.items()):
            if c.now - since >= 20:
                c.answer_pending(name)
                del slow_since[name]
        assert c.overlap is None, c.overlap
    for name in slow_since:
        c.answer_pending(name)
    c.run_until(lambda: c.settled(8), limit=120)
    assert c.overlap is None


def test_a_crashed_members_partitions_move_after_its_session_expires() -> None:
    c = cluster()
    c.add("a")
    c.run_until(lambda: c.settled(4))
    b = c.add("b")
    c.run_until(lambda: c.settled(4))
    c.crash("a")
    took = c.run_until(lambda: c.settled(4))
    assert b.held == tps(0, 1, 2, 3)
    assert 9 <= took <= 13  # the fake's session timeout is 10 s


def test_a_static_member_leaves_with_epoch_minus_two_and_comes_back_to_its_partitions() -> None:
    c = cluster()
    a = c.add("a", group_instance_id="static-a")
    c.run_until(lambda: c.settled(4))
    b = c.add("b")
    c.run_until(lambda: c.settled(4))
    held, bumps = set(a.held), c.coordinator.epoch_bumps
    a.machine.leave(c.now, "restart")
    c.pump()
    assert a.machine.state is S.CLOSED and a.heartbeats()[-1].member_epoch == -2
    c.nodes.pop("a")
    c.advance(2)
    again = c.add("a", group_instance_id="static-a", member_id="id-a-2")
    c.run_until(lambda: c.settled(4))
    assert again.held == held and c.coordinator.epoch_bumps == bumps
    assert c.coordinator.static_returns == 1
    assert not [o for o in b.seen(Revoked) if o.units]
    assert c.overlap is None


@pytest.mark.parametrize(("static", "leave_on_close", "epoch"), [
    (False, False, -1), (True, False, -2), (True, True, -1)])
def test_close_sends_one_leave_heartbeat(static: bool, leave_on_close: bool, epoch: int) -> None:
    c = cluster()
    a = c.add("a", group_instance_id="i" if static else None,
              leave_group_on_close=leave_on_close)
    c.run_until(lambda: c.settled(4))
    a.machine.leave(c.now, "closing")
    c.pump()
    assert a.heartbeats()[-1].member_epoch == epoch
    assert a.machine.state is S.CLOSED and a.machine.finished
    assert isinstance(a.outputs[-1], Left)
    assert not a.seen(Revoked)  # the application released before calling leave


@pytest.mark.parametrize("code", [ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID])
def test_a_fenced_member_loses_its_partitions_and_rejoins_with_epoch_zero_and_the_same_id(
        code: int) -> None:
    c = cluster()
    a = c.add("a")
    c.run_until(lambda: c.settled(4))
    c.coordinator.inject["id-a"] = code
    before = len(a.heartbeats())
    c.advance(1.5)
    lost = a.seen(Lost)
    assert lost and set(lost[0].units) == tps(0, 1, 2, 3)
    rejoin = a.heartbeats()[before + 1]
    assert rejoin.member_epoch == 0 and rejoin.member_id == "id-a"
    assert rejoin.subscribed_topic_names == ["t"] and rejoin.topic_partitions == []
    c.run_until(lambda: c.settled(4))
    assert a.held == tps(0, 1, 2, 3)


def test_a_member_that_stops_polling_leaves_loses_and_rejoins_on_its_next_poll() -> None:
    c = cluster()
    a = c.add("a", max_poll_interval_ms=5_000)
    c.run_until(lambda: c.settled(4))
    a.polling = False
    c.advance(6)
    assert a.machine.state is S.STALE and a.machine.rejoins_on_poll
    assert a.heartbeats()[-1].member_epoch == -1
    assert a.seen(Lost) and isinstance(a.seen(Left)[-1], Left)
    sent = len(a.heartbeats())
    c.advance(10)
    assert len(a.heartbeats()) == sent  # a STALE member does not heartbeat
    a.polling = True
    c.run_until(lambda: c.settled(4))
    assert a.heartbeats()[sent].member_epoch == 0


def test_a_regex_subscription_goes_to_the_broker_with_no_names() -> None:
    c = cluster()
    c.coordinator.add_topic("other", 2)
    a = c.add("a", topics=(), pattern="t|oth.*")
    c.run_until(lambda: c.settled(6))
    join = a.heartbeats()[0]
    assert join.subscribed_topic_regex == "t|oth.*" and join.subscribed_topic_names == []
    assert a.held == tps(0, 1, 2, 3) | tps(0, 1, topic="other")
    metadata = [s.request for s in a.sent if isinstance(s.request, MetadataRequest)]
    assert metadata and metadata[0].topics is None  # every topic: the broker resolved the regex


def test_a_changed_subscription_goes_out_in_the_next_heartbeat_at_once() -> None:
    c = cluster()
    c.coordinator.add_topic("other", 2)
    a = c.add("a")
    c.run_until(lambda: c.settled(4))
    sent = len(a.heartbeats())
    a.subscription.subscribe(["t", "other"])
    a.machine.request_rejoin(c.now, "the subscription changed")
    c.pump()
    beat = a.heartbeats()[sent]
    assert beat.subscribed_topic_names == ["other", "t"] and beat.member_epoch > 0
    c.run_until(lambda: c.settled(6))


# --- one member, answers by hand -------------------------------------------------------------


def _member(**config: object) -> tuple[ConsumerGroupMachine, list[Output]]:
    settings: dict[str, object] = {"group_id": "g", "retry_backoff_ms": 100,
                                   "retry_backoff_max_ms": 1_000}
    settings.update(config)
    holder = SubscriptionHolder()
    holder.subscribe(["t"])
    machine = ConsumerGroupMachine(GroupConfig(**settings), holder, jitter=lambda: 0.5,
                                   make_member_id=lambda: "me")  # type: ignore[arg-type]
    machine.start(0.0)
    outs = machine.poll(0.0)
    find = next(o for o in outs if isinstance(o, Send))
    machine.on_response(find.token, FindCoordinatorResponse(node_id=7, host="h", port=1), 0.0)
    return machine, machine.poll(0.0)


def _beat(outs: list[Output]) -> Send:
    return next(o for o in outs if isinstance(o, Send)
                and isinstance(o.request, ConsumerGroupHeartbeatRequest))


def _answer(epoch: int, partitions: list[int] | None = None, code: int = 0,
            interval: int = 1_000) -> ConsumerGroupHeartbeatResponse:
    assignment = None if partitions is None else ConsumerGroupHeartbeatAssignment(
        topic_partitions=[ConsumerGroupHeartbeatTopicPartitions(topic_id=TOPIC_ID,
                                                                partitions=partitions)])
    return ConsumerGroupHeartbeatResponse(error_code=code, member_id="me" if not code else None,
                                          member_epoch=epoch, heartbeat_interval_ms=interval,
                                          assignment=assignment)


def _stable(machine: ConsumerGroupMachine, outs: list[Output], now: float = 0.0) -> list[Output]:
    """Answer the join with partitions 0-1 of t, name the topic, apply, and acknowledge."""
    machine.on_response(_beat(outs).token, _answer(5, [0, 1]), now)
    outs = machine.poll(now)
    meta = next(o for o in outs if isinstance(o, Send) and isinstance(o.request, MetadataRequest))
    machine.on_response(meta.token, MetadataResponse(topics=[
        MetadataResponseTopic(name="t", topic_id=TOPIC_ID)]), now)
    outs = machine.poll(now)
    assert [o for o in outs if isinstance(o, Assigned)]
    machine.assignment_applied(now)
    outs = machine.poll(now)
    ack = _beat(outs)
    assert machine.state is S.STABLE and ack.request.topic_partitions
    machine.on_response(ack.token, _answer(5), now)
    return machine.poll(now)


def test_the_member_id_is_made_by_the_member_as_java_makes_it() -> None:
    made = {new_member_id() for _ in range(50)}
    assert len(made) == 50 and all(len(m) == 22 and "=" not in m for m in made)


def test_the_member_epoch_fences_commits_and_none_is_offered_while_joining() -> None:
    machine, outs = _member(group_instance_id="inst")
    with pytest.raises(CommitFailedError, match="JOINING"):
        machine.commit_fence()
    _stable(machine, outs)
    assert machine.commit_fence() == CommitFence(5, "me", "inst", member_epoch=True)


@pytest.mark.parametrize("code", [ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE])
def test_a_moved_coordinator_is_found_again_and_the_next_heartbeat_is_full(code: int) -> None:
    machine, outs = _member()
    outs = _stable(machine, outs)
    outs = machine.poll(1.0)
    machine.on_response(_beat(outs).token, _answer(5, code=code), 1.0)
    outs = machine.poll(1.0)
    assert any(isinstance(o, CoordinatorLost) for o in outs)
    find = next(o for o in outs if isinstance(o, Send))
    machine.on_response(find.token, FindCoordinatorResponse(node_id=8, host="h2", port=2), 1.0)
    beat = _beat(machine.poll(1.0)).request
    assert beat.member_epoch == 5 and beat.subscribed_topic_names == ["t"]
    assert beat.topic_partitions is not None and beat.rebalance_timeout_ms > 0
    assert machine.state is S.STABLE


def test_a_loading_coordinator_is_asked_again_after_the_back_off() -> None:
    machine, outs = _member()
    outs = _stable(machine, outs)
    outs = machine.poll(1.0)
    machine.on_response(_beat(outs).token, _answer(5, code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
                        1.0)
    assert not machine.poll(1.05)
    assert machine.next_deadline() == pytest.approx(1.1)
    assert _beat(machine.poll(1.1)).request.topic_partitions is not None


@pytest.mark.parametrize("code", [
    ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.UNSUPPORTED_ASSIGNOR,
    ErrorCode.UNRELEASED_INSTANCE_ID, ErrorCode.FENCED_INSTANCE_ID, ErrorCode.INVALID_REQUEST,
    ErrorCode.GROUP_MAX_SIZE_REACHED, ErrorCode.INVALID_REGULAR_EXPRESSION, 9999])
def test_errors_retrying_cannot_fix_stop_the_member_and_lose_its_partitions(code: int) -> None:
    machine, outs = _member()
    outs = _stable(machine, outs)
    outs = machine.poll(1.0)
    machine.on_response(_beat(outs).token, _answer(5, code=code), 1.0)
    outs = machine.poll(1.0)
    assert machine.state is S.FATAL and machine.finished
    assert [o for o in outs if isinstance(o, Lost)]
    assert isinstance(outs[-1], Fatal) and outs[-1].error.code == code  # type: ignore[attr-defined]


def test_a_coordinator_without_api_68_fails_naming_the_broker_the_api_and_the_fix() -> None:
    machine, outs = _member()
    machine.on_request_failed(_beat(outs).token, UnsupportedVersionError("no version"), 0.0)
    outs = machine.poll(0.0)
    assert isinstance(outs[-1], Fatal)
    text = str(outs[-1].error)
    assert "h:1 (node 7)" in text and "API 68" in text and "group_protocol='classic'" in text


def test_a_broker_that_answers_a_join_with_epoch_zero_is_asked_again_at_the_interval() -> None:
    # confluent-kafka's mock cluster does so while others still hold the partitions.
    machine, outs = _member()
    machine.on_response(_beat(outs).token, _answer(0, None, interval=3_000), 0.0)
    assert not [o for o in machine.poll(0.0) if isinstance(o, Send)]
    assert machine.state is S.JOINING and machine.next_deadline() == pytest.approx(3.0)
    again = _beat(machine.poll(3.0)).request
    assert again.member_epoch == 0 and again.subscribed_topic_names == ["t"]


def test_a_stale_member_epoch_refuses_a_commit_unless_a_revocation_commits_with_a_newer_one(
        ) -> None:
    machine, outs = _member()
    outs = _stable(machine, outs)
    old = CommitFence(4, "me", None)
    decision = machine.on_commit_error(old, ErrorCode.STALE_MEMBER_EPOCH, 1.0)
    assert isinstance(decision.error, CommitFailedError)
    # a revocation under way, and the member has epoch 5 > 4: retried (Java's
    # maybeAutoCommitSyncBeforeRevocation)
    outs = machine.poll(1.0)
    machine.on_response(_beat(outs).token, _answer(5, [1]), 1.0)
    revoked = [o for o in machine.poll(1.0) if isinstance(o, Revoked)]
    assert revoked and set(revoked[0].units) == tps(0)
    decision = machine.on_commit_error(old, ErrorCode.STALE_MEMBER_EPOCH, 1.0)
    assert decision.error is None and decision.retry_after is not None
    assert machine.on_commit_error(old, ErrorCode.UNKNOWN_MEMBER_ID, 1.0).error is not None


def test_partitions_of_a_topic_without_a_name_wait_for_metadata_and_the_rest_go_ahead() -> None:
    machine, outs = _member()
    outs = _stable(machine, outs)
    other = uuid.UUID(int=99)
    outs = machine.poll(1.0)
    answer = ConsumerGroupHeartbeatResponse(
        member_id="me", member_epoch=6, heartbeat_interval_ms=1_000,
        assignment=ConsumerGroupHeartbeatAssignment(topic_partitions=[
            ConsumerGroupHeartbeatTopicPartitions(topic_id=TOPIC_ID, partitions=[0, 1]),
            ConsumerGroupHeartbeatTopicPartitions(topic_id=other, partitions=[0])]))
    machine.on_response(_beat(outs).token, answer, 1.0)
    outs = machine.poll(1.0)
    meta = [o for o in outs if isinstance(o, Send) and isinstance(o.request, MetadataRequest)]
    assert meta and machine.state is S.RECONCILING
    machine.on_response(meta[0].token, MetadataResponse(topics=[]), 1.0)
    outs = machine.poll(1.0)
    assert not [o for o in outs if isinstance(o, Assigned)]
    retry = machine.next_deadline()
    assert retry is not None and retry > 1.0
    outs = machine.poll(retry)
    meta = [o for o in outs if isinstance(o, Send) and isinstance(o.request, MetadataRequest)]
    assert meta and meta[0].request.topics is None  # asked by name already: now every topic
    machine.on_response(meta[0].token, MetadataResponse(topics=[
        MetadataResponseTopic(name="t", topic_id=TOPIC_ID),
        MetadataResponseTopic(name="u", topic_id=other)]), retry)
    assigned = [o for o in machine.poll(retry) if isinstance(o, Assigned)]
    assert assigned and set(assigned[0].added) == {TopicPartition("u", 0)}
