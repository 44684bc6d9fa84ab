"""Consumer.committed returns Java's OffsetAndMetadata: offset, metadata and leader epoch, as
the coordinator's OffsetFetch answer carries them.

The local broker (Tansu 0.6) drops both the commit metadata and the committed leader epoch
(it answers null and -1), so what the consumer makes of them is checked here against a fake
coordinator answering response bodies spelled out field by field, as Kafka writes them. The
broker tests (tests/integration/test_consumer.py) check the offsets for real.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from assignors import TopicPartition
from groupkit.consumer import Consumer
from groupkit.errors import ApiKey, ConfigError
from groupkit.protocol.headers import RequestHeader, decode_request_frame
from groupkit.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from groupkit.protocol.versions import CLIENT_VERSIONS
from groupkit.values import OffsetAndMetadata
from tests.support.fake_broker import FakeCluster
from tests.support.wire_bytes import (
    COMPACT_NULL,
    NO_TAGS,
    NULL_STRING,
    arr,
    carr,
    cs,
    i16,
    i32,
    i64,
    s,
)

T0, T1, T2 = (TopicPartition("orders", p) for p in range(3))
#: (partition, committed offset, leader epoch, metadata) as the coordinator stored them.
STORED = [(0, 42, 7, "batch 17"), (1, 5, -1, None), (2, -1, -1, "")]
WANTED = {T0: OffsetAndMetadata(42, "batch 17", 7), T1: OffsetAndMetadata(5), T2: None}


def _partition(version: int, index: int, offset: int, epoch: int, metadata: str | None) -> bytes:
    """One partition of an OffsetFetch answer at ``version``: index, offset, the leader epoch
    (v5+), metadata (nullable), error code; flexible (v6+) strings are compact, with tags."""
    body = i32(index) + i64(offset) + (i32(epoch) if version >= 5 else b"")
    if version >= 6:
        return body + (COMPACT_NULL if metadata is None else cs(metadata)) + i16(0) + NO_TAGS
    return body + (NULL_STRING if metadata is None else s(metadata)) + i16(0)


def offset_fetch_answer(version: int, group: str = "g") -> bytes:
    """The coordinator's answer holding ``STORED`` for topic "orders", at ``version``."""
    parts = [_partition(version, *stored) for stored in STORED]
    if version < 6:
        return (i32(0) if version >= 3 else b"") + arr([s("orders") + arr(parts)]) \
            + (i16(0) if version >= 2 else b"")
    topics = carr([cs("orders") + carr(parts) + NO_TAGS])
    if version < 8:
        return i32(0) + topics + i16(0) + NO_TAGS
    return i32(0) + carr([cs(group) + topics + i16(0) + NO_TAGS]) + NO_TAGS


@pytest.fixture
def coordinator() -> Iterator[Callable[[int], FakeCluster]]:
    made: list[FakeCluster] = []

    def make(top: int) -> FakeCluster:
        def answer(header: RequestHeader, frame: bytes) -> bytes:
            assert header.api_key == ApiKey.OFFSET_FETCH
            return offset_fetch_answer(header.api_version)

        versions = {**CLIENT_VERSIONS, ApiKey.OFFSET_FETCH: (0, top)}
        fake = FakeCluster(answer, {"orders": 3}, versions)
        made.append(fake)
        return fake

    yield make
    for fake in made:
        fake.close()


@pytest.mark.parametrize("version", [5, 6, 7, 8, 9])
def test_the_answer_bytes_carry_offset_epoch_and_metadata(version: int) -> None:
    # The decoder at every version with the leader epoch (v5+), flexible or not (v6+), one
    # group or many (v8+).
    decoded = OffsetFetchResponse.decode(offset_fetch_answer(version), version)
    topic = decoded.groups[0].topics[0] if version >= 8 else decoded.topics[0]
    got = [(p.partition_index, p.committed_offset, p.committed_leader_epoch, p.metadata)
           for p in topic.partitions]
    assert got == STORED


@pytest.mark.parametrize("version", [1, 3])
def test_before_v5_the_answer_has_no_leader_epoch(version: int) -> None:
    decoded = OffsetFetchResponse.decode(offset_fetch_answer(version), version)
    assert [p.committed_leader_epoch for p in decoded.topics[0].partitions] == [-1, -1, -1]
    assert [p.metadata for p in decoded.topics[0].partitions] == ["batch 17", None, ""]


@pytest.mark.parametrize("version", [1, 5, 6, 7, 8, 9])
def test_committed_returns_offset_metadata_and_leader_epoch(coordinator, version: int) -> None:
    fake = coordinator(version)
    consumer = Consumer(bootstrap_servers=fake.bootstrap_servers, group_id="g")
    try:
        got = consumer.committed([T0, T1, T2], timeout=10)
    finally:
        consumer.close(timeout=5)
    # Before v5 the answer carries no leader epoch: not known.
    assert got == (WANTED if version >= 5 else {**WANTED, T0: OffsetAndMetadata(42, "batch 17")})
    [(header, frame)] = fake.scripted
    assert header.api_version == version
    request = decode_request_frame(frame)[1]
    assert isinstance(request, OffsetFetchRequest)
    if version >= 8:
        [group] = request.groups
        asked = (group.group_id, [(t.name, t.partition_indexes) for t in group.topics or ()])
    else:
        asked = (request.group_id, [(t.name, t.partition_indexes) for t in request.topics or ()])
    assert asked == ("g", [("orders", [0, 1, 2])])


def test_offset_and_metadata_is_javas() -> None:
    # A null metadata is stored as "" (the broker answers the same); an unknown epoch is None.
    assert OffsetAndMetadata(3, None) == OffsetAndMetadata(3, "") == OffsetAndMetadata(3)
    assert OffsetAndMetadata(3).leader_epoch is None
    assert OffsetAndMetadata(3).wire_leader_epoch == -1
    assert OffsetAndMetadata(3, leader_epoch=0).wire_leader_epoch == 0
    assert OffsetAndMetadata.from_wire(-1, "x", 4) is None
    assert OffsetAndMetadata.from_wire(9, None, -1) == OffsetAndMetadata(9)
    assert OffsetAndMetadata.from_wire(9, "m", 2) == OffsetAndMetadata(9, "m", 2)
    # Java's constructor refuses a negative offset or leader epoch.
    for bad in ({"offset": -1}, {"offset": 1, "leader_epoch": -1}, {"offset": True},
                {"offset": 1, "metadata": 5}):
        with pytest.raises(ConfigError):
            OffsetAndMetadata(**bad)  # type: ignore[arg-type]


def test_commit_refuses_a_negative_offset_before_sending(coordinator) -> None:
    fake = coordinator(9)
    consumer = Consumer(bootstrap_servers=fake.bootstrap_servers, group_id="g")
    try:
        with pytest.raises(ConfigError, match="orders-0"):
            consumer.commit({T0: -1}, timeout=5)
    finally:
        consumer.close(timeout=5)
    assert fake.scripted == []
