"""A request sent again on a connection (an idle member's heartbeat and fetch) against a
scripted fake broker: it goes out with its own correlation id and the same body, and its answer
is decoded anew whenever its bytes differ from the last one."""

from __future__ import annotations

from groupkit.errors import ApiKey
from groupkit.protocol.messages.fetch import (
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    FetchResponse,
    FetchResponsePartition,
    FetchResponseTopic,
)
from groupkit.protocol.messages.group import HeartbeatRequest, HeartbeatResponse
from groupkit.runtime.connection import BrokerConnection
from tests.support.fake_broker import FakeBroker, reply

HEARTBEAT = HeartbeatRequest(group_id="g", generation_id=1, member_id="m",
                             group_instance_id=None)


def test_a_repeated_request_keeps_its_body_and_gets_its_own_correlation_id() -> None:
    codes = [0, 0, 0, 27, 27]

    def answer(sock, header, request) -> None:
        reply(sock, header, HeartbeatResponse(error_code=codes.pop(0) if codes else 0))

    broker = FakeBroker(answer)
    try:
        with BrokerConnection("127.0.0.1", broker.port) as conn:
            answers = [conn.send(HEARTBEAT).result(5) for _ in range(6)]
            # An equal but new object is a repeat too: same frame, and its unchanged answer
            # is the last decoded one (callers need not keep their request objects).
            equal = HeartbeatRequest(group_id="g", generation_id=1, member_id="m",
                                     group_instance_id=None)
            assert conn.send(equal).result(5) is answers[5]
            # The same object at another version is encoded again, at that version.
            older = conn.versions[ApiKey.HEARTBEAT] - 1
            assert conn.send(HEARTBEAT, older).result(5).error_code == 0
    finally:
        broker.close()
    assert [a.error_code for a in answers] == [0, 0, 0, 27, 27, 0]
    # From the first repeat on, equal answers are one decoded object; a changed one is new.
    assert answers[2] is answers[1] and answers[4] is answers[3]
    assert answers[3] is not answers[2] and answers[5] is not answers[4]
    heartbeats = [h for h in broker.received if h.api_key == ApiKey.HEARTBEAT]
    assert len({h.correlation_id for h in heartbeats}) == 8
    bodies = [_body(broker.frame_of(h)) for h in heartbeats]
    assert len(set(bodies[:7])) == 1
    assert [h.api_version for h in heartbeats][-1] == older
    assert bodies[7] != bodies[0]


def _body(frame: bytes) -> bytes:
    """A request frame without its API key, version and correlation id (8 bytes)."""
    return frame[8:]


def test_a_large_answer_to_a_repeated_request_is_not_kept() -> None:
    # A repeated (idle) fetch whose answer finally carries records: the answer is decoded, and
    # neither it nor a copy of its frame is kept for the next repeat.
    request = FetchRequest(max_wait_ms=10, min_bytes=1, topics=[FetchRequestTopic(
        topic="t", partitions=[FetchRequestPartition(partition=0, fetch_offset=0)])])
    records = b"r" * (64 * 1024)

    def answer(sock, header, _) -> None:
        reply(sock, header, FetchResponse(responses=[FetchResponseTopic(topic="t", partitions=[
            FetchResponsePartition(partition_index=0, records=records)])]))

    broker = FakeBroker(answer)
    try:
        with BrokerConnection("127.0.0.1", broker.port) as conn:
            first, second = (conn.send(request, 12).result(5) for _ in range(2))
            assert conn._link is not None and conn._link.last_answer is None
    finally:
        broker.close()
    assert first == second and first is not second
    assert second.responses[0].partitions[0].records == records
