"""Membership machines against a real broker (Tansu), over real connections.

The runtime's group thread is tested elsewhere; this checks that the machine's requests, as
built, are what a broker accepts and that its reading of real answers forms a group: the
MEMBER_ID_REQUIRED round trip, the leader's assignment reaching the follower, heartbeats, and a
LeaveGroup handing everything to the survivor. Only broker-neutral facts are asserted.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable

import attrs
import pytest

from groupkit.group import (
    Assigned,
    CoordinatorChanged,
    Destination,
    Fatal,
    GroupConfig,
    GroupMachine,
    Left,
    MemberState,
    Revoked,
    Send,
)
from groupkit.runtime.connection import BrokerConnection
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.group.group_cluster import UnitsProtocol

pytestmark = pytest.mark.broker


@attrs.define
class Member:
    machine: GroupMachine
    bootstrap: BrokerConnection
    coordinator: BrokerConnection | None = None
    inflight: dict[concurrent.futures.Future, int] = attrs.field(factory=dict)
    seen: list = attrs.field(factory=list)

    def step(self, now: float) -> None:
        for out in self.machine.poll(now):
            self.seen.append(out)
            assert not isinstance(out, Fatal), out.error
            if isinstance(out, CoordinatorChanged):
                if self.coordinator is not None:
                    self.coordinator.close()
                self.coordinator = BrokerConnection(out.host, out.port)
            elif isinstance(out, Revoked):
                self.machine.revocation_done(now)
            elif isinstance(out, Send):
                conn = self.bootstrap if out.destination is Destination.ANY_BROKER \
                    else self.coordinator
                assert conn is not None
                self.inflight[conn.send(out.request, timeout_ms=out.timeout_ms)] = out.token

    def deliver(self, now: float) -> None:
        for future in [f for f in self.inflight if f.done()]:
            token = self.inflight.pop(future)
            error = future.exception()
            if error is None:
                self.machine.on_response(token, future.result(), now)
            else:
                self.machine.on_request_failed(token, error, now)

    def close(self) -> None:
        for conn in (self.bootstrap, self.coordinator):
            if conn is not None:
                conn.close()


def run_until(members: list[Member], done: Callable[[], bool], limit: float = 30.0) -> None:
    """Drive every member until ``done()``; sleep only until the next deadline or answer."""
    end = time.monotonic() + limit
    while not done():
        now = time.monotonic()
        assert now < end, f"not done within {limit} s: {[m.machine.state for m in members]}"
        for member in members:
            member.machine.application_polled(now)
            member.deliver(now)
            member.step(now)
        deadlines = [d for d in (m.machine.next_deadline() for m in members) if d is not None]
        wait = max(0.0, min([*deadlines, end]) - time.monotonic())
        futures = [f for m in members for f in m.inflight]
        if futures:
            concurrent.futures.wait(futures, timeout=wait,
                                    return_when=concurrent.futures.FIRST_COMPLETED)
        elif wait:
            time.sleep(min(wait, 0.05))


def test_two_machines_form_a_group_on_a_real_broker_and_one_leaves(
        kafka_broker: LocalBroker, unique_name: Callable[[str], str]) -> None:  # noqa: F811
    group = unique_name("group")
    members = [
        Member(GroupMachine(GroupConfig(group_id=group, session_timeout_ms=6_000,
                                        heartbeat_interval_ms=500, rebalance_timeout_ms=10_000),
                            UnitsProtocol()),
               BrokerConnection(kafka_broker.host, kafka_broker.port))
        for _ in range(2)]
    try:
        now = time.monotonic()
        members[0].machine.start(now)
        members[1].machine.start(now)

        def formed() -> bool:
            machines = [m.machine for m in members]
            return all(m.state is MemberState.STABLE for m in machines) \
                and len({m.generation_id for m in machines}) == 1 \
                and sum(m.is_leader for m in machines) == 1

        run_until(members, formed, limit=40.0)
        held = [m.machine.owned for m in members]
        assert held[0] | held[1] == frozenset(UnitsProtocol().units)
        assert not held[0] & held[1] and held[0] and held[1]
        assert all(m.machine.member_id for m in members)

        # heartbeats keep both in the same generation
        generation = members[0].machine.generation_id
        beats_before = sum(1 for m in members for o in m.seen if isinstance(o, Send)
                           and type(o.request).__name__ == "HeartbeatRequest")
        stop = time.monotonic() + 1.5
        run_until(members, lambda: time.monotonic() >= stop, limit=5.0)
        beats = sum(1 for m in members for o in m.seen if isinstance(o, Send)
                    and type(o.request).__name__ == "HeartbeatRequest") - beats_before
        assert beats >= 2 and members[0].machine.generation_id == generation

        leaving, staying = members
        leaving.machine.leave(time.monotonic())
        run_until([leaving, staying], lambda: leaving.machine.state is MemberState.CLOSED
                  and staying.machine.state is MemberState.STABLE
                  and staying.machine.generation_id > generation, limit=40.0)
        assert any(isinstance(o, Left) for o in leaving.seen)
        assert staying.machine.owned == frozenset(UnitsProtocol().units)
        assert [o for o in staying.seen if isinstance(o, Assigned)][-1].added
    finally:
        for member in members:
            member.close()
