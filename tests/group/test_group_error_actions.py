"""Every row of the error table, driven through the machine without a network."""

from __future__ import annotations

import pytest

from groupkit.errors import BrokerError, CommitFailedError, ErrorCode, error_for_code
from groupkit.group import (
    Action,
    Api,
    CoordinatorLost,
    Fatal,
    Left,
    Lost,
    MemberState,
    Revoked,
    action_for,
)
from groupkit.group.error_actions import ERROR_ACTIONS
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
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from tests.group.group_cluster import UnitsProtocol
from tests.group.group_driver import Driver

S = MemberState
BACKOFF = 0.1  # retry_backoff_ms=100 with the jitter draw at its midpoint (factor 1.0)


def rows(api: Api) -> list[tuple[int, Action]]:
    return sorted(ERROR_ACTIONS[api].items())


def ids(api: Api) -> list[str]:
    return [f"{code}-{action.name}" for code, action in rows(api)]


def fatal_code(driver: Driver) -> int:
    fatal = [o for o in driver.seen if isinstance(o, Fatal)]
    assert len(fatal) == 1 and driver.machine.state is S.FATAL
    assert isinstance(fatal[0].error, BrokerError)
    assert driver.machine.next_deadline() is None
    return fatal[0].error.code


def test_every_api_has_rows_and_the_required_fatal_codes() -> None:
    join = ERROR_ACTIONS[Api.JOIN_GROUP]
    for name in ("FENCED_INSTANCE_ID", "INCONSISTENT_GROUP_PROTOCOL", "INVALID_SESSION_TIMEOUT",
                 "GROUP_AUTHORIZATION_FAILED", "GROUP_MAX_SIZE_REACHED"):
        code = next(c for c in join if _name(c) == name)
        assert join[code] is Action.FATAL
    assert join[ErrorCode.MEMBER_ID_REQUIRED] is Action.ADOPT_MEMBER_ID
    assert all(ERROR_ACTIONS[api] for api in Api)


def _name(code: int) -> str:
    return error_for_code(code).name


def test_unknown_codes_follow_their_retriability_or_the_api_default() -> None:
    assert action_for(Api.HEARTBEAT, 9999) is Action.FATAL  # unknown to groupkit: not retriable
    assert action_for(Api.JOIN_GROUP, 19) is Action.BACK_OFF  # NOT_ENOUGH_REPLICAS, retriable
    assert action_for(Api.OFFSET_COMMIT, 9999) is Action.FAIL_REQUEST


# --- FindCoordinator -----------------------------------------------------------------------------


@pytest.mark.parametrize(("code", "action"), rows(Api.FIND_COORDINATOR),
                         ids=ids(Api.FIND_COORDINATOR))
def test_find_coordinator_row(code: int, action: Action) -> None:
    d = Driver.make()
    d.machine.start(d.now)
    d.poll()
    outs = d.answer(FindCoordinatorRequest, FindCoordinatorResponse(error_code=code))
    if action is Action.FATAL:
        assert fatal_code(d) == code
        return
    assert action is Action.BACK_OFF
    assert d.sent(FindCoordinatorRequest, outs) == []
    assert d.machine.state is S.COORDINATOR_UNKNOWN
    assert d.machine.next_deadline() == pytest.approx(d.now + BACKOFF)
    assert d.sent(FindCoordinatorRequest, d.at(d.now + BACKOFF))


def test_find_coordinator_v4_answers_are_read_per_key() -> None:
    d = Driver.make()
    d.machine.start(d.now)
    d.poll()
    outs = d.answer(FindCoordinatorRequest, FindCoordinatorResponse(coordinators=[
        FindCoordinatorResponseCoordinator(key="other", node_id=1, host="x", port=1,
                                           error_code=15),
        FindCoordinatorResponseCoordinator(key="g", node_id=3, host="c3", port=9093,
                                           error_code=0)]))
    assert d.machine.coordinator is not None and d.machine.coordinator.node_id == 3
    assert d.sent(JoinGroupRequest, outs)


# --- JoinGroup, SyncGroup, Heartbeat share their membership reactions ---------------------------


def rejoining(code_api: Api) -> Driver:
    """A cooperative member, STABLE in generation 1 holding u0,u1, with a JoinGroup in flight
    (and for SyncGroup rows, that JoinGroup answered with generation 2)."""
    d = Driver.make(protocol=UnitsProtocol(cooperative=True))
    d.stable()
    d.machine.request_rejoin(d.now, "test")
    d.poll()
    if code_api is Api.SYNC_GROUP:
        d.joined(generation=2)
    return d


def check_membership_action(d: Driver, code: int, action: Action, outs: list,
                            generation: int, units: frozenset) -> None:
    m = d.machine
    joins = d.sent(JoinGroupRequest, outs)
    lost = [o for o in outs if isinstance(o, Lost)]
    if action is Action.FATAL:
        assert fatal_code(d) == code
        assert lost and lost[0].units == units
    elif action is Action.BACK_OFF:
        assert joins == [] and m.state is S.PREPARING_REBALANCE
        assert m.next_deadline() == pytest.approx(d.now + BACKOFF)
        assert d.sent(JoinGroupRequest, d.at(d.now + BACKOFF))
    elif action is Action.REDISCOVER:
        assert m.state is S.COORDINATOR_UNKNOWN and m.coordinator is None
        assert any(isinstance(o, CoordinatorLost) for o in outs)
        assert m.owned == units and lost == []
        assert d.sent(FindCoordinatorRequest, d.at(d.now + BACKOFF))
    elif action is Action.REJOIN:
        assert len(joins) == 1 and joins[0].request.member_id == "m-1"
        assert m.generation_id == generation and m.owned == units and lost == []
    elif action is Action.RESET_GENERATION:
        assert len(joins) == 1 and joins[0].request.member_id == "m-1"
        assert m.generation_id == -1 and lost[0].units == units and m.owned == frozenset()
    elif action is Action.RESET_MEMBER:
        assert len(joins) == 1 and joins[0].request.member_id == ""
        assert m.generation_id == -1 and lost[0].units == units and m.member_id == ""
    else:
        raise AssertionError(f"unexpected action {action} for a membership API")


@pytest.mark.parametrize(("code", "action"), rows(Api.JOIN_GROUP), ids=ids(Api.JOIN_GROUP))
def test_join_group_row(code: int, action: Action) -> None:
    d = rejoining(Api.JOIN_GROUP)
    units = d.machine.owned
    outs = d.answer(JoinGroupRequest, JoinGroupResponse(
        error_code=code, member_id="m-given" if code == ErrorCode.MEMBER_ID_REQUIRED else ""))
    if action is Action.ADOPT_MEMBER_ID:
        joins = d.sent(JoinGroupRequest, outs)
        assert len(joins) == 1 and joins[0].request.member_id == "m-given"
        assert d.machine.state is S.PREPARING_REBALANCE
        return
    check_membership_action(d, code, action, outs, generation=1, units=units)


@pytest.mark.parametrize(("code", "action"), rows(Api.SYNC_GROUP), ids=ids(Api.SYNC_GROUP))
def test_sync_group_row(code: int, action: Action) -> None:
    d = rejoining(Api.SYNC_GROUP)
    units = d.machine.owned
    outs = d.answer(SyncGroupRequest, SyncGroupResponse(error_code=code))
    check_membership_action(d, code, action, outs, generation=2, units=units)


@pytest.mark.parametrize(("code", "action"), rows(Api.HEARTBEAT), ids=ids(Api.HEARTBEAT))
def test_heartbeat_row(code: int, action: Action) -> None:
    d = Driver.make()
    units = d.stable()
    outs = d.beat(code)
    m = d.machine
    if action is Action.BACK_OFF:
        assert m.state is S.STABLE and m.owned == units
        assert m.next_deadline() == pytest.approx(d.now + BACKOFF)
    elif action is Action.REJOIN:
        # eager protocol: give everything up first, keeping generation and member id
        revoked = [o for o in outs if isinstance(o, Revoked)]
        assert revoked and revoked[0].units == units and revoked[0].generation_id == 1
        assert m.state is S.REVOKING and m.generation_id == 1 and m.member_id == "m-1"
        assert d.sent(JoinGroupRequest, outs) == []
        m.revocation_done(d.now)
        assert d.sent(JoinGroupRequest, d.poll())
    else:
        check_membership_action(d, code, action, outs, generation=1, units=units)


# --- LeaveGroup -------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [0, -1, 15, 16, 25, 30, 82, 9999])
def test_any_leave_group_answer_completes_the_leave(code: int) -> None:
    d = Driver.make()
    d.stable()
    d.machine.leave(d.now)
    d.poll()
    assert d.machine.state is S.LEAVING
    outs = d.answer(LeaveGroupRequest, LeaveGroupResponse(error_code=code))
    assert d.machine.state is S.CLOSED
    assert [type(o) for o in outs] == [Left]
    assert d.machine.next_deadline() is None


# --- OffsetCommit and OffsetFetch --------------------------------------------------------------


@pytest.mark.parametrize(("code", "action"), rows(Api.OFFSET_COMMIT), ids=ids(Api.OFFSET_COMMIT))
def test_offset_commit_row(code: int, action: Action) -> None:
    d = Driver.make()
    units = d.stable()
    fence = d.machine.commit_fence()
    decision = d.machine.on_commit_error(fence, code, d.now, attempt=2)
    outs = d.poll()
    m = d.machine
    assert decision.action is action
    if action in (Action.BACK_OFF, Action.REDISCOVER):
        assert decision.error is None and decision.retry_after == pytest.approx(2 * BACKOFF)
        assert m.state is (S.STABLE if action is Action.BACK_OFF else S.COORDINATOR_UNKNOWN)
    elif action is Action.FAIL_REQUEST:
        assert isinstance(decision.error, BrokerError) and decision.error.code == code
        assert m.state is S.STABLE and m.owned == units and outs == []
    elif action is Action.FATAL:
        assert isinstance(decision.error, BrokerError) and fatal_code(d) == code
    else:
        assert isinstance(decision.error, CommitFailedError) and decision.retry_after is None
        if action is Action.REJOIN:
            # an eager member gives everything up before it rejoins; the generation stays
            assert [o.units for o in outs if isinstance(o, Revoked)] == [units]
            assert m.state is S.REVOKING and m.generation_id == 1
        else:
            check_membership_action(d, code, action, outs, generation=1, units=units)


def test_a_commit_error_for_an_old_generation_does_not_reset_the_new_one() -> None:
    d = Driver.make()
    d.stable()
    fence = d.machine.commit_fence()
    d.beat(27)  # REBALANCE_IN_PROGRESS: revoke and rejoin
    d.machine.revocation_done(d.now)
    d.poll()
    d.joined(generation=2)
    d.synced()
    decision = d.machine.on_commit_error(fence, 22, d.now)  # ILLEGAL_GENERATION, for gen 1
    assert isinstance(decision.error, CommitFailedError)
    assert d.machine.state is S.STABLE and d.machine.generation_id == 2
    assert d.poll() == []


@pytest.mark.parametrize(("code", "action"), rows(Api.OFFSET_FETCH), ids=ids(Api.OFFSET_FETCH))
def test_offset_fetch_row(code: int, action: Action) -> None:
    d = Driver.make()
    d.stable()
    decision = d.machine.on_offset_fetch_error(code, d.now)
    d.poll()
    assert decision.action is action
    if action in (Action.BACK_OFF, Action.REDISCOVER):
        assert decision.error is None and decision.retry_after == pytest.approx(BACKOFF)
        assert d.machine.state is (
            S.STABLE if action is Action.BACK_OFF else S.COORDINATOR_UNKNOWN)
    elif action is Action.FATAL:
        assert fatal_code(d) == code
    else:
        assert action is Action.FAIL_REQUEST
        assert isinstance(decision.error, BrokerError) and decision.error.code == code
        assert d.machine.state is S.STABLE


def test_heartbeat_answers_are_ignored_once_the_generation_moved_on() -> None:
    d = Driver.make(protocol=UnitsProtocol(cooperative=True))
    d.stable()
    d.heartbeat_in_flight()
    stale = d.request(HeartbeatRequest)
    del d.pending[stale.token]
    d.machine.request_rejoin(d.now, "test")
    d.poll()
    d.machine.on_response(stale.token, HeartbeatResponse(error_code=25), d.now)
    assert d.poll() == [] and d.machine.member_id == "m-1"


def test_a_v4_answer_without_this_group_or_an_address_is_retried() -> None:
    for coordinators in ([FindCoordinatorResponseCoordinator(key="other", node_id=1, host="x",
                                                             port=1, error_code=0)], []):
        d = Driver.make()
        d.machine.start(d.now)
        d.poll()
        outs = d.answer(FindCoordinatorRequest, FindCoordinatorResponse(
            coordinators=coordinators))
        assert outs == [] and d.machine.coordinator is None
        assert d.machine.next_deadline() == pytest.approx(d.now + BACKOFF)


def test_every_row_of_the_table_names_its_code_and_the_code_has_an_error_class() -> None:
    for rows in ERROR_ACTIONS.values():
        for code in rows:
            assert isinstance(code, ErrorCode)
            assert error_for_code(code).name == code.name
