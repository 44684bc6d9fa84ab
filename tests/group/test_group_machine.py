"""One membership machine driven by hand: the join dance, timers, static membership, leaders."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import attrs
import pytest

from groupkit.errors import (
    CommitFailedError,
    CorruptFrame,
    IllegalStateError,
    InvalidAssignmentError,
    KafkaConnectionError,
    RequestTimeoutError,
)
from groupkit.group import (
    Assigned,
    CoordinatorChanged,
    CoordinatorLost,
    Destination,
    Fatal,
    GroupMember,
    Left,
    Lost,
    MemberState,
    Rebalancing,
    Revoked,
    Send,
)
from groupkit.group.requests import JOIN_TIMEOUT_LAPSE_MS
from groupkit.protocol.messages.find_coordinator import FindCoordinatorRequest
from groupkit.protocol.messages.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)
from tests.group.group_cluster import UnitsProtocol
from tests.group.group_driver import Driver

S = MemberState


def test_start_finds_the_coordinator_on_any_broker_then_joins_it() -> None:
    d = Driver.make(session_timeout_ms=10_000, rebalance_timeout_ms=20_000)
    assert d.machine.next_deadline() is None
    d.machine.start(d.now)
    [find] = d.poll()
    assert isinstance(find, Send) and find.destination is Destination.ANY_BROKER
    assert find.request.key == "g" and find.request.coordinator_keys == ["g"]
    assert d.machine.state is S.COORDINATOR_UNKNOWN
    changed, rebalancing, join = d.found()
    assert changed == CoordinatorChanged(7, "coordinator", 9092)
    # The runtime's cue: a rebalance began (it reports it and may fetch metadata meanwhile).
    assert isinstance(rebalancing, Rebalancing)
    assert isinstance(join, Send) and join.destination is Destination.COORDINATOR
    assert join.timeout_ms == 20_000 + JOIN_TIMEOUT_LAPSE_MS
    req = join.request
    assert (req.group_id, req.session_timeout_ms, req.rebalance_timeout_ms, req.member_id) == \
        ("g", 10_000, 20_000, "")
    assert req.protocol_type == "units" and [p.name for p in req.protocols] == ["roundrobin"]
    assert d.machine.state is S.PREPARING_REBALANCE


def test_every_request_encodes_at_its_oldest_and_newest_version() -> None:
    d = Driver.make(group_instance_id="inst", leave_group_on_close=True)
    d.stable()
    d.beat()
    d.machine.leave(d.now)
    d.poll()
    sends = [o for o in d.seen if isinstance(o, Send)]
    assert {type(s.request).__name__ for s in sends} == {
        "FindCoordinatorRequest", "JoinGroupRequest", "SyncGroupRequest", "HeartbeatRequest",
        "LeaveGroupRequest"}
    for send in sends:
        cls = type(send.request)
        # static members need the versions that carry group_instance_id
        low = {"JoinGroupRequest": 5, "SyncGroupRequest": 3, "HeartbeatRequest": 3,
               "LeaveGroupRequest": 3}.get(cls.__name__, cls.MIN_VERSION)
        for version in (low, cls.MAX_VERSION):
            assert send.request.encode(version)


def test_member_id_required_rejoins_at_once_with_the_given_id() -> None:
    d = Driver.make()
    d.machine.start(d.now)
    d.poll()
    d.found()
    outs = d.answer(JoinGroupRequest, JoinGroupResponse(error_code=79, member_id="m-9"))
    [join] = d.sent(JoinGroupRequest, outs)
    assert join.request.member_id == "m-9"
    assert join.timeout_ms == 300_000 + JOIN_TIMEOUT_LAPSE_MS
    assert d.machine.state is S.PREPARING_REBALANCE


def test_a_follower_syncs_with_no_assignments_and_becomes_stable() -> None:
    d = Driver.make(group_instance_id="inst-1")
    d.machine.start(d.now)
    d.poll()
    d.found()
    outs = d.joined(generation=4, member_id="m-1", leader="m-0")
    [sync] = d.sent(SyncGroupRequest, outs)
    req = sync.request
    assert (req.generation_id, req.member_id, req.group_instance_id, req.assignments) == \
        (4, "m-1", "inst-1", [])
    assert (req.protocol_type, req.protocol_name) == ("units", "roundrobin")
    assert d.machine.state is S.COMPLETING_REBALANCE
    [assigned] = d.synced(b"+u3")
    assert assigned == Assigned(4, "m-1", "roundrobin", b"+u3", frozenset({"u3"}),
                                frozenset({"u3"}), frozenset())
    assert d.machine.state is S.STABLE and not d.machine.is_leader
    assert d.machine.commit_fence().group_instance_id == "inst-1"


def test_the_leader_assigns_every_member_and_sends_it_in_sync() -> None:
    protocol = UnitsProtocol()
    d = Driver.make(protocol=protocol)
    d.machine.start(d.now)
    d.poll()
    d.found()
    outs = d.joined(member_id="m-1", leader="m-1",
                    members=[("m-1", b"roundrobin"), ("m-2", b"roundrobin")])
    [sync] = d.sent(SyncGroupRequest, outs)
    given = {a.member_id: a.assignment for a in sync.request.assignments}
    assert given == {"m-1": b"+u0,u2,u4", "m-2": b"+u1,u3,u5"}
    assert [m.metadata for m in protocol.assigned[0][1]] == [b"roundrobin", b"roundrobin"]
    assert d.machine.is_leader


@pytest.mark.parametrize("bad", [
    {"m-1": b"+u0"},                                  # m-2 missing
    {"m-1": b"+u0", "m-2": b""},                      # empty bytes
    {"m-1": b"+u0", "m-2": "u1"},                     # not bytes
    {"m-1": b"+u0", "m-2": b"+u1", "m-3": b"+u2"},    # a stranger
])
def test_a_leader_assignment_without_real_bytes_for_every_member_is_refused(bad: dict) -> None:
    class Bad(UnitsProtocol):
        def assign(self, protocol_name: str,
                   members: Sequence[GroupMember]) -> Mapping[str, bytes]:
            return bad

    d = Driver.make(protocol=Bad())
    d.machine.start(d.now)
    d.poll()
    d.found()
    outs = d.joined(member_id="m-1", leader="m-1", members=[("m-1", b""), ("m-2", b"")])
    assert d.sent(SyncGroupRequest, outs) == []
    [fatal] = [o for o in outs if isinstance(o, Fatal)]
    assert isinstance(fatal.error, InvalidAssignmentError)
    assert d.machine.state is S.FATAL


def test_a_protocol_the_member_did_not_offer_is_inconsistent() -> None:
    d = Driver.make()
    d.machine.start(d.now)
    d.poll()
    d.found()
    d.joined(protocol_name="range")
    assert d.machine.state is S.FATAL
    [fatal] = [o for o in d.seen if isinstance(o, Fatal)]
    assert fatal.error.code == 23


def test_a_sync_answer_for_another_protocol_is_inconsistent() -> None:
    d = Driver.make()
    d.machine.start(d.now)
    d.poll()
    d.found()
    d.joined()
    d.answer(SyncGroupRequest, SyncGroupResponse(
        error_code=0, protocol_type="consumer", protocol_name="roundrobin", assignment=b"+u0"))
    assert d.machine.state is S.FATAL


def test_an_unreadable_assignment_stops_the_member() -> None:
    class Strict(UnitsProtocol):
        def on_assignment(self, protocol_name: str, assignment: bytes,
                          generation_id: int) -> frozenset[Hashable]:
            raise CorruptFrame("assignment too short")

    d = Driver.make(protocol=Strict())
    d.machine.start(d.now)
    d.poll()
    d.found()
    d.joined()
    d.synced(b"\x00")
    assert d.machine.state is S.FATAL and d.machine.assignment is None


# --- timers -----------------------------------------------------------------------------------


def test_heartbeats_go_out_every_interval_and_nothing_happens_between() -> None:
    d = Driver.make(heartbeat_interval_ms=3_000)
    d.stable()
    start = d.now
    assert d.machine.next_deadline() == pytest.approx(start + 3.0)
    assert d.at(start + 2.999) == []
    [beat] = d.at(start + 3.0)
    assert isinstance(beat.request, HeartbeatRequest)
    assert (beat.request.generation_id, beat.request.member_id) == (1, "m-1")
    # while it is unanswered, the next thing due is the session deadline, not another beat
    assert d.machine.next_deadline() == pytest.approx(start + 45.0)
    d.answer(HeartbeatRequest, HeartbeatResponse())
    assert d.machine.next_deadline() == pytest.approx(start + 6.0)


def test_heartbeats_of_one_generation_are_one_request_and_a_new_generation_gets_its_own() -> None:
    # The connection re-sends the frame of the very request it sent last without encoding it,
    # so an idle member's heartbeats are one frozen request while its identity stays.
    d = Driver.make(protocol=UnitsProtocol(cooperative=True), heartbeat_interval_ms=1_000)
    d.stable()
    [first] = d.sent(HeartbeatRequest, d.at(d.now + 1.0))
    d.answer(HeartbeatRequest, HeartbeatResponse())
    [second] = d.sent(HeartbeatRequest, d.at(d.now + 1.0))
    assert second.request is first.request and second.token != first.token
    d.answer(HeartbeatRequest, HeartbeatResponse())
    d.machine.request_rejoin(d.now, "a new generation")
    d.poll()
    d.joined(generation=2, member_id="m-2")
    d.synced(b"+u0,u1")
    [third] = d.sent(HeartbeatRequest, d.at(d.now + 1.0))
    assert (third.request.generation_id, third.request.member_id) == (2, "m-2")
    assert third.request is not first.request


def test_heartbeat_due_is_the_next_beat_even_while_one_is_in_flight() -> None:
    d = Driver.make(heartbeat_interval_ms=3_000)
    assert d.machine.heartbeat_due is None
    d.stable()
    start = d.now
    assert d.machine.heartbeat_due == pytest.approx(start + 3.0)
    d.at(start + 3.0)
    # the runner wakes then to read a successful answer that came meanwhile
    assert d.machine.heartbeat_due == pytest.approx(start + 6.0)
    d.machine.leave(d.now)
    assert d.machine.heartbeat_due is None


def test_heartbeats_continue_while_sync_is_pending() -> None:
    d = Driver.make(heartbeat_interval_ms=1_000)
    d.machine.start(d.now)
    d.poll()
    d.found()
    d.joined()
    outs = d.at(d.now + 1.0)
    assert d.sent(HeartbeatRequest, outs) and d.machine.state is S.COMPLETING_REBALANCE
    # REBALANCE_IN_PROGRESS while completing: the rebalance is already ours, nothing to do
    outs = d.answer(HeartbeatRequest, HeartbeatResponse(error_code=27))
    assert outs == [] and d.machine.state is S.COMPLETING_REBALANCE


def test_no_heartbeat_answer_within_the_session_marks_the_coordinator_unknown() -> None:
    d = Driver.make(session_timeout_ms=10_000, heartbeat_interval_ms=3_000)
    units = d.stable()
    start = d.now
    d.heartbeat_in_flight()
    assert d.machine.next_deadline() == pytest.approx(start + 10.0)
    outs = d.at(start + 10.0)
    assert isinstance(outs[0], CoordinatorLost) and "session" in outs[0].reason
    assert d.sent(FindCoordinatorRequest, outs), "rediscovery starts at once"
    assert d.machine.owned == units and d.machine.generation_id == 1
    # found again: heartbeating resumes in the same generation
    outs = d.found()
    assert d.machine.state is S.STABLE and d.sent(HeartbeatRequest, outs)


def test_a_member_that_lost_its_coordinator_may_still_commit_in_its_generation() -> None:
    # Java keeps the generation when the coordinator is marked unknown; a commit then waits for
    # the coordinator within its own deadline, and the coordinator fences it if it is stale.
    d = Driver.make(session_timeout_ms=10_000, heartbeat_interval_ms=3_000)
    d.stable()
    d.heartbeat_in_flight()
    d.fail(HeartbeatRequest, KafkaConnectionError("refused"))
    assert d.machine.state is S.COORDINATOR_UNKNOWN
    assert d.machine.commit_fence().generation_id == 1


def test_a_member_that_never_joined_is_told_so_when_it_commits() -> None:
    d = Driver.make()
    d.machine.start(d.now)
    d.poll()
    with pytest.raises(CommitFailedError, match="not a member of the group yet"):
        d.machine.commit_fence()


def test_a_cooperative_member_whose_rejoin_goes_unanswered_loses_what_it_held() -> None:
    # Past the rebalance timeout the group moved on without it: others may hold its units in
    # the new generation, so it must not rejoin still holding them.
    d = Driver.make(UnitsProtocol(cooperative=True), rebalance_timeout_ms=10_000)
    units = d.stable()
    d.machine.request_rejoin(d.now, "test")
    assert d.sent(JoinGroupRequest, d.poll())
    outs = d.at(d.now + 15.0)
    lost = [o for o in outs if isinstance(o, Lost)]
    assert lost and lost[0].units == units
    assert d.machine.owned == frozenset() and d.machine.generation_id == -1
    assert any(isinstance(o, CoordinatorLost) for o in outs)


def test_a_join_unanswered_past_the_rebalance_timeout_is_given_up() -> None:
    d = Driver.make(rebalance_timeout_ms=10_000)
    d.machine.start(d.now)
    d.poll()
    d.found()
    start = d.now
    assert d.machine.next_deadline() == pytest.approx(start + 15.0)
    outs = d.at(start + 15.0)
    assert isinstance(outs[0], CoordinatorLost) and d.machine.state is S.COORDINATOR_UNKNOWN
    assert d.sent(FindCoordinatorRequest, d.at(d.now + 0.1))


def test_connection_failures_rediscover_the_coordinator_with_growing_backoff() -> None:
    d = Driver.make(retry_backoff_ms=100, retry_backoff_max_ms=1_000)
    d.machine.start(d.now)
    d.poll()
    delays = []
    for _ in range(6):
        d.fail(FindCoordinatorRequest, KafkaConnectionError("refused"))
        deadline = d.machine.next_deadline()
        assert deadline is not None
        delays.append(round(deadline - d.now, 6))
        assert d.sent(FindCoordinatorRequest, d.at(deadline))
    assert delays == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    d.found()
    d.fail(JoinGroupRequest, RequestTimeoutError("no answer"))
    assert d.machine.state is S.COORDINATOR_UNKNOWN
    assert d.machine.next_deadline() == pytest.approx(d.now + 0.1), "success reset the growth"


def test_poll_interval_expiry_leaves_then_rejoins_on_the_next_poll() -> None:
    d = Driver.make(max_poll_interval_ms=30_000, session_timeout_ms=45_000)
    units = d.stable()
    while d.now + 3.0 < 130.0:
        d.beat()
    outs = d.at(130.0)
    lost = [o for o in outs if isinstance(o, Lost)]
    [leave] = d.sent(LeaveGroupRequest, outs)
    assert leave.request.members[0].member_id == "m-1"
    assert lost[0].units == units and isinstance(outs[-1], Left)
    assert d.machine.state is S.UNJOINED and d.machine.next_deadline() is None
    with pytest.raises(CommitFailedError):
        d.machine.commit_fence()
    d.machine.application_polled(d.now + 50)
    [join] = d.sent(JoinGroupRequest, d.poll())
    assert join.request.member_id == ""


def test_a_static_member_whose_poll_interval_expires_sends_no_leave() -> None:
    d = Driver.make(max_poll_interval_ms=30_000, group_instance_id="inst")
    d.stable()
    outs = d.at(d.now + 30.0)
    assert d.sent(LeaveGroupRequest, outs) == [] and d.machine.state is S.UNJOINED


def test_application_polls_push_the_poll_deadline() -> None:
    d = Driver.make(max_poll_interval_ms=30_000, session_timeout_ms=45_000)
    d.stable()
    for _ in range(5):
        d.now += 20.0
        d.machine.application_polled(d.now)
        d.beat()
    assert d.machine.state is S.STABLE


def test_an_idle_member_schedules_a_finite_future_deadline_after_every_poll() -> None:
    d = Driver.make()
    d.stable()
    for _ in range(20):
        d.beat()
        deadline = d.machine.next_deadline()
        assert deadline is not None and deadline > d.now


# --- rebalances requested by the runtime --------------------------------------------------------


def test_eager_rejoin_waits_for_the_revocation_and_keeps_heartbeating() -> None:
    d = Driver.make(heartbeat_interval_ms=1_000)
    units = d.stable()
    d.machine.request_rejoin(d.now, "subscription changed")
    [revoked] = d.poll()
    assert revoked == Revoked(1, units) and d.machine.state is S.REVOKING
    assert d.machine.commit_fence().generation_id == 1, "commits still allowed while revoking"
    outs = d.at(d.now + 1.0)
    assert d.sent(HeartbeatRequest, outs) and d.sent(JoinGroupRequest, outs) == []
    d.machine.revocation_done(d.now)
    [join] = d.sent(JoinGroupRequest, d.poll())
    assert join.request.reason == "subscription changed"
    with pytest.raises(CommitFailedError):
        d.machine.commit_fence()


def test_cooperative_rejoin_keeps_units_and_reports_only_changes() -> None:
    d = Driver.make(protocol=UnitsProtocol(cooperative=True))
    d.stable(b"+u0,u1")
    d.machine.request_rejoin(d.now, "after a cooperative revoke")
    outs = d.poll()
    assert d.sent(JoinGroupRequest, outs) and not [o for o in outs if isinstance(o, Revoked)]
    assert d.machine.owned == {"u0", "u1"}
    d.joined(generation=2)
    [assigned] = d.synced(b"+u1,u2")
    assert (assigned.added, assigned.revoked) == ({"u2"}, {"u0"})


def test_rebalance_in_progress_on_a_cooperative_heartbeat_rejoins_without_reset() -> None:
    d = Driver.make(protocol=UnitsProtocol(cooperative=True))
    units = d.stable()
    outs = d.beat(27)
    [join] = d.sent(JoinGroupRequest, outs)
    assert join.request.member_id == "m-1" and d.machine.generation_id == 1
    assert d.machine.owned == units and [o for o in outs if isinstance(o, Lost | Revoked)] == []


def test_a_cooperative_member_commits_the_units_it_keeps_while_its_join_is_held() -> None:
    # The coordinator holds the JoinGroup while the group prepares; it still accepts commits
    # with the current generation then, and refuses them only once the join is answered.
    d = Driver.make(protocol=UnitsProtocol(cooperative=True))
    d.stable()
    d.beat(27)
    assert d.machine.state is S.PREPARING_REBALANCE
    fence = d.machine.commit_fence()
    assert (fence.generation_id, fence.member_id) == (1, "m-1")
    d.joined(generation=2)
    with pytest.raises(CommitFailedError):
        d.machine.commit_fence()
    d.synced()
    assert d.machine.commit_fence().generation_id == 2


@pytest.mark.parametrize("code", [22, 27], ids=["ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS"])
def test_a_commit_refused_while_the_join_is_held_leaves_the_join_alone(code: int) -> None:
    # The group can reach the next generation before this member hears its JoinGroup answer;
    # that answer, not the commit's error, settles the membership.
    d = Driver.make(protocol=UnitsProtocol(cooperative=True))
    units = d.stable()
    fence = d.machine.commit_fence()
    d.beat(27)
    join = d.request(JoinGroupRequest)
    decision = d.machine.on_commit_error(fence, code, d.now)
    assert isinstance(decision.error, CommitFailedError)
    assert d.poll() == [] and d.request(JoinGroupRequest) == join
    assert d.machine.owned == units and d.machine.generation_id == 1
    d.joined(generation=2)
    [assigned] = d.synced(b"+u0,u1")
    assert isinstance(assigned, Assigned) and assigned.revoked == frozenset()


def test_a_rejoin_requested_during_sync_happens_after_it() -> None:
    d = Driver.make(protocol=UnitsProtocol(cooperative=True))
    d.machine.start(d.now)
    d.poll()
    d.found()
    d.joined()
    d.machine.request_rejoin(d.now, "again")
    assert d.sent(JoinGroupRequest, d.poll()) == []
    outs = d.synced()
    assert isinstance(outs[0], Assigned) and d.sent(JoinGroupRequest, outs)


# --- closing -------------------------------------------------------------------------------------


def test_a_dynamic_member_leaves_on_close_and_late_answers_are_ignored() -> None:
    d = Driver.make()
    d.stable()
    d.heartbeat_in_flight()
    beat = d.request(HeartbeatRequest)
    d.machine.leave(d.now)
    [leave] = d.sent(LeaveGroupRequest, d.poll())
    assert leave.request.member_id == "m-1" and leave.request.members[0].member_id == "m-1"
    d.machine.on_response(beat.token, HeartbeatResponse(error_code=25), d.now)
    assert d.poll() == [] and d.machine.state is S.LEAVING
    d.fail(LeaveGroupRequest, KafkaConnectionError("gone"))
    assert d.machine.state is S.CLOSED and isinstance(d.seen[-1], Left)
    assert d.machine.next_deadline() is None


def test_closing_before_joining_sends_nothing() -> None:
    d = Driver.make()
    d.machine.start(d.now)
    d.poll()
    d.machine.leave(d.now)
    assert [type(o) for o in d.poll()] == [Left] and d.machine.state is S.CLOSED


def test_start_twice_and_mismatched_responses_are_refused() -> None:
    d = Driver.make()
    d.machine.start(d.now)
    with pytest.raises(IllegalStateError):
        d.machine.start(d.now)
    d.poll()
    find = d.request(FindCoordinatorRequest)
    with pytest.raises(IllegalStateError):
        d.machine.on_response(find.token, SyncGroupResponse(), d.now)


@attrs.define
class _MixedProtocol(UnitsProtocol):
    """Offers a cooperative and an eager assignor, as groupkit's default list does."""

    names: tuple[str, ...] = ("cooperative-sticky", "range")

    def is_cooperative(self, protocol_name: str) -> bool:
        return protocol_name == "cooperative-sticky"


def test_units_kept_through_a_join_that_switches_the_group_to_eager_are_lost_not_revoked() -> None:
    d = Driver.make(protocol=_MixedProtocol())
    d.machine.start(d.now)
    d.poll()
    d.found()
    d.joined(generation=1, protocol_name="cooperative-sticky")
    d.synced(b"+u0,u1")
    d.machine.request_rejoin(d.now, "a range-only member joined")
    assert not [o for o in d.poll() if isinstance(o, Revoked | Lost)]
    d.joined(generation=2, protocol_name="range")
    outs = d.synced(b"+u1,u2")
    [lost] = [o for o in outs if isinstance(o, Lost)]
    [assigned] = [o for o in outs if isinstance(o, Assigned)]
    assert lost.units == {"u0"} and "eager 'range'" in lost.reason
    assert (assigned.added, assigned.revoked) == ({"u2"}, frozenset())
    assert d.machine.owned == {"u1", "u2"}


def test_the_commit_fence_follows_the_member_id_and_generation_it_names() -> None:
    # commit_fence() hands out the same value while it stays the member's; a new member id
    # with the same generation number (a restarted group) must still give a new fence.
    d = Driver.make()
    d.stable()
    first = d.machine.commit_fence()
    assert (first.generation_id, first.member_id) == (1, "m-1")
    assert d.machine.commit_fence() == first
    d.beat(25)  # UNKNOWN_MEMBER_ID: the member id is forgotten and the member rejoins
    d.joined(generation=1, member_id="m-9")
    d.synced()
    fence = d.machine.commit_fence()
    assert (fence.generation_id, fence.member_id) == (1, "m-9")
    d.beat(27)  # REBALANCE_IN_PROGRESS: an eager member revokes, then rejoins
    d.machine.revocation_done(d.now)
    d.poll()
    d.joined(generation=2, member_id="m-9")
    d.synced()
    fence = d.machine.commit_fence()
    assert (fence.generation_id, fence.member_id) == (2, "m-9")


def test_heartbeats_of_a_new_generation_are_matched_to_it() -> None:
    # Each Heartbeat's record of the generation it was sent in is kept between beats; after a
    # rejoin the answers of the new generation's heartbeats must still be acted on, and an
    # answer to a heartbeat of the old generation ignored.
    d = Driver.make()
    d.stable()
    d.beat()
    old = d.heartbeat_in_flight()
    assert old.request.generation_id == 1
    d.machine.request_rejoin(d.now, "test")
    d.machine.revocation_done(d.now)
    d.poll()
    d.joined(generation=2)
    d.synced()
    d.machine.on_response(old.token, HeartbeatResponse(error_code=27), d.now)
    del d.pending[old.token]
    assert d.poll() == [] and d.machine.state is S.STABLE, "an old generation's answer is ignored"
    d.beat()
    beat = d.heartbeat_in_flight()
    assert beat.request.generation_id == 2
    d.answer(HeartbeatRequest, HeartbeatResponse(error_code=27))
    assert d.machine.state is S.REVOKING, "the new generation's answer is acted on"
