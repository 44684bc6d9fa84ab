"""Whole groups on a fake clock: several membership machines against the fake coordinator."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from groupkit.group import Assigned, Left, Lost, MemberState, Revoked
from tests.group.fake_coordinator import GroupState
from tests.group.group_cluster import Cluster, UnitsProtocol

ALL_UNITS = frozenset(UnitsProtocol().units)


def test_three_members_form_a_group_with_one_leader() -> None:
    cluster = Cluster()
    for name in ("a", "b", "c"):
        cluster.add(name)
    cluster.run_until(cluster.settled)
    machines = [n.machine for n in cluster.nodes.values()]
    assert sum(m.is_leader for m in machines) == 1
    assert len({m.generation_id for m in machines}) == 1
    held = cluster.assignments()
    assert frozenset().union(*held.values()) == ALL_UNITS
    assert all(len(units) == 2 for units in held.values())
    assert cluster.coordinator.state is GroupState.STABLE


def _formed(*names: str, **config: object) -> Cluster:
    cluster = Cluster()
    for name in names:
        cluster.add(name, **config)
    cluster.run_until(cluster.settled)
    return cluster


def test_a_member_that_leaves_hands_its_units_to_the_others() -> None:
    cluster = _formed("a", "b", "c")
    generation = cluster.coordinator.generation
    cluster.nodes["c"].machine.leave(cluster.now)
    cluster.pump()
    gone = cluster.nodes.pop("c")
    assert gone.machine.state is MemberState.CLOSED
    assert isinstance(gone.outputs[-1], Left)
    took = cluster.run_until(cluster.settled)
    assert cluster.coordinator.generation == generation + 1
    assert frozenset().union(*cluster.assignments().values()) == ALL_UNITS
    # the survivors notice at their next heartbeat, well inside one heartbeat interval
    assert took <= 1.0 + 1e-6


def test_a_crashed_member_is_expired_after_its_session_and_the_rest_rebalance() -> None:
    cluster = _formed("a", "b", "c")
    generation = cluster.coordinator.generation
    cluster.crash("b")
    took = cluster.run_until(
        lambda: cluster.coordinator.generation > generation and cluster.settled())
    assert 10.0 <= took <= 12.0
    assert set(cluster.nodes) == {"a", "c"}
    assert frozenset().union(*cluster.assignments().values()) == ALL_UNITS


def test_an_idle_stable_group_only_wakes_for_heartbeats() -> None:
    cluster = _formed("a", "b")
    generation = cluster.coordinator.generation
    before = cluster.steps
    cluster.advance(30.0)
    assert cluster.coordinator.generation == generation
    assert cluster.settled()
    # one heartbeat per member per second of fake time, and a bounded number of steps for it
    heartbeats = [o for n in cluster.nodes.values() for o in n.outputs
                  if type(o).__name__ == "Send" and type(o.request).__name__ == "HeartbeatRequest"]
    assert 58 <= len(heartbeats) <= 64
    assert cluster.steps - before < 400


@pytest.mark.parametrize("restarting", ["a", "b"])
def test_a_static_member_restarting_within_its_session_keeps_its_units_without_rebalance(
        restarting: str) -> None:
    cluster = Cluster()
    cluster.add("a", group_instance_id="inst-a")
    cluster.add("b", group_instance_id="inst-b")
    cluster.run_until(cluster.settled)
    assert cluster.nodes["a"].machine.is_leader
    generation, rebalances = cluster.coordinator.generation, cluster.coordinator.rebalances
    old = cluster.crash(restarting)
    cluster.advance(3.0)
    again = cluster.add(restarting, group_instance_id=f"inst-{restarting}")
    cluster.run_until(cluster.settled)
    assert cluster.coordinator.generation == generation
    assert cluster.coordinator.rebalances == rebalances
    assert again.units == old.units
    assert again.machine.member_id != old.machine.member_id
    # the leader came back with skip_assignment: it must not have run the assignor again
    assert again.machine.is_leader == (restarting == "a")
    assert again.machine.protocol.assigned == []  # type: ignore[attr-defined]


def test_a_static_member_closing_does_not_leave_unless_asked() -> None:
    cluster = Cluster()
    cluster.add("a", group_instance_id="inst-a")
    cluster.add("b", group_instance_id="inst-b")
    cluster.add("c", group_instance_id="inst-c", leave_group_on_close=True)
    cluster.run_until(cluster.settled)
    generation = cluster.coordinator.generation
    for name in ("b", "c"):
        cluster.nodes[name].machine.leave(cluster.now)
    cluster.pump()
    leaves = {name: [o for o in cluster.nodes[name].outputs if type(o).__name__ == "Send"
                     and type(o.request).__name__ == "LeaveGroupRequest"] for name in ("b", "c")}
    assert leaves["b"] == []
    assert [m.group_instance_id for m in leaves["c"][0].request.members] == ["inst-c"]
    assert set(cluster.coordinator.static) == {"inst-a", "inst-b"}
    assert cluster.coordinator.generation == generation
    assert cluster.nodes["b"].machine.state is MemberState.CLOSED


def test_a_member_that_stops_polling_leaves_and_rejoins_on_its_next_poll() -> None:
    cluster = _formed("a", "b")
    slow = cluster.nodes["b"]
    slow.polling = False
    cluster.advance(60.0)
    assert slow.machine.state is MemberState.UNJOINED
    lost, left = slow.seen(Lost), slow.seen(Left)
    assert lost and lost[-1].units and left
    assert "max_poll_interval_ms" in left[-1].reason
    cluster.run_until(lambda: cluster.nodes["a"].units == ALL_UNITS)
    slow.polling = True
    cluster.run_until(cluster.settled)
    assert slow.units and cluster.nodes["a"].units != ALL_UNITS


def test_eager_members_revoke_everything_before_rejoining() -> None:
    cluster = _formed("a", "b")
    cluster.add("c")
    cluster.run_until(cluster.settled)
    for name in ("a", "b"):
        node = cluster.nodes[name]
        revoked = node.seen(Revoked)
        assert revoked and len(revoked[-1].units) == 3
        assert node.seen(Assigned)[-1].revoked == frozenset()


def test_cooperative_members_keep_units_and_learn_what_moved() -> None:
    cluster = Cluster()
    for name in ("a", "b"):
        cluster.add(name, protocol=UnitsProtocol(cooperative=True))
    cluster.run_until(cluster.settled)
    generation = cluster.coordinator.generation
    before = {name: cluster.nodes[name].units for name in ("a", "b")}
    cluster.add("c", protocol=UnitsProtocol(cooperative=True))
    cluster.run_until(cluster.settled)
    assert not any(cluster.nodes[n].seen(Revoked) for n in ("a", "b"))
    first = {name: next(a for a in cluster.nodes[name].seen(Assigned)
                        if a.generation_id == generation + 1) for name in ("a", "b")}
    for name, assigned in first.items():
        assert assigned.units == (before[name] - assigned.revoked) | assigned.added
    assert any(a.revoked for a in first.values())
    # the runtime (here the cluster) asked for the follow-up rebalance after the revoke
    assert cluster.coordinator.generation == generation + 2
    assert frozenset().union(*cluster.assignments().values()) == ALL_UNITS


EVENTS = st.lists(st.tuples(
    st.sampled_from(["join", "join_static", "crash", "close", "stall", "restart", "wait"]),
    st.integers(0, 5), st.sampled_from([0.0, 0.5, 2.0, 7.0, 15.0])), min_size=1, max_size=12)


@given(EVENTS, st.booleans())
def test_any_history_of_joins_crashes_and_stalls_converges(events: list, cooperative: bool) -> None:
    cluster = Cluster()
    crashed_static: list[str] = []
    serial = 0
    for kind, pick, wait in events:
        names = sorted(cluster.nodes)
        target = names[pick % len(names)] if names else None
        if kind in ("join", "join_static") or target is None:
            serial += 1
            name = f"n{serial}"
            static = {"group_instance_id": f"i-{name}"} if kind == "join_static" else {}
            cluster.add(name, protocol=UnitsProtocol(cooperative=cooperative), **static)
        elif kind == "crash":
            node = cluster.crash(target)
            if node.machine.config.is_static:
                crashed_static.append(target)
        elif kind == "close":
            cluster.nodes.pop(target).machine.leave(cluster.now)
        elif kind == "stall":
            cluster.nodes[target].polling = False
        elif kind == "restart" and crashed_static:
            name = crashed_static.pop()
            cluster.add(name, protocol=UnitsProtocol(cooperative=cooperative),
                        group_instance_id=f"i-{name}")
        cluster.advance(wait)
    for node in cluster.nodes.values():
        node.polling = True
    if not cluster.nodes:
        return
    cluster.run_until(lambda: cluster.settled() and set(cluster.coordinator.members) == {
                          n.machine.member_id for n in cluster.nodes.values()}, limit=300.0)
    assert frozenset().union(*cluster.assignments().values()) == ALL_UNITS
