"""A request sent again on a connection (an idle member's heartbeat and fetch) against a
scripted fake broker: it goes out with its own correlation id and the same body, and its answer
is decoded anew whenever its bytes differ from the last one."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

import pytest

from groupkit.errors import ApiKey, CorruptFrame, KafkaConnectionError
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
from tests.support.fake_broker import FakeBroker, reply, reply_body

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


def test_an_answer_that_only_ends_like_the_last_one_is_decoded_anew() -> None:
    # Heartbeat v0's body is its error code alone. The last answer ends with the one before
    # (error 27) behind a leading zero byte; read as v0 it is error 0 with a trailing byte a
    # client leaves unread, so it is a new answer, not the last one again.
    bodies = [b"\x00\x1b", b"\x00\x1b", b"\x00\x1b", b"\x00\x00\x1b"]

    def answer(sock, header, _) -> None:
        reply_body(sock, header, bodies.pop(0))

    broker = FakeBroker(answer)
    try:
        with BrokerConnection("127.0.0.1", broker.port) as conn:
            answers = [conn.send(HEARTBEAT, 0).result(5) for _ in range(4)]
    finally:
        broker.close()
    assert [a.error_code for a in answers] == [27, 27, 27, 0]
    assert answers[2] is answers[1] and answers[3] is not answers[2]


def test_the_callback_of_an_unchanged_answer_may_send_the_request_again() -> None:
    # An idle fetcher sends its Fetch again from the callback of the last one's answer, on the
    # connection's reader thread: completing an unchanged answer holds no lock a send needs.
    broker = FakeBroker(lambda sock, header, _: reply(sock, header,
                                                      HeartbeatResponse(error_code=0)))
    done = threading.Event()
    answers: list[Any] = []
    try:
        with BrokerConnection("127.0.0.1", broker.port) as conn:
            def again(future: Future[Any]) -> None:
                answers.append(future.result())
                if len(answers) < 5:
                    conn.send(HEARTBEAT).add_done_callback(again)
                else:
                    done.set()

            conn.send(HEARTBEAT).add_done_callback(again)
            assert done.wait(10), "a send from an answer's callback did not go out"
    finally:
        broker.close()
    assert len(answers) == 5 and all(a is answers[1] for a in answers[1:])


def test_an_unchanged_answer_under_another_correlation_id_breaks_the_connection() -> None:
    # The third answer repeats the second's bytes after the correlation id, but under the
    # second's id: it is out of step, not the last answer again.
    sent: list[int] = []

    def answer(sock, header, _) -> None:
        sent.append(header.correlation_id)
        reply(sock, header, HeartbeatResponse(error_code=0),
              correlation_id=sent[1] if len(sent) == 3 else None)

    broker = FakeBroker(answer)
    try:
        with BrokerConnection("127.0.0.1", broker.port) as conn:
            first, second = (conn.send(HEARTBEAT).result(5) for _ in range(2))
            third = conn.send(HEARTBEAT)
            with pytest.raises(KafkaConnectionError) as failed:
                third.result(5)
    finally:
        broker.close()
    assert first.error_code == second.error_code == 0
    assert isinstance(failed.value.__cause__, CorruptFrame)
    assert f"correlation id {sent[1]}" in str(failed.value.__cause__)
