"""A whole group on a fake clock: membership machines wired to the fake coordinator, h11 style.

Requests are delivered at once and in order; time moves only when ``advance`` or ``run_until``
moves it, always straight to the next deadline of a machine or of the coordinator, so a test of
a 45 s session costs microseconds and an idle group costs no steps at all.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import attrs

from groupkit.group import (
    Assigned,
    Destination,
    GroupConfig,
    GroupMachine,
    GroupMember,
    MemberState,
    Output,
    Revoked,
    Send,
)
from groupkit.protocol.messages.find_coordinator import FindCoordinatorResponse
from tests.group.fake_coordinator import FakeCoordinator, GroupState

COORDINATOR_NODE = (1, "broker-1", 9092)


@attrs.define
class UnitsProtocol:
    """A tiny group protocol: the leader deals ``units`` round-robin to the sorted members."""

    units: Sequence[str] = ("u0", "u1", "u2", "u3", "u4", "u5")
    cooperative: bool = False
    protocol_type: str = "units"
    names: Sequence[str] = ("roundrobin",)
    assigned: list[tuple[str, list[GroupMember]]] = attrs.field(factory=list)

    def join_protocols(self, owned: frozenset[Hashable],
                       generation_id: int) -> Sequence[tuple[str, bytes]]:
        return [(name, name.encode()) for name in self.names]

    def assign(self, protocol_name: str, members: Sequence[GroupMember]) -> Mapping[str, bytes]:
        self.assigned.append((protocol_name, list(members)))
        ids = sorted(m.member_id for m in members)
        dealt: dict[str, list[str]] = {i: [] for i in ids}
        for n, unit in enumerate(self.units):
            dealt[ids[n % len(ids)]].append(unit)
        return {i: ("+" + ",".join(units)).encode() for i, units in dealt.items()}

    def on_assignment(self, protocol_name: str, assignment: bytes,
                      generation_id: int) -> frozenset[Hashable]:
        text = assignment.decode()
        return frozenset(u for u in text.removeprefix("+").split(",") if u)

    def is_cooperative(self, protocol_name: str) -> bool:
        return self.cooperative


@attrs.define
class Node:
    """One member process: its machine, what it was told, and how its application behaves."""

    name: str
    machine: GroupMachine
    outputs: list[Output] = attrs.field(factory=list)
    polling: bool = True
    alive: bool = True
    revoke_promptly: bool = True

    @property
    def units(self) -> frozenset[Hashable]:
        return self.machine.owned

    def seen(self, kind: type) -> list:
        return [o for o in self.outputs if isinstance(o, kind)]


@attrs.define
class Cluster:
    """Members plus one coordinator on a shared fake clock."""

    coordinator: FakeCoordinator = attrs.field(factory=FakeCoordinator)
    now: float = 0.0
    nodes: dict[str, Node] = attrs.field(factory=dict)
    steps: int = 0

    def add(self, name: str, protocol: UnitsProtocol | None = None, **config: object) -> Node:
        settings: dict[str, Any] = {"group_id": "g", "session_timeout_ms": 10_000,
                                       "heartbeat_interval_ms": 1_000,
                                       "max_poll_interval_ms": 60_000}
        settings.update(config)
        machine = GroupMachine(GroupConfig(**settings), protocol or UnitsProtocol(),
                               jitter=lambda: 0.5)
        node = self.nodes[name] = Node(name, machine)
        machine.start(self.now)
        self.pump()
        return node

    def crash(self, name: str) -> Node:
        """The process dies: nothing more is sent or answered, no LeaveGroup."""
        node = self.nodes.pop(name)
        node.alive = False
        return node

    def pump(self) -> None:
        """Deliver everything that can happen at ``now`` until nothing moves."""
        moved = True
        while moved:
            moved = False
            self.coordinator.tick(self.now)
            for node in list(self.nodes.values()):
                if node.polling:
                    node.machine.application_polled(self.now)
                for out in node.machine.poll(self.now):
                    moved = True
                    node.outputs.append(out)
                    self._carry_out(node, out)
            for (name, token), response in self.coordinator.ready():
                moved = True
                node = self.nodes.get(name)
                if node is not None and node.alive:
                    node.machine.on_response(token, response, self.now)
            self.steps += 1
            assert self.steps < 100_000, "the group never settles"

    def _carry_out(self, node: Node, out: Output) -> None:
        if isinstance(out, Send):
            if out.destination is Destination.ANY_BROKER:
                node_id, host, port = COORDINATOR_NODE
                node.machine.on_response(out.token, FindCoordinatorResponse(
                    error_code=0, node_id=node_id, host=host, port=port), self.now)
            else:
                self.coordinator.handle((node.name, out.token), out.request, self.now)
        elif isinstance(out, Revoked) and node.revoke_promptly:
            node.machine.revocation_done(self.now)
        elif isinstance(out, Assigned) and out.revoked:
            # what the runtime does for a cooperative protocol: give up, then rebalance again
            node.machine.request_rejoin(self.now, f"gave up {sorted(map(str, out.revoked))}")

    def next_deadline(self) -> float | None:
        times = [t for t in (n.machine.next_deadline() for n in self.nodes.values())
                 if t is not None]
        coordinator = self.coordinator.next_deadline()
        if coordinator is not None:
            times.append(coordinator)
        return min(times) if times else None

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass, stopping at every deadline on the way."""
        end = self.now + seconds
        self.pump()
        while True:
            deadline = self.next_deadline()
            if deadline is None or deadline > end:
                break
            self.now = max(self.now, deadline)
            self.pump()
        self.now = end
        self.pump()

    def run_until(self, done: Callable[[], bool], limit: float = 600.0) -> float:
        """Advance deadline by deadline until ``done()``; fail if ``limit`` seconds pass first."""
        start = self.now
        self.pump()
        while not done():
            deadline = self.next_deadline()
            assert deadline is not None and deadline - start <= limit, \
                f"not done after {limit} s of fake time"
            self.now = max(self.now, deadline)
            self.pump()
        return self.now - start

    def settled(self) -> bool:
        """Coordinator and every live member STABLE in one generation; no unit held twice."""
        nodes = list(self.nodes.values())
        if self.coordinator.state is not GroupState.STABLE:
            return False
        if not nodes or any(n.machine.state is not MemberState.STABLE for n in nodes):
            return False
        if any(n.machine.generation_id != self.coordinator.generation for n in nodes):
            return False
        held = [u for n in nodes for u in n.units]
        return len(held) == len(set(held))

    def assignments(self) -> dict[str, frozenset[Hashable]]:
        return {name: node.units for name, node in self.nodes.items()}

    def last_assigned(self, name: str) -> Assigned:
        return self.nodes[name].seen(Assigned)[-1]
