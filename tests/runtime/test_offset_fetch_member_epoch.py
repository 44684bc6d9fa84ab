"""OffsetFetch under the consumer group protocol (KIP-848): from v9 it carries the member id and
epoch (Java's CommitRequestManager sends them whenever the member has an epoch), and a
STALE_MEMBER_EPOCH answer is retried with the epoch the member holds by then, while it holds
one; below v9, from a classic member, or from a consumer outside any group, neither goes out.

confluent-kafka's mock cluster stops at OffsetFetch v6 and Tansu has no ConsumerGroupHeartbeat,
so a fake coordinator plays the group: it answers ConsumerGroupHeartbeat (a member epoch, no
partitions) and answers OffsetFetch with response bodies spelled out field by field, refusing
a member epoch other than the group's current one as Kafka's ConsumerGroup.validateOffsetFetch
does.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from assignors import TopicPartition
from groupkit.consumer import Consumer
from groupkit.errors import (
    ApiKey,
    CommitFailedError,
    ErrorCode,
    GroupkitError,
    UnknownMemberIdError,
)
from groupkit.group import GroupConfig
from groupkit.group.kip848 import ConsumerGroupMachine, SubscriptionHolder
from groupkit.group.outputs import Output, Send
from groupkit.protocol.headers import RequestHeader, decode_request_frame
from groupkit.protocol.messages.consumer_group import (
    ConsumerGroupHeartbeatAssignment,
    ConsumerGroupHeartbeatResponse,
)
from groupkit.protocol.messages.find_coordinator import FindCoordinatorResponse
from groupkit.protocol.messages.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from groupkit.protocol.messages.offset_fetch import OffsetFetchRequest
from groupkit.protocol.versions import CLIENT_VERSIONS
from groupkit.values import OffsetAndMetadata
from tests.support.fake_broker import FakeCluster, reply
from tests.support.waits import eventually
from tests.support.wire_bytes import NO_TAGS, carr, cs, i16, i32, i64

GROUP, TOPIC = "g", "orders"
T0, T1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)


def offset_fetch_answer(version: int, code: int = 0) -> bytes:
    """An OffsetFetch v8/v9 answer for group "g": with ``code`` a group-level error and no
    topics, else offsets 10 and 20 (leader epoch 3, no metadata) of orders-0 and orders-1."""
    parts = [i32(p) + i64(offset) + i32(3) + cs("") + i16(0) + NO_TAGS
             for p, offset in ((0, 10), (1, 20))]
    topics = carr([]) if code else carr([cs(TOPIC) + carr(parts) + NO_TAGS])
    assert version >= 8
    return i32(0) + carr([cs(GROUP) + topics + i16(code) + NO_TAGS]) + NO_TAGS


class Coordinator(FakeCluster):
    """A one-node cluster whose group speaks the consumer protocol (see the module docstring).

    ``epoch`` is the member epoch its next heartbeat answer gives; ``bump_on_stale`` makes the
    first OffsetFetch carrying the current epoch find the group one epoch further on (as when a
    heartbeat moved the member on while the fetch was in flight): answered STALE_MEMBER_EPOCH,
    and the next heartbeat hands out the new epoch. ``fetches`` holds every OffsetFetch."""

    def __init__(self, offset_fetch_top: int, bump_on_stale: bool = False,
                 member_code: int = 0) -> None:
        self.epoch = 5
        self.bump_on_stale = bump_on_stale
        self.member_code = member_code
        self.fetches: list[tuple[int, OffsetFetchRequest]] = []
        self.lock = threading.Lock()
        super().__init__(self._offset_fetch, {TOPIC: 2},
                         {**CLIENT_VERSIONS, ApiKey.OFFSET_FETCH: (0, offset_fetch_top)})
        self.script[ApiKey.CONSUMER_GROUP_HEARTBEAT] = self._heartbeat

    def _metadata(self, sock: Any, header: RequestHeader, request: Any) -> None:
        # With topic ids (v10+), which a consumer-protocol member names its topics by.
        reply(sock, header, MetadataResponse(
            brokers=[MetadataResponseBroker(node_id=0, host="127.0.0.1", port=self.port)],
            controller_id=0, topics=[MetadataResponseTopic(
                error_code=0, name=TOPIC, topic_id=uuid.UUID(int=1), partitions=[
                    MetadataResponsePartition(error_code=0, partition_index=i, leader_id=0,
                                              replica_nodes=[0], isr_nodes=[0])
                    for i in range(2)])]))

    def _heartbeat(self, sock: Any, header: RequestHeader, request: Any) -> None:
        with self.lock:
            epoch = self.epoch if request.member_epoch >= 0 else request.member_epoch
        reply(sock, header, ConsumerGroupHeartbeatResponse(
            error_code=0, member_id=request.member_id, member_epoch=epoch,
            heartbeat_interval_ms=100,
            assignment=ConsumerGroupHeartbeatAssignment(topic_partitions=[])))

    def _offset_fetch(self, header: RequestHeader, frame: bytes) -> bytes:
        assert header.api_key == ApiKey.OFFSET_FETCH
        request = decode_request_frame(frame)[1]
        assert isinstance(request, OffsetFetchRequest)
        with self.lock:
            self.fetches.append((header.api_version, request))
            code = 0
            group = request.groups[0]
            if group.member_id is not None or group.member_epoch >= 0:
                if self.member_code:
                    code = self.member_code
                elif self.bump_on_stale and group.member_epoch == self.epoch:
                    self.bump_on_stale = False
                    self.epoch += 1
                    code = ErrorCode.STALE_MEMBER_EPOCH
                elif group.member_epoch != self.epoch:
                    code = ErrorCode.STALE_MEMBER_EPOCH
        return offset_fetch_answer(header.api_version, code)


@pytest.fixture
def coordinators() -> Iterator[Any]:
    made: list[Coordinator] = []

    def make(*args: Any, **kwargs: Any) -> Coordinator:
        made.append(Coordinator(*args, **kwargs))
        return made[-1]

    yield make
    for fake in made:
        fake.close()


def _member(fake: Coordinator, protocol: str = "consumer") -> Consumer:
    """A consumer subscribed to "orders" that has joined (the fake gave it its epoch)."""
    settings: dict[str, Any] = {"retry_backoff_ms": 50, "retry_backoff_max_ms": 200}
    if protocol == "classic":
        settings.update(session_timeout_ms=6_000, heartbeat_interval_ms=500)
    consumer = Consumer(bootstrap_servers=fake.bootstrap_servers, group_id=GROUP,
                        group_protocol=protocol, **settings)
    consumer.subscribe([TOPIC])
    if protocol == "consumer":
        def joined() -> None:
            try:
                consumer.group_metadata(current=True)
            except CommitFailedError as exc:
                raise AssertionError(str(exc)) from None

        eventually(joined, 10, "the member's epoch", step=0.02)
    return consumer


WANTED = {T0: OffsetAndMetadata(10, "", 3), T1: OffsetAndMetadata(20, "", 3)}


def test_a_consumer_protocol_member_fetches_with_its_member_id_and_epoch_at_v9(
        coordinators: Any) -> None:
    fake = coordinators(9)
    consumer = _member(fake)
    try:
        assert consumer.committed([T0, T1], timeout=10) == WANTED
    finally:
        consumer.close(5)
    version, request = fake.fetches[-1]
    [group] = request.groups
    assert version == 9
    assert (group.member_id, group.member_epoch) == (consumer.member_id, 5)
    assert consumer.member_id and len(consumer.member_id) == 22


def test_below_v9_the_fetch_carries_no_member_and_still_works(coordinators: Any) -> None:
    fake = coordinators(8)
    consumer = _member(fake)
    try:
        assert consumer.committed([T0, T1], timeout=10) == WANTED
    finally:
        consumer.close(5)
    version, request = fake.fetches[-1]
    assert version == 8 and request.groups[0].member_id is None


def test_a_consumer_outside_any_group_fetches_without_a_member(coordinators: Any) -> None:
    # Admin-like reads (a consumer that assigns, or never subscribed): Kafka accepts a fetch
    # with no member id and epoch -1 from anyone.
    fake = coordinators(9)
    consumer = Consumer(bootstrap_servers=fake.bootstrap_servers, group_id=GROUP,
                        group_protocol="consumer")
    try:
        assert consumer.committed([T0, T1], timeout=10) == WANTED
    finally:
        consumer.close(5)
    group = fake.fetches[-1][1].groups[0]
    assert (group.member_id, group.member_epoch) == (None, -1)


def test_a_stale_member_epoch_is_fetched_again_with_the_epoch_the_heartbeat_brought(
        coordinators: Any) -> None:
    fake = coordinators(9, bump_on_stale=True)
    consumer = _member(fake)
    try:
        assert consumer.committed([T0, T1], timeout=10) == WANTED
    finally:
        consumer.close(5)
    epochs = [request.groups[0].member_epoch for _, request in fake.fetches]
    assert epochs[0] == 5 and epochs[-1] == 6, epochs  # refused at 5, then served at 6
    assert set(epochs) <= {5, 6}


def test_an_unknown_member_fails_the_fetch_as_java_does(coordinators: Any) -> None:
    fake = coordinators(9, member_code=ErrorCode.UNKNOWN_MEMBER_ID)
    consumer = _member(fake)
    try:
        with pytest.raises(UnknownMemberIdError):
            consumer.committed([T0], timeout=10)
    finally:
        consumer.close(5)
    assert len(fake.fetches) == 1


def test_a_classic_member_never_sends_its_generation_in_a_fetch(coordinators: Any) -> None:
    # Java's ConsumerCoordinator builds its OffsetFetch without member id or generation.
    fake = coordinators(9)
    consumer = Consumer(bootstrap_servers=fake.bootstrap_servers, group_id=GROUP)
    try:
        assert consumer.committed([T0, T1], timeout=10) == WANTED
    finally:
        consumer.close(5)
    group = fake.fetches[-1][1].groups[0]
    assert (group.member_id, group.member_epoch) == (None, -1)


# --- the member's decisions, sans-IO ------------------------------------------------------------


def _stable_machine() -> tuple[ConsumerGroupMachine, list[Output]]:
    holder = SubscriptionHolder()
    holder.subscribe([TOPIC])
    machine = ConsumerGroupMachine(GroupConfig(group_id=GROUP, retry_backoff_ms=100,
                                               retry_backoff_max_ms=1_000), holder,
                                   jitter=lambda: 0.5, make_member_id=lambda: "me")
    machine.start(0.0)
    find = next(o for o in machine.poll(0.0) if isinstance(o, Send))
    machine.on_response(find.token, FindCoordinatorResponse(node_id=1, host="h", port=1), 0.0)
    beat = next(o for o in machine.poll(0.0) if isinstance(o, Send))
    machine.on_response(beat.token, ConsumerGroupHeartbeatResponse(
        member_id="me", member_epoch=5, heartbeat_interval_ms=1_000,
        assignment=ConsumerGroupHeartbeatAssignment(topic_partitions=[])), 0.0)
    return machine, machine.poll(0.0)


def test_stale_epoch_is_retried_while_the_member_holds_an_epoch_and_fails_once_it_does_not(
        ) -> None:
    machine, _ = _stable_machine()
    decision = machine.on_offset_fetch_error(ErrorCode.STALE_MEMBER_EPOCH, 0.0, attempt=2)
    assert decision.error is None and decision.retry_after == pytest.approx(0.2, rel=0.5)
    machine.leave(0.0, "closing")  # epoch -1: Java's memberInfo has no epoch any more
    decision = machine.on_offset_fetch_error(ErrorCode.STALE_MEMBER_EPOCH, 0.0)
    assert isinstance(decision.error, GroupkitError)
    assert decision.error.code == ErrorCode.STALE_MEMBER_EPOCH  # type: ignore[attr-defined]


def test_unknown_member_id_fails_the_fetch() -> None:
    machine, _ = _stable_machine()
    decision = machine.on_offset_fetch_error(ErrorCode.UNKNOWN_MEMBER_ID, 0.0)
    assert isinstance(decision.error, UnknownMemberIdError)
