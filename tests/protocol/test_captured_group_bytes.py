"""Consumer-protocol bytes written by kafka-python, aiokafka and confluent-kafka, decoded by groupkit.

The bytes in tests/fixtures/group_bytes.json were captured on the wire by
tests/fixtures/capture_group_bytes.py: JoinGroup subscriptions, leaders' SyncGroup assignments
and what each member got back, for each client alone and in mixed groups, with every strategy
the client offers. The broker (Tansu) answers DescribeGroups with no members, so this is where
Admin's member decoding meets what real peers write.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from assignors import TopicPartition
from assignors.sticky_data import decode_sticky_user_data
from groupkit.admin_values import CONSUMER_PROTOCOL_TYPE, MemberDescription
from groupkit.protocol.consumer import LATEST_VERSION, Assignment, Subscription
from groupkit.protocol.messages.describe_groups import (
    DescribeGroupsResponse,
    DescribeGroupsResponseGroup,
    DescribeGroupsResponseMember,
)
from tests.support.peers import STRATEGIES

FIXTURE = Path(__file__).parents[1] / "fixtures" / "group_bytes.json"
CAPTURES: list[dict[str, Any]] = json.loads(FIXTURE.read_text())["captures"]
COOPERATIVE = {"cooperative-sticky"}
STICKY = {"sticky", "cooperative-sticky"}
NONE = 0

Partitions = set[tuple[str, int]]


def by_setup(strategies: set[str] | None = None) -> Any:
    """Parametrize over the captures (those using one of ``strategies`` when given)."""
    chosen = [c for c in CAPTURES if strategies is None or c["strategy"] in strategies]
    return pytest.mark.parametrize("capture", chosen, ids=[c["setup"] for c in chosen])


def all_partitions(capture: dict[str, Any]) -> Partitions:
    return {(topic, p) for topic, count in capture["topics"].items() for p in range(count)}


def held(assignment: Assignment | Subscription) -> list[tuple[str, int]]:
    entries = (assignment.partitions if isinstance(assignment, Assignment)
               else assignment.owned_partitions)
    return [(topic, p) for topic, numbers in entries for p in numbers]


def subscriptions(capture: dict[str, Any]) -> list[tuple[dict[str, Any], str, bytes]]:
    """(join entry, protocol name, metadata bytes) for every protocol of every JoinGroup."""
    return [(join, p["name"], bytes.fromhex(p["metadata"]))
            for join in capture["joins"] for p in join["protocols"]]


def leader_syncs(capture: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in capture["syncs"] if s["assignments"]]


def leader_assignments(sync: dict[str, Any]) -> dict[str, bytes]:
    return {a["member_id"]: bytes.fromhex(a["assignment"]) for a in sync["assignments"]}


def previous_assignment(capture: dict[str, Any], member_id: str,
                        before: int) -> tuple[int, Partitions] | None:
    """The generation and partitions of the last successful SyncGroup answer the member had
    received when it sent request ``before``."""
    answers = [s for s in capture["syncs"] if s["member_id"] == member_id
               and s["error_code"] == NONE and s["answered_seq"] < before]
    if not answers:
        return None
    last = max(answers, key=lambda s: s["answered_seq"])
    return last["generation_id"], set(held(Assignment.decode(bytes.fromhex(last["assignment"]))))


def test_the_fixture_covers_every_client_strategy_leader_and_a_mixed_group() -> None:
    offered = {(client, s) for client, names in STRATEGIES.items() for s in names}
    joined = {(join["client"], name) for c in CAPTURES for join, name, _ in subscriptions(c)}
    assert joined == offered
    leaders = {(s["client"], c["strategy"]) for c in CAPTURES for s in leader_syncs(c)}
    assert leaders == offered
    mixed = [c for c in CAPTURES if len({m["client"] for m in c["members"]}) == 3]
    assert {c["strategy"] for c in mixed} == {"range", "roundrobin"}
    assert all(m["client_version"] for c in CAPTURES for m in c["members"])


@by_setup()
def test_every_subscription_decodes_to_the_subscribed_topics(capture: dict[str, Any]) -> None:
    entries = subscriptions(capture)
    assert len(entries) >= 2 * len(capture["members"])
    for join, name, data in entries:
        subscription = Subscription.decode(data)
        assert name == capture["strategy"]
        assert sorted(subscription.topics) == sorted(capture["topics"]), join["client_id"]
        if join["error_code"] == NONE:
            assert join["protocol_name"] == capture["strategy"]


@by_setup()
def test_every_generation_assigns_each_partition_at_most_once(capture: dict[str, Any]) -> None:
    everything = all_partitions(capture)
    leader_joins = {j["generation_id"]: j for j in capture["joins"]
                    if j["error_code"] == NONE and j["assigned_member_id"] == j["leader"]}
    syncs = leader_syncs(capture)
    assert syncs
    for sync in syncs:
        assignments = {m: Assignment.decode(data) for m, data in leader_assignments(sync).items()}
        assert set(assignments) == set(leader_joins[sync["generation_id"]]["members"])
        given = [tp for a in assignments.values() for tp in held(a)]
        assert len(given) == len(set(given)), f"generation {sync['generation_id']} repeats some"
        assert set(given) <= everything
        if capture["strategy"] not in COOPERATIVE:
            assert set(given) == everything
    final = max(syncs, key=lambda s: s["generation_id"])
    assert len(final["assignments"]) == len(capture["members"])
    assert {tp for data in leader_assignments(final).values()
            for tp in held(Assignment.decode(data))} == everything


@by_setup()
def test_each_member_gets_what_its_leader_assigned(capture: dict[str, Any]) -> None:
    assigned = {(s["generation_id"], m): Assignment.decode(data)
                for s in leader_syncs(capture) for m, data in leader_assignments(s).items()}
    answered = [s for s in capture["syncs"] if s["error_code"] == NONE]
    assert {s["client_id"] for s in answered} == {m["client_id"] for m in capture["members"]}
    for sync in answered:
        got = Assignment.decode(bytes.fromhex(sync["assignment"]))
        assert got == assigned[sync["generation_id"], sync["member_id"]]


@by_setup(STICKY)
def test_what_a_sticky_member_says_it_owns_is_its_latest_assignment(
        capture: dict[str, Any]) -> None:
    # A member may rejoin before adopting the assignment it just received (kafka-python does
    # when its metadata changed meanwhile) and then claims nothing; whatever it does claim
    # must be exactly the latest assignment it received.
    sticky_claims = owned_claims = 0
    for join, _, data in subscriptions(capture):
        subscription = Subscription.decode(data)
        previous = previous_assignment(capture, join["member_id"], join["seq"])
        owned = set(held(subscription))
        if subscription.user_data:
            partitions, generation = decode_sticky_user_data(subscription.user_data)
            assert previous is not None, join
            assert set(partitions) == previous[1]
            # aiokafka never tells its sticky assignor the generation, so it writes -1.
            assert generation == (-1 if join["client"] == "aiokafka" else previous[0])
            sticky_claims += 1
        if capture["strategy"] in COOPERATIVE:
            assert owned in (set(), previous[1] if previous else set()), join
            owned_claims += bool(owned)
        else:
            assert owned == set()
    assert owned_claims if capture["strategy"] in COOPERATIVE else sticky_claims


@by_setup(STICKY)
def test_sticky_user_data_in_assignments_decodes(capture: dict[str, Any]) -> None:
    for sync in leader_syncs(capture):
        for data in leader_assignments(sync).values():
            user_data = Assignment.decode(data).user_data
            if user_data:
                partitions, _ = decode_sticky_user_data(user_data)
                assert {(tp.topic, tp.partition) for tp in partitions} <= all_partitions(capture)


@by_setup()
def test_reencoding_at_the_captured_version_gives_the_same_bytes(capture: dict[str, Any]) -> None:
    encoded = [(Subscription, data) for _, _, data in subscriptions(capture)]
    encoded += [(Assignment, data) for s in leader_syncs(capture)
                for data in leader_assignments(s).values()]
    for kind, data in encoded:
        value = kind.decode(data)
        assert value.version is not None and value.version <= LATEST_VERSION
        assert value.encode(value.version) == data


def final_members(capture: dict[str, Any]) -> list[DescribeGroupsResponseMember]:
    """The settled generation's members as a coordinator would describe them."""
    final = max(leader_syncs(capture), key=lambda s: s["generation_id"])
    joins = {j["assigned_member_id"]: j for j in capture["joins"]
             if j["error_code"] == NONE and j["generation_id"] == final["generation_id"]}
    return [DescribeGroupsResponseMember(
        member_id=member_id, client_id=joins[member_id]["client_id"], client_host="/127.0.0.1",
        member_metadata=next(bytes.fromhex(p["metadata"]) for p in joins[member_id]["protocols"]
                             if p["name"] == capture["strategy"]),
        member_assignment=data) for member_id, data in leader_assignments(final).items()]


@by_setup()
@pytest.mark.parametrize("version", range(DescribeGroupsResponse.MIN_VERSION,
                                          DescribeGroupsResponse.MAX_VERSION + 1))
def test_admin_describe_groups_decoding_gives_the_captured_topic_partitions(
        capture: dict[str, Any], version: int) -> None:
    group = DescribeGroupsResponseGroup(
        error_code=NONE, group_id=capture["group"], group_state="Stable",
        protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_data=capture["strategy"],
        members=final_members(capture))
    wire = DescribeGroupsResponse(groups=[group]).encode(version)
    (decoded,) = DescribeGroupsResponse.decode(wire, version).groups
    described = [MemberDescription.from_wire(m, decoded.protocol_type) for m in decoded.members]
    assert {d.client_id for d in described} == {m["client_id"] for m in capture["members"]}
    everyone: Counter[TopicPartition] = Counter()
    for description in described:
        assert description.subscription is not None and description.assignment is not None
        assert sorted(description.subscription.topics) == sorted(capture["topics"])
        everyone.update(description.assignment)
    assert set(everyone.values()) == {1}
    assert set(everyone) == {TopicPartition(t, p) for t, p in all_partitions(capture)}
