"""The share-group member machine (KIP-932), sans-IO: a fake coordinator answers by hand, and
the answers confluent-kafka's ShareConsumer got from the mock cluster are replayed."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import attrs
import pytest

from groupkit.errors import (
    CommitFailedError,
    ErrorCode,
    KafkaConnectionError,
    UnsupportedVersionError,
)
from groupkit.group import (
    Assigned,
    CoordinatorChanged,
    CoordinatorLost,
    Fatal,
    GroupConfig,
    Left,
    Lost,
    Output,
    Send,
)
from groupkit.group.outputs import Reported
from groupkit.group.share import ShareGroupMachine, ShareMemberState, ShareSubscription
from groupkit.group.share.states import TRANSITIONS, next_state
from groupkit.protocol.headers import decode_response_frame
from groupkit.protocol.messages.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from groupkit.protocol.messages.share_group import (
    ShareGroupHeartbeatAssignment,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    ShareGroupHeartbeatTopicPartitions,
)
from groupkit.protocol.schema import Request, Response

S = ShareMemberState
TOPIC = uuid.UUID(int=42)
FIXTURE = Path(__file__).parents[1] / "fixtures" / "share_bytes.json"


@attrs.define
class Member:
    machine: ShareGroupMachine
    now: float = 100.0
    pending: dict[int, Send] = attrs.field(factory=dict)
    seen: list[Output] = attrs.field(factory=list)

    @classmethod
    def make(cls, topics: tuple[str, ...] = ("orders",), **config: Any) -> Member:
        machine = ShareGroupMachine(GroupConfig(group_id="g", **config),
                                    ShareSubscription(frozenset(topics)),
                                    jitter=lambda: 0.5, make_member_id=lambda: "member-1")
        member = cls(machine)
        machine.start(member.now)
        return member

    def poll(self) -> list[Output]:
        outs = self.machine.poll(self.now)
        self.seen.extend(outs)
        self.pending.update({o.token: o for o in outs if isinstance(o, Send)})
        return outs

    def at(self, when: float) -> list[Output]:
        self.now = when
        return self.poll()

    def take(self, kind: type[Request]) -> Send:
        """The newest unanswered request of ``kind`` (older ones stay unanswered)."""
        self.poll()
        found = max((s for s in self.pending.values() if isinstance(s.request, kind)),
                    key=lambda s: s.token)
        del self.pending[found.token]
        return found

    def answer(self, send: Send, response: Response) -> list[Output]:
        self.machine.on_response(send.token, response, self.now)
        return self.poll()

    def fail(self, send: Send, error: BaseException) -> list[Output]:
        self.machine.on_request_failed(send.token, error, self.now)
        return self.poll()

    def found(self) -> None:
        self.answer(self.take(FindCoordinatorRequest),
                    FindCoordinatorResponse(node_id=2, host="h", port=9))

    def beat(self, *partitions: int | None, epoch: int = 5, code: int = 0,
             interval_ms: int = 1000) -> tuple[ShareGroupHeartbeatRequest, list[Output]]:
        send = self.take(ShareGroupHeartbeatRequest)
        assignment = None if partitions == (None,) else ShareGroupHeartbeatAssignment(
            topic_partitions=[ShareGroupHeartbeatTopicPartitions(
                topic_id=TOPIC, partitions=list(partitions))])
        response = ShareGroupHeartbeatResponse(
            error_code=code, member_id=None if code else "member-1", member_epoch=epoch,
            heartbeat_interval_ms=interval_ms, assignment=None if code else assignment)
        assert isinstance(send.request, ShareGroupHeartbeatRequest)
        return send.request, self.answer(send, response)


def _units(*partitions: int) -> frozenset[tuple[uuid.UUID, int]]:
    return frozenset((TOPIC, p) for p in partitions)


def test_a_member_finds_its_coordinator_and_joins_with_epoch_zero_and_everything() -> None:
    m = Member.make(client_rack="rack-a")
    find = m.take(FindCoordinatorRequest)
    assert find.request.key == "g" and find.request.key_type == 0
    outs = m.answer(find, FindCoordinatorResponse(node_id=2, host="h", port=9))
    assert CoordinatorChanged(2, "h", 9) in outs
    join, outs = m.beat(0, 1)
    assert (join.member_id, join.member_epoch) == ("member-1", 0)
    assert join.subscribed_topic_names == ["orders"] and join.rack_id == "rack-a"
    [assigned] = [o for o in outs if isinstance(o, Assigned)]
    assert assigned.units == _units(0, 1) and assigned.added == _units(0, 1)
    assert assigned.revoked == frozenset() and assigned.generation_id == 5
    assert m.machine.state is S.STABLE  # the acknowledging heartbeat went out at once
    ack, _ = m.beat(None)
    assert ack.member_epoch == 5 and ack.subscribed_topic_names is None and ack.rack_id is None


def test_heartbeats_follow_the_coordinators_interval() -> None:
    m = Member.make()
    m.found()
    m.beat(0, interval_ms=2000)
    m.beat(None, interval_ms=2000)
    assert m.machine.next_deadline() == pytest.approx(m.now + 2.0)
    assert not [o for o in m.at(m.now + 1.9) if isinstance(o, Send)]
    assert [o for o in m.at(m.now + 0.2) if isinstance(o, Send)]


def test_a_changed_assignment_says_what_was_added_and_what_to_stop_fetching() -> None:
    m = Member.make()
    m.found()
    m.beat(0, 1)
    _, outs = m.beat(1, 2, 3, epoch=6)
    [assigned] = [o for o in outs if isinstance(o, Assigned)]
    assert assigned.added == _units(2, 3) and assigned.revoked == _units(0)
    _, outs = m.beat(1, 2, 3, epoch=6)
    assert not [o for o in outs if isinstance(o, Assigned)]  # the same: nothing to do


def test_an_answer_repeating_the_assignment_is_not_acknowledged_again() -> None:
    """confluent-kafka's mock cluster repeats the assignment in every answer; a member that
    took each repeat for a new one would heartbeat again at once, thousands of times a
    second."""
    m = Member.make()
    m.found()
    m.beat(0, 1)
    _, outs = m.beat(0, 1)  # answers the acknowledging heartbeat with the assignment again
    assert not [o for o in outs if isinstance(o, Send | Assigned)]
    assert m.machine.state is S.STABLE
    assert m.machine.next_deadline() == pytest.approx(m.now + 1.0)
    m.at(m.now + 1.0)
    _, outs = m.beat(0, 1, 2)  # a new one is acknowledged at once
    assert [o for o in outs if isinstance(o, Assigned)]
    assert [o for o in outs if isinstance(o, Send)]


@pytest.mark.parametrize("code", [ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH])
def test_a_fenced_member_loses_its_partitions_and_rejoins_with_the_same_id(code: int) -> None:
    m = Member.make()
    m.found()
    m.beat(0, 1)
    _, outs = m.beat(code=code)
    assert Lost(_units(0, 1), outs[0].reason) in outs  # type: ignore[union-attr]
    assert m.machine.state is S.JOINING
    rejoin, _ = m.beat(0)
    assert (rejoin.member_id, rejoin.member_epoch) == ("member-1", 0)
    assert rejoin.subscribed_topic_names == ["orders"]


def test_a_moved_coordinator_is_found_again_and_the_heartbeat_is_full() -> None:
    m = Member.make()
    m.found()
    m.beat(0)
    _, outs = m.beat(code=ErrorCode.NOT_COORDINATOR)
    assert any(isinstance(o, CoordinatorLost) for o in outs)
    m.found()
    again, _ = m.beat(0)
    assert again.member_epoch == 5 and again.subscribed_topic_names == ["orders"]


def test_a_failed_heartbeat_backs_off_and_the_next_is_full() -> None:
    m = Member.make()
    m.found()
    m.beat(0)
    send = m.take(ShareGroupHeartbeatRequest)
    m.fail(send, KafkaConnectionError("reset"))
    assert m.machine.coordinator is None
    m.found()
    assert not [o for o in m.poll() if isinstance(o, Send)]  # backing off (100 ms)
    m.at(m.now + 0.2)
    full, _ = m.beat(0)
    assert full.subscribed_topic_names == ["orders"]


def test_a_new_subscription_goes_out_at_once() -> None:
    m = Member.make()
    m.found()
    m.beat(0)
    m.beat(None)
    m.machine.subscription.topics = frozenset({"orders", "refunds"})
    m.machine.request_rejoin(m.now, "subscription changed")
    beat, _ = m.beat(None)
    assert beat.subscribed_topic_names == ["orders", "refunds"]


def test_a_poll_interval_expiry_leaves_and_the_next_poll_rejoins() -> None:
    m = Member.make(max_poll_interval_ms=10_000)
    m.found()
    m.beat(0, 1)
    outs = m.at(m.now + 10.0)
    leave = next(o for o in outs if isinstance(o, Send))
    assert leave.request.member_epoch == -1
    assert any(isinstance(o, Lost) and o.units == _units(0, 1) for o in outs)
    assert any(isinstance(o, Left) for o in outs)
    assert m.machine.state is S.STALE and m.machine.rejoins_on_poll
    assert m.machine.next_deadline() is None
    m.machine.application_polled(m.now)
    rejoin, _ = m.beat(0)
    assert rejoin.member_epoch == 0 and m.machine.state is S.STABLE


def test_close_sends_the_leave_heartbeat_and_finishes_on_its_answer() -> None:
    m = Member.make()
    m.found()
    m.beat(0)
    m.machine.leave(m.now, "closing")
    leave = m.take(ShareGroupHeartbeatRequest)
    assert leave.request.member_epoch == -1 and m.machine.state is S.LEAVING
    outs = m.answer(leave, ShareGroupHeartbeatResponse(member_epoch=-1,
                                                       heartbeat_interval_ms=1000))
    assert any(isinstance(o, Left) for o in outs)
    assert m.machine.state is S.CLOSED and m.machine.finished


def test_close_before_joining_finishes_at_once() -> None:
    m = Member.make()
    m.machine.leave(m.now, "closing")
    assert m.machine.state is S.CLOSED and any(isinstance(o, Left) for o in m.poll())


def test_a_broker_without_the_api_stops_the_member_with_a_named_error() -> None:
    m = Member.make()
    m.found()
    outs = m.fail(m.take(ShareGroupHeartbeatRequest), UnsupportedVersionError("no API 76"))
    [fatal] = [o for o in outs if isinstance(o, Fatal)]
    assert isinstance(fatal.error, UnsupportedVersionError)
    assert "ShareGroupHeartbeat (API 76)" in str(fatal.error) and "h:9 (node 2)" in str(
        fatal.error)
    assert m.machine.state is S.FATAL


def test_group_authorization_stops_and_topic_authorization_is_reported() -> None:
    m = Member.make()
    m.found()
    m.beat(0)
    _, outs = m.beat(code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    assert any(isinstance(o, Reported) for o in outs) and m.machine.state is S.STABLE
    m.at(m.now + 1)
    _, outs = m.beat(code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    assert any(isinstance(o, Fatal) for o in outs) and m.machine.state is S.FATAL


def test_a_share_member_commits_no_offsets() -> None:
    with pytest.raises(CommitFailedError, match="acknowledge"):
        Member.make().machine.commit_fence()


def test_every_state_but_the_terminal_ones_can_fail() -> None:
    from groupkit.group.share.states import ShareTrigger
    for state in S:
        if state not in (S.CLOSED, S.FATAL):
            assert next_state(state, ShareTrigger.FAILED) is S.FATAL
    assert all(target in S for target in TRANSITIONS.values())


def test_the_mock_clusters_answers_drive_the_machine() -> None:
    """confluent-kafka's "implicit" member's heartbeat answers, fed to our machine in turn."""
    captures = json.loads(FIXTURE.read_text())["captures"]
    answers = [decode_response_frame(bytes.fromhex(e["response"]), ShareGroupHeartbeatResponse,
                                     e["api_version"])[1]
               for e in captures if e["api_key"] == 76 and e["client_id"] == "implicit"]
    m = Member.make(topics=("share-capture",))
    m.found()
    held: frozenset[tuple[uuid.UUID, int]] = frozenset()
    for answer in answers[:-1]:  # the last one answers a leave
        send = m.take(ShareGroupHeartbeatRequest)
        for out in m.answer(send, attrs.evolve(answer, member_id="member-1")):
            if isinstance(out, Assigned):
                held = out.units
        m.at(m.now + answer.heartbeat_interval_ms / 1000)
    assert {p for _, p in held} == {0, 1} and m.machine.state is S.STABLE


def test_the_share_machine_is_a_member_machine_the_runner_drives() -> None:
    from groupkit.group.member_machine import MemberMachine
    machine: MemberMachine = Member.make().machine  # mypy checks the interface
    outs = machine.poll(100.0)
    sends = [o for o in outs if isinstance(o, Send)]
    assert sends and not sends[0].heartbeat  # FindCoordinator goes on the ordinary path


def test_joining_and_new_assignments_are_rebalances_the_runner_can_time() -> None:
    from groupkit.group.outputs import GenerationJoined, Leaving, Rebalancing
    m = Member.make()
    m.found()
    heartbeat = m.take(ShareGroupHeartbeatRequest)
    assert heartbeat.heartbeat
    assert any(isinstance(o, Rebalancing) for o in m.seen)
    outs = m.answer(heartbeat, ShareGroupHeartbeatResponse(
        member_id="member-1", member_epoch=3, heartbeat_interval_ms=1000,
        assignment=ShareGroupHeartbeatAssignment(topic_partitions=[])))
    kinds = [type(o) for o in outs]
    # Joined with nothing assigned yet: still told, so the join is over.
    assert kinds.index(GenerationJoined) < kinds.index(Assigned)
    _, outs = m.beat(4, epoch=4)
    kinds = [type(o) for o in outs]
    assert kinds.index(Rebalancing) < kinds.index(Assigned)
    m.machine.leave(m.now, "bye")
    assert any(isinstance(o, Leaving) for o in m.poll())
