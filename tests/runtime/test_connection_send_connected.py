"""BrokerConnection.send_connected, against a scripted fake broker: it sends only on a
connection that is up, never connects, and its callback is on the Future before the answer
can complete it, so it runs on the reader thread."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

from groupkit.errors import ApiKey, UnsupportedVersionError
from groupkit.protocol.messages.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    LeaveGroupRequest,
)
from groupkit.protocol.versions import CLIENT_VERSIONS
from groupkit.runtime.connection import BrokerConnection
from tests.support.fake_broker import FakeBroker, reply

HEARTBEAT = HeartbeatRequest(group_id="g", generation_id=1, member_id="m",
                             group_instance_id=None)


def answering() -> FakeBroker:
    return FakeBroker(lambda sock, header, _: reply(sock, header, HeartbeatResponse()))


def test_a_connection_that_is_not_up_sends_nothing_and_does_not_connect() -> None:
    broker = answering()
    try:
        conn = BrokerConnection("127.0.0.1", broker.port)
        assert not conn.send_connected(HEARTBEAT, 4, 1000, lambda f: None)
        assert not conn.connected and broker.received == []
        conn.connect()
        version = conn.versions[ApiKey.HEARTBEAT]
        conn.close()
        assert not conn.send_connected(HEARTBEAT, version, 1000, lambda f: None)
    finally:
        broker.close()
    assert [h.api_key for h in broker.received] == [ApiKey.API_VERSIONS]


def test_the_callback_gets_the_answer_on_the_reader_thread() -> None:
    broker = answering()
    done = threading.Event()
    seen: list[tuple[str, Any]] = []

    def callback(future: Future[Any]) -> None:
        seen.append((threading.current_thread().name, future.result()))
        done.set()

    try:
        with BrokerConnection("127.0.0.1", broker.port) as conn:
            conn.connect()
            assert conn.send_connected(HEARTBEAT, conn.versions[ApiKey.HEARTBEAT], 5000,
                                       callback)
            assert done.wait(10), "the callback did not run"
    finally:
        broker.close()
    [(thread, response)] = seen
    assert thread.startswith("groupkit-reader-") and response.error_code == 0
    assert [h.api_key for h in broker.received] == [ApiKey.API_VERSIONS, ApiKey.HEARTBEAT]


def test_a_send_of_an_api_the_broker_lacks_fails_naming_it() -> None:
    # send() without a version takes the negotiated one; none negotiated is an error that
    # names the request, and nothing goes out.
    versions = {k: v for k, v in CLIENT_VERSIONS.items() if k != ApiKey.HEARTBEAT}
    broker = FakeBroker(lambda sock, header, _: reply(sock, header, HeartbeatResponse()),
                        versions=versions)
    try:
        with BrokerConnection("127.0.0.1", broker.port) as conn:
            error = conn.send(HEARTBEAT).exception(5)
    finally:
        broker.close()
    assert isinstance(error, UnsupportedVersionError)
    assert "Heartbeat (API key 12)" in str(error)
    assert [h.api_key for h in broker.received] == [ApiKey.API_VERSIONS]


def test_send_with_a_callback_calls_it_once_with_the_answer_or_the_failure() -> None:
    # send(callback=) is add_done_callback in the same call: once with the answer (on the
    # reader thread), and once with the failure when nothing could be sent.
    versions = {k: v for k, v in CLIENT_VERSIONS.items() if k != ApiKey.LEAVE_GROUP}
    broker = FakeBroker(lambda sock, header, _: reply(sock, header, HeartbeatResponse()),
                        versions=versions)
    seen: list[tuple[str, Future[Any]]] = []
    done = threading.Event()

    def callback(future: Future[Any]) -> None:
        seen.append((threading.current_thread().name, future))
        done.set()

    try:
        with BrokerConnection("127.0.0.1", broker.port) as conn:
            answered = conn.send(HEARTBEAT, callback=callback)
            assert done.wait(10), "the callback did not run"
            failed = conn.send(LeaveGroupRequest(group_id="g", member_id="m", members=[]),
                               callback=callback)
    finally:
        broker.close()
    assert [f for _, f in seen] == [answered, failed]
    assert seen[0][0].startswith("groupkit-reader-")
    assert answered.result().error_code == 0
    assert isinstance(failed.exception(), UnsupportedVersionError)
