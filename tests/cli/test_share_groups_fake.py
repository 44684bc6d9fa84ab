"""``groups list`` and ``groups describe`` with share groups (KIP-932), against a fake broker:
neither test broker here lists or describes share groups (Tansu has no share-group APIs,
confluent-kafka's mock cluster has no ShareGroupDescribe and no ListGroups), so a fake answers
as Kafka 4.1 does: ListGroups v5 with each group's type, ShareGroupDescribe (77) with the
members of a share group, two of them sharing one partition as Kafka's share assignor does when
members outnumber partitions, and GROUP_ID_NOT_FOUND for groups of other types."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from groupkit.errors import ApiKey, ErrorCode
from groupkit.protocol.headers import RequestHeader, decode_request_frame
from groupkit.protocol.messages.list_groups import ListGroupsResponse, ListGroupsResponseGroup
from groupkit.protocol.messages.share_group import (
    ShareGroupDescribeAssignment,
    ShareGroupDescribeGroup,
    ShareGroupDescribeMember,
    ShareGroupDescribeResponse,
    ShareGroupDescribeTopicPartitions,
)
from groupkit.protocol.versions import CLIENT_VERSIONS
from tests.support.cli_groups import run_cli
from tests.support.fake_broker import FakeCluster

TOPIC_ID = uuid.UUID(int=9)
GROUPS = [("orders-share", "share", "share", "Stable"),
          ("orders-consumers", "consumer", "consumer", "Stable"),
          ("legacy", "consumer", "classic", "Empty")]


def _member(member_id: str, partitions: list[int]) -> ShareGroupDescribeMember:
    return ShareGroupDescribeMember(
        member_id=member_id, member_epoch=7, client_id=f"client-{member_id}",
        client_host="/10.0.0.1", subscribed_topic_names=["orders"],
        assignment=ShareGroupDescribeAssignment(topic_partitions=[
            ShareGroupDescribeTopicPartitions(topic_id=TOPIC_ID, topic_name="orders",
                                              partitions=partitions)]))


class ShareCluster(FakeCluster):
    def __init__(self, versions: dict[int, tuple[int, int]] | None = None) -> None:
        super().__init__(self._respond, {"orders": 1}, versions)

    def _respond(self, header: RequestHeader, frame: bytes) -> bytes:
        _, request = decode_request_frame(frame)
        response: Any
        if header.api_key == ApiKey.LIST_GROUPS:
            wanted = set(request.types_filter)
            response = ListGroupsResponse(error_code=0, groups=[
                ListGroupsResponseGroup(group_id=g, protocol_type=p, group_state=s,
                                        group_type=t)
                for g, p, t, s in GROUPS if not wanted or t in wanted])
        else:
            assert header.api_key == ApiKey.SHARE_GROUP_DESCRIBE
            response = ShareGroupDescribeResponse(groups=[
                ShareGroupDescribeGroup(
                    error_code=0, group_id=g, group_state="Stable", group_epoch=7,
                    assignment_epoch=7, assignor_name="simple",
                    members=[_member("m1", [0]), _member("m2", [0]), _member("m3", [0])])
                if g == "orders-share" else ShareGroupDescribeGroup(
                    error_code=ErrorCode.GROUP_ID_NOT_FOUND, group_id=g, group_state="",
                    group_epoch=0, assignment_epoch=0, assignor_name="")
                for g in request.group_ids])
        return response.encode(header.api_version)


@pytest.fixture
def cluster() -> Any:
    made = ShareCluster()
    yield made
    made.close()


def test_list_shows_the_type_and_filters_by_it(cluster: ShareCluster, capsys: Any) -> None:
    status, out, err = run_cli(capsys, "groups", "list", "--bootstrap-server",
                               cluster.bootstrap_servers, "--output", "json")
    assert status == 0, err
    assert {(g["group"], g["type"]) for g in json.loads(out)} == {
        ("orders-share", "share"), ("orders-consumers", "consumer"), ("legacy", "classic")}
    status, out, err = run_cli(capsys, "groups", "list", "--bootstrap-server",
                               cluster.bootstrap_servers, "--type", "share")
    assert status == 0, err
    assert "orders-share" in out and "orders-consumers" not in out and "TYPE" in out


def test_describe_shows_a_share_groups_members_sharing_a_partition(
        cluster: ShareCluster, capsys: Any) -> None:
    status, out, err = run_cli(capsys, "groups", "describe", "orders-share",
                               "--bootstrap-server", cluster.bootstrap_servers,
                               "--output", "json")
    assert status == 0, err
    [group] = json.loads(out)
    assert (group["type"], group["state"], group["assignor"], group["group_epoch"]) == (
        "share", "Stable", "simple", 7)
    assert [m["assignment"] for m in group["members"]] == [[["orders", 0]]] * 3
    status, out, _ = run_cli(capsys, "groups", "describe", "orders-share",
                             "--bootstrap-server", cluster.bootstrap_servers)
    assert "SHARE GROUP orders-share" in out and "MEMBERS 3" in out and "no lag" in out


def test_a_broker_that_cannot_list_by_type_is_named(capsys: Any) -> None:
    old = ShareCluster({**CLIENT_VERSIONS, ApiKey.LIST_GROUPS: (0, 4)})
    try:
        status, _, err = run_cli(capsys, "groups", "list", "--bootstrap-server",
                                 old.bootstrap_servers, "--type", "share")
    finally:
        old.close()
    assert status != 0
    assert old.bootstrap_servers in err and "up to v4" in err and "v5 (Kafka 4.0+)" in err
