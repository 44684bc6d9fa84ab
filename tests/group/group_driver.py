"""Drive one membership machine by hand: answer its requests, fail them, move its clock."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import attrs

from groupkit.group import GroupConfig, GroupMachine, Output, Send
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
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupkit.protocol.schema import Request, Response
from tests.group.group_cluster import UnitsProtocol


@attrs.define
class Driver:
    """One machine, its fake clock, and the requests it has sent that are still unanswered."""

    machine: GroupMachine
    now: float = 100.0
    pending: dict[int, Send] = attrs.field(factory=dict)
    seen: list[Output] = attrs.field(factory=list)

    @classmethod
    def make(cls, protocol: UnitsProtocol | None = None, jitter: float = 0.5,
             **config: object) -> Driver:
        settings: dict[str, Any] = {"group_id": "g"}
        settings.update(config)
        machine = GroupMachine(GroupConfig(**settings), protocol or UnitsProtocol(),
                               jitter=lambda: jitter)
        return cls(machine)

    def poll(self) -> list[Output]:
        outs = self.machine.poll(self.now)
        self.seen.extend(outs)
        for out in outs:
            if isinstance(out, Send):
                self.pending[out.token] = out
        return outs

    def at(self, when: float) -> list[Output]:
        self.now = when
        return self.poll()

    def request(self, kind: type[Request]) -> Send:
        """The newest unanswered request of ``kind``."""
        found = [s for s in self.pending.values() if isinstance(s.request, kind)]
        assert found, f"no {kind.__name__} in flight; pending: {self.pending}"
        return found[-1]

    def answer(self, kind: type[Request], response: Response) -> list[Output]:
        send = self.request(kind)
        del self.pending[send.token]
        self.machine.on_response(send.token, response, self.now)
        return self.poll()

    def fail(self, kind: type[Request], error: BaseException) -> list[Output]:
        send = self.request(kind)
        del self.pending[send.token]
        self.machine.on_request_failed(send.token, error, self.now)
        return self.poll()

    # --- common ways into a state ---------------------------------------------------------------

    def found(self) -> list[Output]:
        return self.answer(FindCoordinatorRequest, FindCoordinatorResponse(
            error_code=0, node_id=7, host="coordinator", port=9092))

    def joined(self, generation: int = 1, member_id: str = "m-1", leader: str = "m-0",
               members: list[tuple[str, bytes]] | None = None,
               protocol_name: str = "roundrobin") -> list[Output]:
        return self.answer(JoinGroupRequest, JoinGroupResponse(
            error_code=0, generation_id=generation, protocol_name=protocol_name, leader=leader,
            member_id=member_id, members=[
                JoinGroupResponseMember(member_id=i, metadata=m) for i, m in members or []]))

    def synced(self, assignment: bytes = b"+u0,u1") -> list[Output]:
        return self.answer(SyncGroupRequest, SyncGroupResponse(error_code=0,
                                                               assignment=assignment))

    def stable(self, units: bytes = b"+u0,u1", generation: int = 1) -> frozenset[Hashable]:
        """Start and get to STABLE as a follower holding ``units``."""
        self.machine.start(self.now)
        self.poll()
        self.found()
        self.joined(generation=generation)
        self.synced(units)
        return self.machine.owned

    def heartbeat_in_flight(self) -> Send:
        """Move the clock to the next heartbeat (unless one is already out) and return it."""
        self.poll()
        if not any(isinstance(s.request, HeartbeatRequest) for s in self.pending.values()):
            deadline = self.machine.next_deadline()
            assert deadline is not None and deadline >= self.now
            self.at(deadline)
        return self.request(HeartbeatRequest)

    def beat(self, code: int = 0) -> list[Output]:
        self.heartbeat_in_flight()
        return self.answer(HeartbeatRequest, HeartbeatResponse(error_code=code))

    def sent(self, kind: type[Request], outs: list[Output]) -> list[Send]:
        return [o for o in outs if isinstance(o, Send) and isinstance(o.request, kind)]
