"""How a classic member handles its coordinator's answers to FindCoordinator, JoinGroup,
SyncGroup and Heartbeat: adopt what an answer gives, send what follows, or hand an error code
to the reactions (``reactions``). As leader, the JoinGroup handler runs the assignor.
"""

from __future__ import annotations

from groupkit.errors import ErrorCode, GroupkitError, error_for_code
from groupkit.group import requests
from groupkit.group.error_actions import Api
from groupkit.group.membership import InFlight
from groupkit.group.outputs import Assigned, Coordinator, CoordinatorChanged, GenerationJoined, Lost
from groupkit.group.protocol import GroupMember
from groupkit.group.reactions import Failure, ReactingMember
from groupkit.group.requests import RequestKind
from groupkit.group.states import Trigger
from groupkit.protocol.messages.find_coordinator import FindCoordinatorResponse
from groupkit.protocol.messages.group import (
    HeartbeatResponse,
    JoinGroupResponse,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)

T = Trigger


class AnsweringMember(ReactingMember):
    """A member that handles its coordinator's answers (``GroupMachine`` builds on it)."""

    __slots__ = ()

    def _on_find(self, resp: FindCoordinatorResponse, now: float) -> None:
        code, message, (node_id, host, port) = requests.coordinator_answer(
            resp, self.config.group_id)
        if code:
            self._react(Failure(Api.FIND_COORDINATOR, code, message=message), now)
            return
        self._failures = 0
        self._retry_at = None
        self._coordinator = Coordinator(node_id, host, port)
        self._outputs.append(CoordinatorChanged(node_id, host, port))
        self._session_deadline = now + self.config.session_timeout_ms / 1000
        self._heartbeat_due = now
        if self._revoke_pending or self._rejoin_needed or self._generation_id < 0 \
                or self._assignment is None:
            self._rejoin(now)
        else:
            self._go(T.HEARTBEAT_RESUMED)

    def _on_join(self, resp: JoinGroupResponse, now: float) -> None:
        code = resp.error_code
        if code:
            self._react(Failure(Api.JOIN_GROUP, code, member_id=resp.member_id), now)
            return
        if (resp.protocol_type is not None and resp.protocol_type != self.protocol.protocol_type) \
                or resp.protocol_name not in self._offered:
            self._fail(error_for_code(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)(
                f"the coordinator chose {resp.protocol_type!r}/{resp.protocol_name!r}, which this"
                f" member did not offer ({self.protocol.protocol_type!r}/{list(self._offered)})"))
            return
        self._failures = 0
        self._member_id = resp.member_id
        self._generation_id = resp.generation_id
        self._protocol_name = resp.protocol_name
        self._leader_id = resp.leader
        self._outputs.append(GenerationJoined(
            resp.member_id, resp.generation_id, resp.protocol_name or "",
            resp.leader == resp.member_id, len(resp.members)))
        assignments: list[SyncGroupRequestAssignment] = []
        if resp.leader == resp.member_id and not resp.skip_assignment:
            members = [GroupMember(m.member_id, m.group_instance_id, m.metadata)
                       for m in resp.members]
            try:
                result = self.protocol.assign(resp.protocol_name, members)
                assignments = requests.leader_assignments(members, result)
            except GroupkitError as exc:
                self._fail(exc)
                return
        self._go(T.JOINED)
        self._session_deadline = now + self.config.session_timeout_ms / 1000
        self._heartbeat_due = now + self.config.heartbeat_interval_ms / 1000
        timeout_ms = requests.join_timeout_ms(self.config)
        self._main = self._send(RequestKind.SYNC, requests.sync_group(
            self.config, self._generation_id, self._member_id, self.protocol.protocol_type,
            self._protocol_name, assignments), timeout_ms)
        self._request_deadline = now + timeout_ms / 1000

    def _on_sync(self, resp: SyncGroupResponse, now: float) -> None:
        code = resp.error_code
        if code:
            self._react(Failure(Api.SYNC_GROUP, code), now)
            return
        name = self._protocol_name or ""
        if (resp.protocol_type is not None and resp.protocol_type != self.protocol.protocol_type) \
                or (resp.protocol_name is not None and resp.protocol_name != name):
            self._fail(error_for_code(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)(
                f"SyncGroup answered for {resp.protocol_type!r}/{resp.protocol_name!r}, but the"
                f" group joined with {self.protocol.protocol_type!r}/{name!r}"))
            return
        try:
            units = frozenset(self.protocol.on_assignment(name, resp.assignment,
                                                          self._generation_id))
        except GroupkitError as exc:
            self._fail(exc)
            return
        added, revoked = units - self._owned, self._owned - units
        if revoked and not self.protocol.is_cooperative(name):
            # The member kept these through the join because its last generation was
            # cooperative, but the group now chose an eager assignor (a member that only
            # speaks range joined), whose leader gave them to others in this same generation.
            # They are lost, not revoked: a revoke would commit for partitions another member
            # already owns in this generation. Java and librdkafka never meet this (one
            # protocol for all configured assignors); groupkit's default list mixes both.
            self._outputs.append(Lost(revoked, f"the group switched to the eager {name!r}"
                                               " assignor, which gave them to other members"))
            revoked = frozenset()
        self._owned, self._owned_protocol, self._assignment = units, name, resp.assignment
        self._failures = 0
        self._go(T.SYNCED)
        self._session_deadline = now + self.config.session_timeout_ms / 1000
        self._outputs.append(Assigned(
            generation_id=self._generation_id, member_id=self._member_id, protocol_name=name,
            assignment=resp.assignment, units=units, added=added, revoked=revoked))
        if self._rejoin_needed:
            self._rejoin(now)

    def _on_heartbeat(self, req: InFlight, resp: HeartbeatResponse, now: float) -> None:
        if req.generation_id != self._generation_id or req.member_id != self._member_id:
            return
        code = resp.error_code
        if not code:
            self._failures = 0
            self._session_deadline = now + self.config.session_timeout_ms / 1000
            return
        self._react(Failure(Api.HEARTBEAT, code), now)
