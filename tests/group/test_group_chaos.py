"""Random interleavings of answers, errors, failures, timers and application calls.

Whatever order they come in, the machine must never raise, never leave a state without the
facts that state needs (STABLE without an assignment, heartbeating without a coordinator...),
never schedule a deadline it has already passed (that would be a busy loop), and its events
must account for every unit it holds.
"""

from __future__ import annotations

from collections.abc import Hashable

from hypothesis import given, strategies as st

from groupkit.errors import CommitFailedError, KafkaConnectionError
from groupkit.group import (
    Assigned,
    Destination,
    GroupConfig,
    GroupMachine,
    Lost,
    MemberState,
    Output,
    Revoked,
    Send,
)
from groupkit.group.error_actions import ERROR_ACTIONS
from groupkit.group.states import HEARTBEAT_STATES, TERMINAL_STATES
from groupkit.protocol.messages.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from groupkit.protocol.messages.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupkit.protocol.schema import Response
from tests.group.group_cluster import UnitsProtocol

S = MemberState
CODES = sorted({code for rows in ERROR_ACTIONS.values() for code in rows} | {19, 9999})
# Successful answers dominate so that runs get past joining into STABLE and REVOKING.
OPS = ["answer"] * 8 + ["error", "fail", "time", "time", "polled", "rejoin", "revoked", "leave",
                        "commit", "fetch", "stale"]
ASSIGNMENTS = [b"+u0,u1", b"+u2", b"+", b"+u1,u3,u5"]


def success(send: Send, draw: st.DrawFn) -> Response:
    req = send.request
    if isinstance(req, FindCoordinatorRequest):
        node = draw(st.integers(1, 3))
        return FindCoordinatorResponse(error_code=0, node_id=node, host=f"b{node}", port=9092)
    if isinstance(req, JoinGroupRequest):
        me = req.member_id or "m-new"
        leader = draw(st.sampled_from([me, "m-other"]))
        names = [p.name for p in req.protocols]
        return JoinGroupResponse(
            error_code=0, generation_id=draw(st.integers(1, 5)),
            protocol_name=draw(st.sampled_from(names * 8 + ["unoffered"])),
            leader=leader, member_id=me,
            members=[JoinGroupResponseMember(member_id=i, metadata=b"x")
                     for i in (me, "m-other")] if leader == me else [])
    if isinstance(req, SyncGroupRequest):
        return SyncGroupResponse(error_code=0, assignment=draw(st.sampled_from(ASSIGNMENTS)))
    if isinstance(req, HeartbeatRequest):
        return HeartbeatResponse(error_code=0)
    return LeaveGroupResponse(error_code=0)


def error(send: Send, code: int) -> Response:
    req = send.request
    if isinstance(req, FindCoordinatorRequest):
        return FindCoordinatorResponse(error_code=code)
    if isinstance(req, JoinGroupRequest):
        return JoinGroupResponse(error_code=code, member_id="m-given")
    if isinstance(req, SyncGroupRequest):
        return SyncGroupResponse(error_code=code)
    if isinstance(req, HeartbeatRequest):
        return HeartbeatResponse(error_code=code)
    return LeaveGroupResponse(error_code=code)


def check(machine: GroupMachine, now: float, cooperative: bool) -> None:
    st_ = machine.state
    if st_ is S.STABLE:
        assert machine.assignment is not None
    if st_ in HEARTBEAT_STATES | {S.STABLE}:
        assert machine.coordinator is not None
        assert machine.generation_id >= 0 and machine.member_id
    if st_ in (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.LEAVING):
        assert machine.coordinator is not None
    if st_ is S.COORDINATOR_UNKNOWN:
        assert machine.coordinator is None
    if machine.owned and not cooperative:
        assert st_ in (S.STABLE, S.COORDINATOR_UNKNOWN), st_
    if machine.owned:
        assert machine.generation_id >= 0
    deadline = machine.next_deadline()
    if st_ in TERMINAL_STATES or st_ in (S.UNJOINED, S.LEAVING):
        # LEAVING waits for the LeaveGroup answer or its failure, which the runtime reports
        assert deadline is None
    else:
        assert deadline is not None and deadline > now, (st_, deadline, now)


@given(st.data(), st.booleans(), st.booleans())
def test_random_interleavings_keep_the_machine_valid(data: st.DataObject, cooperative: bool,
                                                     static: bool) -> None:
    draw = data.draw
    config = GroupConfig(group_id="g", session_timeout_ms=10_000, heartbeat_interval_ms=1_000,
                         max_poll_interval_ms=30_000, rebalance_timeout_ms=20_000,
                         group_instance_id="inst" if static else None,
                         leave_group_on_close=draw(st.booleans()))
    machine = GroupMachine(config, UnitsProtocol(cooperative=cooperative),
                           jitter=lambda: draw(st.floats(0, 1)))
    now = 0.0
    pending: dict[int, Send] = {}
    held: frozenset[Hashable] = frozenset()
    answered: list[int] = []

    def collect() -> list[Output]:
        nonlocal held
        outs = machine.poll(now)
        for out in outs:
            if isinstance(out, Send):
                assert (out.destination is Destination.ANY_BROKER) == isinstance(
                    out.request, FindCoordinatorRequest)
                assert out.request.encode(type(out.request).MAX_VERSION)
                pending[out.token] = out
            elif isinstance(out, Assigned):
                assert out.units == (held - out.revoked) | out.added
                held = out.units
            elif isinstance(out, Revoked | Lost):
                assert out.units <= held
                held = held - out.units
        assert held == machine.owned
        if machine.state in TERMINAL_STATES:
            assert not [o for o in outs if isinstance(o, Send)]
        return outs

    machine.start(now)
    collect()
    for _ in range(draw(st.integers(1, 60))):
        op = draw(st.sampled_from(OPS))
        if op in ("answer", "error", "fail") and pending:
            token = draw(st.sampled_from(sorted(pending)))
            send = pending.pop(token)
            answered.append(token)
            if op == "answer":
                machine.on_response(token, success(send, draw), now)
            elif op == "error":
                machine.on_response(token, error(send, draw(st.sampled_from(CODES))), now)
            else:
                machine.on_request_failed(token, KafkaConnectionError("reset"), now)
        elif op == "time":
            now += draw(st.sampled_from([0.05, 0.5, 1.0, 3.0, 11.0, 31.0]))
        elif op == "polled":
            machine.application_polled(now)
        elif op == "rejoin":
            machine.request_rejoin(now, "chaos")
        elif op == "revoked":
            machine.revocation_done(now)
        elif op == "leave":
            machine.leave(now)
            held = frozenset()
        elif op == "commit":
            try:
                fence = machine.commit_fence()
            except CommitFailedError:
                fence = None
            if fence is not None:
                decision = machine.on_commit_error(fence, draw(st.sampled_from(CODES)), now)
                assert (decision.retry_after is None) != (decision.error is None)
        elif op == "fetch":
            decision = machine.on_offset_fetch_error(draw(st.sampled_from(CODES)), now)
            assert (decision.retry_after is None) != (decision.error is None)
        elif op == "stale" and answered:
            token = draw(st.sampled_from(answered))
            machine.on_response(token, HeartbeatResponse(error_code=25), now)
        collect()
        check(machine, now, cooperative)
