"""``groups describe`` and ``groups lag`` end to end against a fake broker that, unlike the local
one, describes members with their consumer-protocol bytes (captured from real peer clients),
and whose ListOffsets "latest" answers less than the Fetch high watermark (as Tansu does), so
the log end and the owners come out as they would on Apache Kafka.

The fake answers OffsetFetch up to v7 (one group per request) and Fetch up to v12 (topics by
name); the other APIs at the newest version both sides speak.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from groupkit.errors import ApiKey, ErrorCode
from groupkit.protocol.headers import RequestHeader, decode_request_frame
from groupkit.protocol.messages.consumer_group import (
    ConsumerGroupDescribeGroup,
    ConsumerGroupDescribeResponse,
)
from groupkit.protocol.messages.describe_groups import (
    DescribeGroupsResponse,
    DescribeGroupsResponseGroup,
)
from groupkit.protocol.messages.fetch import (
    FetchResponse,
    FetchResponsePartition,
    FetchResponseTopic,
)
from groupkit.protocol.messages.list_offsets import (
    EARLIEST_TIMESTAMP,
    ListOffsetsResponse,
    ListOffsetsResponsePartition,
    ListOffsetsResponseTopic,
)
from groupkit.protocol.messages.offset_fetch import (
    OffsetFetchResponse,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)
from groupkit.protocol.versions import CLIENT_VERSIONS
from tests.support.captured_groups import captured_topics, captured_wire_members
from tests.support.cli_groups import run_cli
from tests.support.fake_broker import FakeCluster, not_a_share_group

CAPS = {ApiKey.OFFSET_FETCH: 7, ApiKey.FETCH: 12}
VERSIONS = {k: (lo, min(hi, CAPS.get(k, hi))) for k, (lo, hi) in CLIENT_VERSIONS.items()}
#: Every partition's true log end, and the less that the fake's ListOffsets "latest" answers.
END, LISTED = 50, 31


class GroupCluster(FakeCluster):
    """Describes group "g" with ``members`` and ``committed`` offsets (topic, partition)."""

    def __init__(self, state: str, members: list[Any], committed: dict[tuple[str, int], int]):
        self.state, self.members, self.committed = state, members, committed
        super().__init__(self._respond, captured_topics(), VERSIONS)

    def _respond(self, header: RequestHeader, frame: bytes) -> bytes:
        _, request = decode_request_frame(frame)
        if header.api_key == ApiKey.CONSUMER_GROUP_DESCRIBE:
            # Kafka 4's answer for a group that is not a consumer-protocol group: the client
            # asks again with DescribeGroups (as Java's AdminClient does).
            response: Any = ConsumerGroupDescribeResponse(groups=[ConsumerGroupDescribeGroup(
                error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message=f"Group {g} is not a"
                " consumer group.", group_id=g, group_state="", group_epoch=0,
                assignment_epoch=0, assignor_name="") for g in request.group_ids])
        elif header.api_key == ApiKey.SHARE_GROUP_DESCRIBE:
            return not_a_share_group(header, request)
        elif header.api_key == ApiKey.DESCRIBE_GROUPS:
            response = DescribeGroupsResponse(groups=[DescribeGroupsResponseGroup(
                error_code=0, group_id=g, group_state=self.state,
                protocol_type="consumer" if self.members else "",
                protocol_data="range" if self.members else "", members=self.members)
                for g in request.groups])
        elif header.api_key == ApiKey.OFFSET_FETCH:
            by_topic: dict[str, list[OffsetFetchResponsePartition]] = {}
            for (t, p), o in sorted(self.committed.items()):
                by_topic.setdefault(t, []).append(OffsetFetchResponsePartition(
                    partition_index=p, committed_offset=o, metadata="", error_code=0))
            response = OffsetFetchResponse(topics=[
                OffsetFetchResponseTopic(name=t, partitions=ps) for t, ps in by_topic.items()])
        elif header.api_key == ApiKey.LIST_OFFSETS:
            response = ListOffsetsResponse(topics=[ListOffsetsResponseTopic(
                name=t.name, partitions=[ListOffsetsResponsePartition(
                    partition_index=p.partition_index, error_code=0, timestamp=-1,
                    offset=0 if p.timestamp == EARLIEST_TIMESTAMP else LISTED)
                    for p in t.partitions]) for t in request.topics])
        else:
            assert header.api_key == ApiKey.FETCH
            response = FetchResponse(responses=[FetchResponseTopic(
                topic=t.topic, partitions=[FetchResponsePartition(
                    partition_index=p.partition, error_code=0, high_watermark=END,
                    last_stable_offset=END, records=b"") for p in t.partitions])
                for t in request.topics])
        return response.encode(header.api_version)


@pytest.fixture
def group():
    made: list[GroupCluster] = []

    def make(state: str, members: list[Any], committed: dict[tuple[str, int], int]
             ) -> GroupCluster:
        made.append(GroupCluster(state, members, committed))
        return made[-1]

    yield make
    for cluster in made:
        cluster.close()


def test_describe_names_each_partitions_owner_and_measures_lag_to_the_high_watermark(
        group, capsys) -> None:
    wire, expected = captured_wire_members()
    owner = {tp: m for m, tps in expected.items() for tp in tps}
    first, second, *rest = sorted(owner)
    committed = {first: 20, second: 45, ("retired-topic", 0): 7}
    fake = group("Stable", wire, committed)
    status, out, err = run_cli(capsys, "groups", "describe", "g", "--output", "json",
                               "--bootstrap-server", fake.bootstrap_servers)
    assert status == 0, err
    [described] = json.loads(out)
    assert (described["state"], described["protocol_type"], described["protocol"]) == (
        "Stable", "consumer", "range")
    assert described["coordinator"] == {"id": 0, "host": "127.0.0.1", "port": fake.port}
    assert {m["member_id"]: sorted((a["topic"], a["partition"]) for a in m["assignment"])
            for m in described["members"]} == expected
    rows = {(r["topic"], r["partition"]): r for r in described["offsets"]}
    assert set(rows) == set(owner) | {("retired-topic", 0)}
    assert rows[first] == {"topic": first[0], "partition": first[1], "current_offset": 20,
                                "log_end_offset": END, "lag": END - 20,
                                "member_id": owner[first]}
    assert (rows[second]["lag"], rows[second]["member_id"]) == (END - 45, owner[second])
    for tp in rest:
        assert (rows[tp]["current_offset"], rows[tp]["lag"]) == (None, None)
        assert rows[tp]["member_id"] == owner[tp]
    # A commit for a topic that is gone: shown, with no log end and no lag.
    assert rows[("retired-topic", 0)] == {"topic": "retired-topic", "partition": 0,
                                          "current_offset": 7, "log_end_offset": None,
                                          "lag": None, "member_id": None}

    status, table, err = run_cli(capsys, "groups", "describe", "g",
                                 "--bootstrap-server", fake.bootstrap_servers)
    assert status == 0, err
    assert f"TOTAL-LAG {END - 20 + END - 45}" in table
    line = next(x.split() for x in table.splitlines()
                if x.split()[:2] == [first[0], str(first[1])])
    assert line == [first[0], str(first[1]), "20", str(END), str(END - 20), owner[first],
                    "/10.0.0.1", "c"]


def test_a_group_the_coordinator_calls_dead_does_not_exist(group, capsys) -> None:
    fake = group("Dead", [], {})
    status, out, err = run_cli(capsys, "groups", "describe", "ghost", "--output", "json",
                               "--bootstrap-server", fake.bootstrap_servers)
    assert status == 1 and "group 'ghost' does not exist" in err
    assert json.loads(out)[0]["state"] == "Dead"
    status, out, err = run_cli(capsys, "groups", "lag", "ghost",
                               "--bootstrap-server", fake.bootstrap_servers)
    assert status == 1 and out == "" and "group 'ghost' does not exist" in err
