"""``groups describe`` of consumer-protocol (KIP-848) groups, against a fake one-node cluster.

No broker here can host such a group and describe it: Tansu has ConsumerGroupDescribe (API 69)
but not ConsumerGroupHeartbeat, confluent-kafka's mock cluster the reverse. So the fake answers
ConsumerGroupDescribe as Kafka 4 does (its layout is checked against hand-spelled bytes in
tests/protocol/test_kip848_bytes.py), Tansu's real answer is replayed from
tests/fixtures/kip848_bytes.json, and a coordinator without either describe API stands for the
mock cluster.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from groupkit.errors import ApiKey
from groupkit.protocol.headers import RequestHeader, decode_request_frame
from groupkit.protocol.messages.consumer_group import (
    ConsumerGroupDescribeAssignment,
    ConsumerGroupDescribeGroup,
    ConsumerGroupDescribeMember,
    ConsumerGroupDescribeResponse,
    ConsumerGroupDescribeTopicPartitions,
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
from tests.support.cli_groups import run_cli
from tests.support.fake_broker import FakeCluster, not_a_share_group

CAPS = {ApiKey.OFFSET_FETCH: 7, ApiKey.FETCH: 12, ApiKey.CONSUMER_GROUP_DESCRIBE: 1}
VERSIONS = {k: (lo, min(hi, CAPS.get(k, hi))) for k, (lo, hi) in CLIENT_VERSIONS.items()}
TOPIC, TOPIC_ID, END = "orders", uuid.UUID(int=7), 40
FIXTURE = Path(__file__).parents[1] / "fixtures" / "kip848_bytes.json"


def _assignment(*partitions: int) -> ConsumerGroupDescribeAssignment:
    return ConsumerGroupDescribeAssignment(topic_partitions=[ConsumerGroupDescribeTopicPartitions(
        topic_id=TOPIC_ID, topic_name=TOPIC, partitions=list(partitions))] if partitions else [])


def _consumer_group(group_id: str) -> ConsumerGroupDescribeGroup:
    """A group reconciling: member b still owns 2, which the target gives to a."""
    return ConsumerGroupDescribeGroup(
        group_id=group_id, group_state="Reconciling", group_epoch=9, assignment_epoch=9,
        assignor_name="uniform", members=[
            ConsumerGroupDescribeMember(
                member_id="a", member_epoch=9, client_id="ca", client_host="/10.0.0.1",
                subscribed_topic_names=[TOPIC], assignment=_assignment(0, 1),
                target_assignment=_assignment(0, 1, 2), member_type=1),
            ConsumerGroupDescribeMember(
                member_id="b", instance_id="static-b", member_epoch=8, client_id="cb",
                client_host="/10.0.0.2", subscribed_topic_regex="ord.*",
                assignment=_assignment(2, 3), target_assignment=_assignment(3),
                member_type=1)])


def _tansu_answer(stage: str) -> bytes:
    """Tansu's ConsumerGroupDescribe response body, as captured (header cut off)."""
    entry = next(e for e in json.loads(FIXTURE.read_text())["captures"]["tansu"]
                 if e["stage"] == stage)
    return bytes.fromhex(entry["response"])[5:]  # correlation id (4) and no tags (1)


class Cluster(FakeCluster):
    """Answers with ``describe(header, request)`` for the describe APIs; offsets of ``TOPIC``
    are committed at 10 on every partition, and its log end is ``END``."""

    def __init__(self, describe: Callable[[RequestHeader, Any], bytes],
                 versions: dict[int, tuple[int, int]] = VERSIONS) -> None:
        self.describe = describe
        super().__init__(self._respond, {TOPIC: 4}, versions)

    def _respond(self, header: RequestHeader, frame: bytes) -> bytes:
        _, request = decode_request_frame(frame)
        if header.api_key in (ApiKey.CONSUMER_GROUP_DESCRIBE, ApiKey.DESCRIBE_GROUPS):
            return self.describe(header, request)
        if header.api_key == ApiKey.SHARE_GROUP_DESCRIBE:
            return not_a_share_group(header, request)
        if header.api_key == ApiKey.OFFSET_FETCH:
            response: Any = OffsetFetchResponse(topics=[OffsetFetchResponseTopic(
                name=TOPIC, partitions=[OffsetFetchResponsePartition(
                    partition_index=p, committed_offset=10, metadata="", error_code=0)
                    for p in range(4)])])
        elif header.api_key == ApiKey.LIST_OFFSETS:
            response = ListOffsetsResponse(topics=[ListOffsetsResponseTopic(
                name=t.name, partitions=[ListOffsetsResponsePartition(
                    partition_index=p.partition_index, error_code=0, timestamp=-1, offset=END)
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
def cluster():
    made: list[Cluster] = []

    def make(*args: Any) -> Cluster:
        made.append(Cluster(*args))
        return made[-1]

    yield make
    for fake in made:
        fake.close()


def test_a_consumer_protocol_group_is_described_with_epochs_assignments_and_targets(
        cluster, capsys) -> None:
    def describe(header: RequestHeader, request: Any) -> bytes:
        assert header.api_key == ApiKey.CONSUMER_GROUP_DESCRIBE, "no DescribeGroups needed"
        return ConsumerGroupDescribeResponse(groups=[
            _consumer_group(g) for g in request.group_ids]).encode(header.api_version)

    fake = cluster(describe)
    status, out, err = run_cli(capsys, "groups", "describe", "g", "--output", "json",
                               "--bootstrap-server", fake.bootstrap_servers)
    assert status == 0, err
    [group] = json.loads(out)
    assert (group["state"], group["protocol_type"], group["protocol"], group["group_epoch"]) \
        == ("Reconciling", "consumer", "uniform", 9)
    members = {m["member_id"]: m for m in group["members"]}
    assert [(p["topic"], p["partition"]) for p in members["a"]["target_assignment"]] == [
        (TOPIC, 0), (TOPIC, 1), (TOPIC, 2)]
    assert members["b"]["member_epoch"] == 8 and members["b"]["subscribed_pattern"] == "ord.*"
    assert members["b"]["group_instance_id"] == "static-b"
    owners = {r["partition"]: r["member_id"] for r in group["offsets"]}
    assert owners == {0: "a", 1: "a", 2: "b", 3: "b"}  # the owners now, not the target
    assert {r["lag"] for r in group["offsets"]} == {END - 10}

    status, table, err = run_cli(capsys, "groups", "describe", "g",
                                 "--bootstrap-server", fake.bootstrap_servers)
    assert status == 0, err
    assert "PROTOCOL consumer/uniform  EPOCH 9" in table


def test_a_group_tansu_describes_with_epoch_minus_one_is_asked_again_as_a_classic_group(
        cluster, capsys) -> None:
    asked: list[int] = []

    def describe(header: RequestHeader, request: Any) -> bytes:
        asked.append(header.api_key)
        if header.api_key == ApiKey.CONSUMER_GROUP_DESCRIBE:
            assert header.api_version == 0  # as Tansu: v0 only
            return _tansu_answer("a classic group with a member")
        return DescribeGroupsResponse(groups=[DescribeGroupsResponseGroup(
            error_code=0, group_id=g, group_state="Stable", protocol_type="consumer",
            protocol_data="range", members=[]) for g in request.groups]).encode(
            header.api_version)

    fake = cluster(describe, {**VERSIONS, ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 0)})
    status, out, err = run_cli(capsys, "groups", "describe", "classic", "--output", "json",
                               "--bootstrap-server", fake.bootstrap_servers)
    assert status == 0, err
    assert asked == [ApiKey.CONSUMER_GROUP_DESCRIBE, ApiKey.DESCRIBE_GROUPS]
    [group] = json.loads(out)
    assert (group["protocol"], group["group_epoch"]) == ("range", None)


def test_a_coordinator_without_either_describe_api_says_so(cluster, capsys) -> None:
    # confluent-kafka's mock cluster: no ConsumerGroupDescribe, no DescribeGroups.
    without = {k: v for k, v in VERSIONS.items()
               if k not in (ApiKey.CONSUMER_GROUP_DESCRIBE, ApiKey.DESCRIBE_GROUPS)}
    fake = cluster(lambda header, request: pytest.fail("nothing to describe with"), without)
    status, out, err = run_cli(capsys, "groups", "describe", "g",
                               "--bootstrap-server", fake.bootstrap_servers)
    assert status != 0 and out == ""
    assert f"127.0.0.1:{fake.port} (node 0)" in err
    assert "ConsumerGroupDescribe (API 69" in err and "DescribeGroups (API 15" in err
