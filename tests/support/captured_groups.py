"""Group members as a broker would describe them, built from consumer-protocol bytes real peer
clients wrote (tests/fixtures/group_bytes.json: a mixed kafka-python/aiokafka/confluent-kafka
group using the range strategy)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from groupkit.admin_values import MemberDescription
from groupkit.protocol.consumer import Assignment
from groupkit.protocol.messages.describe_groups import DescribeGroupsResponseMember

FIXTURE = Path(__file__).parents[1] / "fixtures" / "group_bytes.json"


def _capture() -> dict[str, Any]:
    return next(c for c in json.loads(FIXTURE.read_text())["captures"]
                if c["setup"].startswith("mixed") and c["strategy"] == "range")


def captured_topics() -> dict[str, int]:
    """The capture's topics and their partition counts."""
    return dict(_capture()["topics"])


def captured_wire_members() -> tuple[list[DescribeGroupsResponseMember],
                                     dict[str, list[tuple[str, int]]]]:
    """DescribeGroups members with the captured subscription and last assignment bytes, and
    what each member was assigned (member id -> sorted (topic, partition))."""
    capture = _capture()
    joins = {j["member_id"]: bytes.fromhex(j["protocols"][0]["metadata"])
             for j in capture["joins"] if j["member_id"]}
    syncs = {s["member_id"]: bytes.fromhex(s["assignment"]) for s in capture["syncs"]
             if s["error_code"] == 0 and s["assignment"]}
    wire, expected = [], {}
    for member_id, assignment in syncs.items():
        wire.append(DescribeGroupsResponseMember(
            member_id=member_id, group_instance_id=None, client_id="c", client_host="/10.0.0.1",
            member_metadata=joins.get(member_id, b""), member_assignment=assignment))
        expected[member_id] = sorted((t, p) for t, ps in Assignment.decode(assignment).partitions
                                     for p in ps)
    return wire, expected


def captured_members() -> tuple[list[MemberDescription], dict[str, list[tuple[str, int]]]]:
    """The captured members decoded as Admin.describe_groups does, and their assignments."""
    wire, expected = captured_wire_members()
    return [MemberDescription.from_wire(m, "consumer") for m in wire], expected
