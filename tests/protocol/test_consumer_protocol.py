"""Consumer embedded protocol: round trips, kafka-python in both directions, bad input."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given, strategies as st
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment as KpAssignment,
    ConsumerProtocolSubscription as KpSubscription,
)
from kafka.protocol.old.consumer_protocol import (
    ConsumerProtocolMemberAssignment_v0 as KpMemberAssignment,
    ConsumerProtocolMemberMetadata_v0 as KpMemberMetadata,
)

from groupkit.errors import CorruptFrame, UnsupportedVersionError
from groupkit.protocol.consumer import LATEST_VERSION, Assignment, Subscription

topics = st.text(max_size=12)
int32s = st.integers(-(2**31), 2**31 - 1)
partition_lists = st.lists(st.tuples(topics, st.lists(int32s, max_size=5)), max_size=4)
subscriptions = st.builds(
    Subscription,
    topics=st.lists(topics, max_size=5),
    user_data=st.none() | st.binary(max_size=20),
    owned_partitions=partition_lists,
    generation_id=int32s,
    rack_id=st.none() | st.text(max_size=10),
)
assignments = st.builds(Assignment, partitions=partition_lists,
                        user_data=st.none() | st.binary(max_size=20))
versions = st.integers(0, LATEST_VERSION)


def as_of(sub: Subscription, version: int) -> Subscription:
    """What survives encoding ``sub`` at ``version`` (newer fields fall back to defaults)."""
    return Subscription(
        sub.topics, sub.user_data,
        sub.owned_partitions if version >= 1 else [],
        sub.generation_id if version >= 2 else -1,
        sub.rack_id if version >= 3 else None,
    )


def test_subscription_v0_bytes() -> None:
    data = Subscription(["a", "bc"], b"u").encode(0)
    assert data == (struct.pack(">hi", 0, 2) + b"\x00\x01a" + b"\x00\x02bc"
                    + struct.pack(">i", 1) + b"u")


def test_subscription_v3_bytes() -> None:
    sub = Subscription(["t"], None, [("t", [1, 2])], generation_id=7, rack_id="r1")
    assert sub.encode() == (
        struct.pack(">hi", 3, 1) + b"\x00\x01t" + b"\xff\xff\xff\xff"
        + struct.pack(">i", 1) + b"\x00\x01t" + struct.pack(">iii", 2, 1, 2)
        + struct.pack(">i", 7) + b"\x00\x02r1")


def test_assignment_bytes_are_the_same_layout_at_every_version() -> None:
    a = Assignment([("t", [0, 3])], b"")
    body = struct.pack(">i", 1) + b"\x00\x01t" + struct.pack(">iii", 2, 0, 3) + b"\x00" * 4
    for v in range(LATEST_VERSION + 1):
        assert a.encode(v) == struct.pack(">h", v) + body


def test_defaults() -> None:
    sub = Subscription(["t"])
    assert (sub.user_data, sub.owned_partitions, sub.generation_id, sub.rack_id) == (
        None, [], -1, None)
    assert Assignment([]).user_data is None


@given(sub=subscriptions, version=versions)
def test_subscription_round_trip(sub: Subscription, version: int) -> None:
    back = Subscription.decode(sub.encode(version))
    assert back == as_of(sub, version)
    assert back.version == version


@given(a=assignments, version=versions)
def test_assignment_round_trip(a: Assignment, version: int) -> None:
    back = Assignment.decode(a.encode(version))
    assert back == a
    assert back.version == version


def test_version_is_not_part_of_equality() -> None:
    sub = Subscription(["t"])
    assert Subscription.decode(sub.encode(0)) == Subscription.decode(sub.encode(3)) == sub
    assert sub.version is None


@given(sub=subscriptions, extra=st.binary(max_size=30), future=st.integers(4, 2**15 - 1))
def test_newer_subscription_reads_the_v3_prefix(sub: Subscription, extra: bytes,
                                                future: int) -> None:
    data = struct.pack(">h", future) + sub.encode(3)[2:] + extra
    back = Subscription.decode(data)
    assert back == sub
    assert back.version == future


@given(a=assignments, extra=st.binary(max_size=30), future=st.integers(4, 2**15 - 1))
def test_newer_assignment_reads_the_v3_prefix(a: Assignment, extra: bytes, future: int) -> None:
    back = Assignment.decode(struct.pack(">h", future) + a.encode(3)[2:] + extra)
    assert back == a
    assert back.version == future


# --- kafka-python, both directions ---------------------------------------------------------------


def kp_subscription(sub: Subscription, version: int) -> KpSubscription:
    return KpSubscription(
        version=version, topics=sub.topics, user_data=sub.user_data,
        owned_partitions=[KpSubscription.TopicPartition(topic=t, partitions=p)
                          for t, p in sub.owned_partitions],
        generation_id=sub.generation_id, rack_id=sub.rack_id)


def from_kp_subscription(kp: KpSubscription, version: int) -> Subscription:
    return Subscription(
        list(kp.topics), kp.user_data,
        [(tp.topic, list(tp.partitions)) for tp in kp.owned_partitions] if version >= 1 else [],
        kp.generation_id if version >= 2 else -1,
        kp.rack_id if version >= 3 else None)


@given(sub=subscriptions, version=versions)
def test_kafka_python_reads_our_subscription(sub: Subscription, version: int) -> None:
    theirs = KpSubscription.decode(sub.encode(version))
    assert from_kp_subscription(theirs, version) == as_of(sub, version)


@given(sub=subscriptions, version=versions)
def test_we_read_kafka_python_subscription(sub: Subscription, version: int) -> None:
    data = kp_subscription(as_of(sub, version), version).encode()
    assert data == as_of(sub, version).encode(version)
    back = Subscription.decode(data)
    assert back == as_of(sub, version)
    assert back.version == version


@given(a=assignments, version=versions)
def test_assignment_both_directions_with_kafka_python(a: Assignment, version: int) -> None:
    theirs = KpAssignment.decode(a.encode(version))
    assert [(tp.topic, list(tp.partitions)) for tp in theirs.assigned_partitions] == a.partitions
    assert theirs.user_data == a.user_data
    kp = KpAssignment(
        version=version, user_data=a.user_data,
        assigned_partitions=[KpAssignment.TopicPartition(topic=t, partitions=p)
                             for t, p in a.partitions])
    assert Assignment.decode(kp.encode()) == a


@given(names=st.lists(topics, max_size=5), user_data=st.binary(max_size=20))
def test_old_member_metadata_v0_both_directions(names: list[str], user_data: bytes) -> None:
    ours = Subscription(names, user_data).encode(0)
    assert ours == KpMemberMetadata(0, names, user_data).encode()
    decoded = KpMemberMetadata.decode(ours)
    assert (decoded.version, decoded.topics, decoded.user_data) == (0, names, user_data)
    assert Subscription.decode(KpMemberMetadata(0, names, user_data).encode()) == Subscription(
        names, user_data)


@given(parts=partition_lists, user_data=st.binary(max_size=20))
def test_old_member_assignment_v0_both_directions(parts: list[tuple[str, list[int]]],
                                                  user_data: bytes) -> None:
    ours = Assignment(parts, user_data).encode(0)
    assert ours == KpMemberAssignment(0, parts, user_data).encode()
    decoded = KpMemberAssignment.decode(ours)
    assert [(t, list(p)) for t, p in decoded.assignment] == parts
    assert Assignment.decode(KpMemberAssignment(0, parts, user_data).encode()) == Assignment(
        parts, user_data)


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [Subscription, Assignment])
@pytest.mark.parametrize("data", [b"", b"\x00", b"\x00\x00", b"\x00\x03\x00\x00"])
def test_empty_or_short_data_is_corrupt(cls: type, data: bytes) -> None:
    with pytest.raises(CorruptFrame):
        cls.decode(data)


@pytest.mark.parametrize("cls", [Subscription, Assignment])
def test_negative_version_is_corrupt(cls: type) -> None:
    with pytest.raises(CorruptFrame, match="negative version"):
        cls.decode(struct.pack(">hi", -1, 0) + b"\xff\xff\xff\xff")


@pytest.mark.parametrize("cls", [Subscription, Assignment])
def test_huge_array_count_is_refused_without_allocating(cls: type) -> None:
    with pytest.raises(CorruptFrame, match="claims"):
        cls.decode(struct.pack(">hi", 0, 2**31 - 1) + b"\x00" * 10)


@pytest.mark.parametrize("cls", [Subscription, Assignment])
def test_null_array_is_corrupt(cls: type) -> None:
    with pytest.raises(CorruptFrame):
        cls.decode(struct.pack(">hi", 0, -1) + b"\xff\xff\xff\xff")


@pytest.mark.parametrize("value", [Subscription(["a"], b"x", [("a", [0])], 3, "r"),
                                   Assignment([("a", [0, 1])], b"x")])
def test_every_truncation_of_v3_data_is_corrupt(value: Subscription | Assignment) -> None:
    data = value.encode()
    for cut in range(len(data)):
        with pytest.raises(CorruptFrame):
            type(value).decode(data[:cut])


def test_newer_version_cut_inside_the_v3_prefix_is_corrupt() -> None:
    data = struct.pack(">h", 9) + Subscription(["a"], rack_id="r").encode(3)[2:-1]
    with pytest.raises(CorruptFrame):
        Subscription.decode(data)


@pytest.mark.parametrize("version", [-1, 4, 100])
def test_encoding_an_unknown_version_is_refused(version: int) -> None:
    with pytest.raises(UnsupportedVersionError, match="0-3"):
        Subscription(["t"]).encode(version)
    with pytest.raises(UnsupportedVersionError, match="0-3"):
        Assignment([]).encode(version)


@given(st.binary(max_size=80))
def test_decoding_is_total(data: bytes) -> None:
    with contextlib.suppress(CorruptFrame):
        Subscription.decode(data)
    with contextlib.suppress(CorruptFrame):
        Assignment.decode(data)
