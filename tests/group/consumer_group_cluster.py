"""Consumer-protocol members (``ConsumerGroupMachine``) and one fake coordinator on a fake clock.

Each node plays its application the way groupkit's Consumer does: it takes every output in
order, holds what ``Assigned`` gives, gives up what ``Revoked`` and ``Lost`` name, and answers
``Revoked`` with ``revocation_done`` and ``Assigned`` with ``assignment_applied``; a node can
hold its answers back (a slow application) or die. FindCoordinator and Metadata are answered at
once; heartbeats go to the ``FakeConsumerCoordinator``. After every delivery the cluster checks
that no partition is held by two live applications, and records the first time it was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from assignors import TopicPartition
from groupkit.group import GroupConfig
from groupkit.group.kip848 import ConsumerGroupMachine, MemberState, SubscriptionHolder
from groupkit.group.outputs import Assigned, Destination, Lost, Output, Revoked, Send
from groupkit.protocol.messages.consumer_group import ConsumerGroupHeartbeatRequest
from groupkit.protocol.messages.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from groupkit.protocol.messages.metadata import MetadataRequest
from tests.group.fake_consumer_coordinator import FakeConsumerCoordinator, MemberPhase

COORDINATOR = (1, "broker-1", 9092)


@attrs.define
class Node:
    """One member process: its machine, its application's holdings and what it was told."""

    name: str
    machine: ConsumerGroupMachine
    subscription: SubscriptionHolder
    outputs: list[Output] = attrs.field(factory=list)
    held: set[TopicPartition] = attrs.field(factory=set)
    polling: bool = True
    answering: bool = True
    alive: bool = True
    unanswered: list[Output] = attrs.field(factory=list)
    sent: list[Send] = attrs.field(factory=list)

    def seen(self, kind: type) -> list[Any]:
        return [o for o in self.outputs if isinstance(o, kind)]

    def heartbeats(self) -> list[ConsumerGroupHeartbeatRequest]:
        return [s.request for s in self.sent
                if isinstance(s.request, ConsumerGroupHeartbeatRequest)]


@attrs.define
class ConsumerGroupCluster:
    coordinator: FakeConsumerCoordinator = attrs.field(factory=FakeConsumerCoordinator)
    now: float = 0.0
    nodes: dict[str, Node] = attrs.field(factory=dict)
    steps: int = 0
    #: (time, partition, holders) the first time two live applications held one partition.
    overlap: tuple[float, TopicPartition, list[str]] | None = None

    def add(self, name: str, topics: tuple[str, ...] = ("t",), pattern: str | None = None,
            member_id: str | None = None, **config: Any) -> Node:
        settings: dict[str, Any] = {"group_id": "g", "max_poll_interval_ms": 60_000,
                                    "retry_backoff_ms": 100, "retry_backoff_max_ms": 1_000}
        settings.update(config)
        subscription = SubscriptionHolder()
        subscription.subscribe(topics if pattern is None else (), pattern)
        machine = ConsumerGroupMachine(GroupConfig(**settings), subscription,
                                       jitter=lambda: 0.5,
                                       make_member_id=lambda: member_id or f"id-{name}")
        node = self.nodes[name] = Node(name, machine, subscription)
        machine.start(self.now)
        self.pump()
        return node

    def crash(self, name: str) -> Node:
        """The process dies: nothing more is sent or answered; its application holds nothing."""
        node = self.nodes.pop(name)
        node.alive = False
        node.held.clear()
        return node

    def slow(self, name: str) -> None:
        """The application stops answering (it is busy between polls, though still within its
        poll interval: it keeps polling, so the member stays in the group)."""
        self.nodes[name].answering = False

    def answer_pending(self, name: str) -> None:
        """A slow application catches up: it answers what it held back, in order."""
        node = self.nodes[name]
        node.answering = True
        pending, node.unanswered = node.unanswered, []
        for out in pending:
            self._answer(node, out)
        self.pump()

    def pump(self) -> None:
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
                    self._check_overlap()
            self.steps += 1
            assert self.steps < 200_000, "the group never settles"

    def _carry_out(self, node: Node, out: Output) -> None:
        if isinstance(out, Send):
            node.sent.append(out)
            request = out.request
            if isinstance(request, FindCoordinatorRequest):
                assert out.destination is Destination.ANY_BROKER
                node_id, host, port = COORDINATOR
                node.machine.on_response(out.token, FindCoordinatorResponse(
                    node_id=node_id, host=host, port=port), self.now)
            elif isinstance(request, MetadataRequest):
                names = None if request.topics is None else [t.name or "" for t in request.topics]
                node.machine.on_response(out.token, self.coordinator.metadata(names), self.now)
            else:
                assert isinstance(request, ConsumerGroupHeartbeatRequest)
                assert out.heartbeat and out.destination is Destination.COORDINATOR
                node.machine.on_response(out.token, self.coordinator.heartbeat(request, self.now),
                                         self.now)
        elif isinstance(out, Assigned | Revoked | Lost):
            # The application takes them in order (in its poll), as the Consumer does.
            if node.answering and not node.unanswered:
                self._answer(node, out)
            else:
                node.unanswered.append(out)

    def _answer(self, node: Node, out: Output) -> None:
        if isinstance(out, Lost):
            node.held -= set(out.units)  # lost needs no answer
        elif isinstance(out, Revoked):
            node.held -= set(out.units)
            node.machine.revocation_done(self.now)
        elif isinstance(out, Assigned):
            node.held = set(out.units)
            node.machine.assignment_applied(self.now)

    def _check_overlap(self) -> None:
        if self.overlap is not None:
            return
        seen: dict[TopicPartition, str] = {}
        for node in self.nodes.values():
            for tp in node.held:
                if tp in seen:
                    self.overlap = (self.now, tp, [seen[tp], node.name])
                    return
                seen[tp] = node.name

    def next_deadline(self) -> float | None:
        times = [t for t in (n.machine.next_deadline() for n in self.nodes.values())
                 if t is not None]
        return min(times) if times else None

    def advance(self, seconds: float) -> None:
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

    def run_until(self, done: Callable[[], bool], limit: float = 120.0) -> float:
        start = self.now
        self.pump()
        while not done():
            deadline = self.next_deadline()
            assert deadline is not None and deadline - start <= limit, \
                f"not done after {limit} s of fake time"
            self.now = max(self.now, deadline)
            self.pump()
        return self.now - start

    def settled(self, partitions: int) -> bool:
        """Every live member STABLE, every partition held by exactly one application."""
        nodes = list(self.nodes.values())
        if not nodes or any(n.machine.state is not MemberState.STABLE for n in nodes):
            return False
        coordinator = self.coordinator
        if any(m.epoch != coordinator.target_epoch or m.phase is not MemberPhase.STABLE
               or m.assigned != coordinator.target.get(m.member_id, set())
               for m in coordinator.members.values() if not m.left_static):
            return False
        held = [tp for n in nodes for tp in n.held]
        return len(held) == len(set(held)) == partitions
