"""A sans-IO stand-in for Kafka's classic group coordinator, for whole-group tests.

It follows Apache Kafka's GroupCoordinator for one group, in the shape the membership machine
meets: MEMBER_ID_REQUIRED for new dynamic members, JoinGroup held until every member rejoined
(or the rebalance timeout drops the laggards), SyncGroup held until the leader's assignment
arrives, heartbeats answered by generation and group state, session expiry, LeaveGroup, and
static members (KIP-345) replacing their old member id and fencing it. Requests go in with a
ticket; held answers come out of ``ready()`` when the group moves on.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable

import attrs

from groupkit.errors import ErrorCode
from groupkit.protocol.messages.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupRequest,
    LeaveGroupResponse,
    LeaveGroupResponseMember,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupkit.protocol.schema import Request, Response


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"


@attrs.define
class _Member:
    member_id: str
    instance_id: str | None
    protocols: list[tuple[str, bytes]]
    session_timeout: float
    rebalance_timeout: float
    last_seen: float
    join_ticket: Hashable | None = None
    sync_ticket: Hashable | None = None
    assignment: bytes = b""


@attrs.define
class FakeCoordinator:
    """One group's coordinator: ``handle`` takes requests, ``ready`` gives the answers due."""

    min_session_ms: int = 6_000
    max_session_ms: int = 1_800_000
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str | None = None
    members: dict[str, _Member] = attrs.field(factory=dict)
    pending: set[str] = attrs.field(factory=set)
    static: dict[str, str] = attrs.field(factory=dict)
    rebalance_deadline: float | None = None
    rebalances: int = 0
    _ready: list[tuple[Hashable, Response]] = attrs.field(factory=list)
    _next_id: int = 0

    def handle(self, ticket: Hashable, request: Request, now: float) -> None:
        """Take one request; its answer shows up in ``ready()`` now or when the group moves."""
        self.tick(now)
        if isinstance(request, JoinGroupRequest):
            self._join(ticket, request, now)
        elif isinstance(request, SyncGroupRequest):
            self._sync(ticket, request, now)
        elif isinstance(request, HeartbeatRequest):
            self._answer(ticket, HeartbeatResponse(error_code=self._heartbeat(request, now)))
        elif isinstance(request, LeaveGroupRequest):
            self._leave(ticket, request, now)
        else:
            raise AssertionError(f"the fake coordinator does not serve {type(request).__name__}")

    def ready(self) -> list[tuple[Hashable, Response]]:
        out, self._ready = self._ready, []
        return out

    def tick(self, now: float) -> None:
        """Expire sessions and end a rebalance whose timeout passed."""
        for member in list(self.members.values()):
            if member.join_ticket is None and now > member.last_seen + member.session_timeout:
                self._remove(member.member_id, now)
        if self.state is GroupState.PREPARING_REBALANCE and self.rebalance_deadline is not None \
                and now >= self.rebalance_deadline:
            for member in list(self.members.values()):
                if member.join_ticket is None:
                    self._remove(member.member_id, now, rebalance=False)
            self._complete_join(now)

    def next_deadline(self) -> float | None:
        times = [m.last_seen + m.session_timeout for m in self.members.values()
                 if m.join_ticket is None]
        if self.state is GroupState.PREPARING_REBALANCE and self.rebalance_deadline is not None:
            times.append(self.rebalance_deadline)
        return min(times) + 1e-6 if times else None

    # --- JoinGroup ------------------------------------------------------------------------------

    def _join(self, ticket: Hashable, req: JoinGroupRequest, now: float) -> None:
        def fail(code: int, member_id: str = "") -> None:
            self._answer(ticket, JoinGroupResponse(
                error_code=code, member_id=member_id, protocol_name="", leader=""))

        if not self.min_session_ms <= req.session_timeout_ms <= self.max_session_ms:
            return fail(ErrorCode.INVALID_SESSION_TIMEOUT)
        protocols = [(p.name, p.metadata) for p in req.protocols]
        if self.members and (req.protocol_type != self.protocol_type or not self._common(
                {name for name, _ in protocols})):
            return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        instance = req.group_instance_id
        if not req.member_id:
            new_id = f"{instance or 'member'}-{self._next_id}"
            self._next_id += 1
            if instance is None:
                self.pending.add(new_id)
                return fail(ErrorCode.MEMBER_ID_REQUIRED, new_id)
            old = self.static.get(instance)
            if old is not None and old in self.members:
                return self._replace_static(ticket, old, new_id, req, protocols, now)
            self.static[instance] = new_id
            member_id = new_id
        else:
            member_id = req.member_id
            if instance is not None and self.static.get(instance) not in (None, member_id):
                return fail(ErrorCode.FENCED_INSTANCE_ID)
            if member_id not in self.members and member_id not in self.pending:
                return fail(ErrorCode.UNKNOWN_MEMBER_ID)
        self.pending.discard(member_id)
        member = self.members.get(member_id)
        if member is None:
            member = self.members[member_id] = _Member(
                member_id, instance, protocols, req.session_timeout_ms / 1000,
                req.rebalance_timeout_ms / 1000, now)
        member.protocols = protocols
        member.last_seen = now
        member.join_ticket = ticket
        self.protocol_type = req.protocol_type
        if self.state is not GroupState.PREPARING_REBALANCE:
            self._prepare_rebalance(now)
        self._maybe_complete_join(now)

    def _replace_static(self, ticket: Hashable, old: str, new_id: str, req: JoinGroupRequest,
                        protocols: list[tuple[str, bytes]], now: float) -> None:
        """A static member restarted: it takes over its old place, fencing the old id."""
        member = self.members.pop(old)
        member.member_id = new_id
        member.last_seen = now
        self.members[new_id] = member
        self.static[member.instance_id or ""] = new_id
        if self.leader == old:
            self.leader = new_id
        if self.state is GroupState.STABLE and protocols == member.protocols:
            is_leader = self.leader == new_id
            self._answer(ticket, JoinGroupResponse(
                error_code=0, generation_id=self.generation, protocol_type=self.protocol_type,
                protocol_name=self.protocol_name, leader=self.leader or "",
                skip_assignment=is_leader, member_id=new_id,
                members=self._member_list() if is_leader else []))
            return
        member.protocols = protocols
        member.join_ticket = ticket
        if self.state is not GroupState.PREPARING_REBALANCE:
            self._prepare_rebalance(now)
        self._maybe_complete_join(now)

    def _prepare_rebalance(self, now: float) -> None:
        for member in self.members.values():
            if member.sync_ticket is not None:
                self._answer(member.sync_ticket, SyncGroupResponse(
                    error_code=ErrorCode.REBALANCE_IN_PROGRESS))
                member.sync_ticket = None
        self.state = GroupState.PREPARING_REBALANCE
        self.rebalances += 1
        timeout = max((m.rebalance_timeout for m in self.members.values()), default=0.0)
        self.rebalance_deadline = now + timeout

    def _maybe_complete_join(self, now: float) -> None:
        if self.members and all(m.join_ticket is not None for m in self.members.values()):
            self._complete_join(now)

    def _complete_join(self, now: float) -> None:
        self.rebalance_deadline = None
        if not self.members:
            self.state = GroupState.EMPTY
            self.leader = None
            self.protocol_type = None
            return
        self.generation += 1
        self.protocol_name = self._choose_protocol()
        if self.leader not in self.members:
            self.leader = next(iter(self.members))
        self.state = GroupState.COMPLETING_REBALANCE
        for member in self.members.values():
            member.last_seen = now
            ticket, member.join_ticket = member.join_ticket, None
            is_leader = member.member_id == self.leader
            self._answer(ticket, JoinGroupResponse(
                error_code=0, generation_id=self.generation, protocol_type=self.protocol_type,
                protocol_name=self.protocol_name, leader=self.leader, member_id=member.member_id,
                members=self._member_list() if is_leader else []))

    def _common(self, names: set[str]) -> set[str]:
        for member in self.members.values():
            names &= {name for name, _ in member.protocols}
        return names

    def _choose_protocol(self) -> str:
        candidates = self._common({name for name, _ in next(iter(self.members.values())).protocols})
        votes: dict[str, int] = {}
        for member in self.members.values():
            first = next(name for name, _ in member.protocols if name in candidates)
            votes[first] = votes.get(first, 0) + 1
        return max(sorted(votes), key=lambda name: votes[name])

    def _member_list(self) -> list[JoinGroupResponseMember]:
        return [JoinGroupResponseMember(
            member_id=m.member_id, group_instance_id=m.instance_id,
            metadata=dict(m.protocols)[self.protocol_name or ""])
            for m in self.members.values()]

    # --- SyncGroup, Heartbeat, LeaveGroup -------------------------------------------------------

    def _check(self, member_id: str, instance: str | None, generation: int) -> int:
        if instance is not None and self.static.get(instance) not in (None, member_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation != self.generation:
            return ErrorCode.ILLEGAL_GENERATION
        return 0

    def _sync(self, ticket: Hashable, req: SyncGroupRequest, now: float) -> None:
        code = self._check(req.member_id, req.group_instance_id, req.generation_id)
        if not code and self.state is GroupState.PREPARING_REBALANCE:
            code = ErrorCode.REBALANCE_IN_PROGRESS
        if code:
            self._answer(ticket, SyncGroupResponse(error_code=code))
            return
        member = self.members[req.member_id]
        member.last_seen = now
        if self.state is GroupState.STABLE:
            self._answer(ticket, self._sync_answer(member))
            return
        member.sync_ticket = ticket
        if req.member_id == self.leader:
            given = {a.member_id: a.assignment for a in req.assignments}
            for m in self.members.values():
                m.assignment = given.get(m.member_id, b"")
            self.state = GroupState.STABLE
            for m in self.members.values():
                if m.sync_ticket is not None:
                    self._answer(m.sync_ticket, self._sync_answer(m))
                    m.sync_ticket = None

    def _sync_answer(self, member: _Member) -> SyncGroupResponse:
        return SyncGroupResponse(
            error_code=0, protocol_type=self.protocol_type, protocol_name=self.protocol_name,
            assignment=member.assignment)

    def _heartbeat(self, req: HeartbeatRequest, now: float) -> int:
        code = self._check(req.member_id, req.group_instance_id, req.generation_id)
        if code:
            return code
        self.members[req.member_id].last_seen = now
        return ErrorCode.REBALANCE_IN_PROGRESS if self.state is GroupState.PREPARING_REBALANCE else 0

    def _leave(self, ticket: Hashable, req: LeaveGroupRequest, now: float) -> None:
        answers = []
        for leaving in req.members:
            code = self._check(leaving.member_id, leaving.group_instance_id, self.generation)
            if code == ErrorCode.ILLEGAL_GENERATION:
                code = 0
            if not code:
                self._remove(leaving.member_id, now)
            answers.append(LeaveGroupResponseMember(
                member_id=leaving.member_id, group_instance_id=leaving.group_instance_id,
                error_code=code))
        self._answer(ticket, LeaveGroupResponse(error_code=0, members=answers))

    def _remove(self, member_id: str, now: float, rebalance: bool = True) -> None:
        member = self.members.pop(member_id)
        if member.instance_id is not None and self.static.get(member.instance_id) == member_id:
            del self.static[member.instance_id]
        if member.join_ticket is not None:
            self._answer(member.join_ticket, JoinGroupResponse(
                error_code=ErrorCode.UNKNOWN_MEMBER_ID, protocol_name="", leader=""))
        if member.sync_ticket is not None:
            self._answer(member.sync_ticket, SyncGroupResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID))
        if not rebalance:
            return
        if self.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            if self.members:
                self._prepare_rebalance(now)
            else:
                self.state = GroupState.EMPTY
        elif self.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(now)

    def _answer(self, ticket: Hashable, response: Response) -> None:
        self._ready.append((ticket, response))
