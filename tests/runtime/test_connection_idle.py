"""``connections_max_idle_ms`` on BrokerConnection against the local Tansu broker (idle.py):
a socket with nothing in flight for that long is closed, at the broker too, with an INFO line
and no warning; the next send reconnects with a first connect's handshake (ApiVersions; TLS,
through a TLS terminator since the bundled Tansu serves plaintext only; SASL, on a fake
broker since it holds no users); a send that meets
the close goes on a new socket; a request in flight, a standing long poll and a standing
heartbeat waiting for its time keep their socket; -1 and a huge value close nothing."""

from __future__ import annotations

import logging
import ssl
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
import trustme

from groupkit.errors import ApiKey, RequestTimeoutError
from groupkit.protocol.messages.fetch import (
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
)
from groupkit.protocol.messages.metadata import MetadataRequest, MetadataResponse
from groupkit.protocol.messages.sasl import SaslAuthenticateResponse, SaslHandshakeResponse
from groupkit.runtime.connection import BrokerConnection
from groupkit.runtime.sasl import SaslCredentials
from groupkit.runtime.standing import Standing
from groupkit.runtime.tls import TlsConfig
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support.broker_data import create_topic
from tests.support.fake_broker import FakeBroker, reply
from tests.support.recording_proxy import RecordingProxy
from tests.support.tcp_ends import broker_end_open, ends
from tests.support.tls_terminator import TlsTerminator
from tests.support.waits import wait_for

pytestmark = pytest.mark.broker

IDLE_MS = 300
#: Fetch v12 names topics (no topic ids needed).
FETCH_BY_NAME = 12
NO_TOPICS = MetadataRequest(topics=[])


def idle_conn(broker: Any, idle_ms: int = IDLE_MS) -> BrokerConnection:
    return BrokerConnection(broker.host, broker.port, connections_max_idle_ms=idle_ms)


def long_poll(topic: str, wait_ms: int) -> FetchRequest:
    partition = FetchRequestPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
    return FetchRequest(max_wait_ms=wait_ms, min_bytes=1,
                        topics=[FetchRequestTopic(topic=topic, partitions=[partition])])


@pytest.fixture
def topic(kafka_broker: LocalBroker, unique_name: Any) -> str:  # noqa: F811
    """An empty one-partition topic, to long-poll."""
    name = unique_name("idle")
    create_topic(kafka_broker.bootstrap_servers, name, 1)
    return name


def busy(conn: BrokerConnection, topic: str) -> tuple[Any, tuple[int, int]]:
    """Long-poll ``topic`` for two idle periods; the socket (its ``_Link`` and ends) is noted
    while the poll is in flight, when it cannot be closed as idle (a slow test thread cannot
    miss it)."""
    future = conn.send(long_poll(topic, 2 * IDLE_MS), FETCH_BY_NAME)
    noted = conn._link, ends(conn)
    future.result(10)
    return noted


def stand(conn: BrokerConnection, request: Any, version: int, standing: Standing,
          done: list[Future[Any]]) -> tuple[Any, tuple[int, int]]:
    """Send ``request`` (its answer is then one known to repeat) and let it stand from its
    callback on the reader thread, as the fetcher does, before the socket can go idle; the
    socket noted."""
    stood: list[bool] = []
    conn.send(request, version, callback=lambda _: stood.append(conn.send_connected(
        request, version, 10_000, done.append, standing=standing)))
    wait_for(lambda: bool(stood), 10, "the request to stand")
    assert stood == [True]
    return conn._link, ends(conn)


def closed_at_broker(end: tuple[int, int]) -> None:
    wait_for(lambda: not broker_end_open(end), 10, "the broker's end of the idle connection to close")


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_an_idle_connection_is_closed_at_the_broker_and_the_next_send_reconnects(
        kafka_broker: LocalBroker, topic: str,  # noqa: F811
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="groupkit")
    with idle_conn(kafka_broker) as conn:
        link, first = busy(conn, topic)
        answered = time.monotonic()
        closed_at_broker(first)
        assert time.monotonic() - answered >= IDLE_MS / 1000  # not before its time
        assert not conn.connected and conn.in_flight() == 0
        assert conn.versions  # the idle socket's, until the next connect
        assert conn.send(NO_TOPICS).result(10).brokers
        assert conn._link is not link
        assert busy(conn, topic)[1] != first
    idle = [r for r in caplog.records if "connections_max_idle_ms" in r.getMessage()]
    assert [r.levelno for r in idle] == [logging.INFO]
    assert warnings(caplog) == []


def test_the_reconnect_after_an_idle_close_handshakes_as_a_first_connect(
        kafka_broker: LocalBroker) -> None:  # noqa: F811
    with RecordingProxy(kafka_broker.host, kafka_broker.port) as proxy, \
            BrokerConnection(proxy.host, proxy.port, connections_max_idle_ms=IDLE_MS) as conn:
        conn.send(NO_TOPICS).result(10)
        link = conn._link
        wait_for(lambda: not conn.connected, 10, "the idle connection to close")
        conn.send(NO_TOPICS).result(10)
        assert conn._link is not link
        by_socket: dict[int, list[int]] = {}
        for exchange in proxy.exchanges():
            by_socket.setdefault(exchange.connection, []).append(exchange.api_key)
    assert list(by_socket.values()) == [[ApiKey.API_VERSIONS, ApiKey.METADATA]] * 2


def test_an_idle_tls_connection_reconnects_with_a_new_tls_handshake(
        kafka_broker: LocalBroker, tmp_path: Path) -> None:  # noqa: F811
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    terminator = TlsTerminator(context, (kafka_broker.host, kafka_broker.port))
    try:
        with BrokerConnection("127.0.0.1", terminator.port, tls=TlsConfig(cafile=ca_file),
                              connections_max_idle_ms=IDLE_MS) as conn:
            conn.send(NO_TOPICS).result(10)
            link = conn._link
            wait_for(lambda: not conn.connected, 10, "the idle TLS connection to close")
            assert conn.send(NO_TOPICS).result(10).brokers
            assert conn._link is not link and conn._link.sock.version() is not None
    finally:
        terminator.close()


def test_an_idle_sasl_connection_logs_in_again_on_its_next_send() -> None:
    # A SASL PLAIN login on a fake broker (the bundled Tansu holds no SASL users).
    def plain(sock: Any, header: Any, request: Any) -> None:
        if header.api_key == ApiKey.SASL_HANDSHAKE:
            reply(sock, header, SaslHandshakeResponse(error_code=0, mechanisms=["PLAIN"]))
        elif header.api_key == ApiKey.SASL_AUTHENTICATE:
            assert request.auth_bytes == b"\0alice\0pw"
            reply(sock, header, SaslAuthenticateResponse(error_code=0, auth_bytes=b""))
        else:
            reply(sock, header, MetadataResponse())

    with FakeBroker(plain) as broker, \
            BrokerConnection("127.0.0.1", broker.port, connections_max_idle_ms=IDLE_MS,
                             sasl=SaslCredentials("PLAIN", "alice", "pw")) as conn:
        conn.send(NO_TOPICS).result(10)
        wait_for(lambda: not conn.connected, 10, "the idle connection to close")
        conn.send(NO_TOPICS).result(10)
        login = [ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE,
                 ApiKey.METADATA]
        assert [h.api_key for h in broker.received] == login * 2
        assert broker.connections == 2


def test_a_send_that_meets_the_idle_close_goes_on_a_new_socket(
        kafka_broker: LocalBroker, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    # The close comes between the send's look at the socket (still open) and its write: the
    # send is held there until the watchdog closed the socket as idle.
    with idle_conn(kafka_broker) as conn:
        conn.send(NO_TOPICS).result(10)
        link = conn._link
        assert link is not None
        send_on = BrokerConnection._send_on
        held: list[bool] = []

        def late(self: BrokerConnection, *args: Any, **kwargs: Any) -> Future[Any]:
            if not held:
                held.append(True)
                wait_for(lambda: link.expired, 10, "the watchdog to close the socket as idle")
            return send_on(self, *args, **kwargs)

        monkeypatch.setattr(BrokerConnection, "_send_on", late)
        assert conn.send(NO_TOPICS).result(10).brokers
        assert held and conn._link is not link and conn.connected


def test_a_request_in_flight_keeps_its_connection(
        kafka_broker: LocalBroker, topic: str) -> None:  # noqa: F811
    with idle_conn(kafka_broker) as conn:
        # A long poll of five idle periods on an empty partition: in flight all along (a
        # socket closed under it would leave it unanswered).
        future = conn.send(long_poll(topic, 5 * IDLE_MS), FETCH_BY_NAME)
        link, end = conn._link, ends(conn)
        answer = future.result(10)
        assert answer.responses[0].partitions[0].records in (None, b"")
        assert conn._link is link
        closed_at_broker(end)  # then idle


def test_a_standing_long_poll_keeps_its_connection(
        kafka_broker: LocalBroker, topic: str) -> None:  # noqa: F811
    request = long_poll(topic, 2 * IDLE_MS)  # each repeat in flight for two idle periods
    repeats = threading.Semaphore(0)
    standing = Standing(lambda before, now: repeats.release())
    done: list[Future[Any]] = []
    with idle_conn(kafka_broker) as conn:
        conn.send(request, FETCH_BY_NAME).result(10)
        link, end = stand(conn, request, FETCH_BY_NAME, standing, done)
        began = time.monotonic()
        # Sent again by the connection, answer after answer, for four idle periods and more.
        while time.monotonic() - began < 4 * IDLE_MS / 1000:
            assert repeats.acquire(timeout=10), "the standing long poll stopped"
        assert standing.live and not done
        assert conn._link is link and not link.expired and broker_end_open(end)
        standing.end()
        wait_for(lambda: bool(done), 10, "the ended long poll's answer")
        closed_at_broker(end)  # then idle


def test_a_standing_heartbeat_waiting_for_its_time_keeps_its_connection(
        kafka_broker: LocalBroker) -> None:  # noqa: F811
    # A timed standing sent every two idle periods: between its sends nothing is in flight.
    sends = threading.Semaphore(0)
    standing = Standing(lambda before, now: sends.release(), every=2 * IDLE_MS / 1000)
    done: list[Future[Any]] = []
    with idle_conn(kafka_broker) as conn:
        conn.send(NO_TOPICS).result(10)
        link, end = stand(conn, NO_TOPICS, conn.versions[ApiKey.METADATA], standing, done)
        for _ in range(3):  # three sends after waits of two idle periods each
            assert sends.acquire(timeout=10), "the standing heartbeat stopped"
        assert standing.live and not done
        assert conn._link is link and not link.expired and broker_end_open(end)
        standing.end()
        wait_for(lambda: bool(done), 10, "the ended heartbeat's answer")
        closed_at_broker(end)  # then idle


@pytest.mark.parametrize("setting", [-1, 2**63 - 1])
def test_a_negative_or_huge_setting_closes_nothing(
        kafka_broker: LocalBroker, topic: str, setting: int) -> None:  # noqa: F811
    with idle_conn(kafka_broker, setting) as kept, idle_conn(kafka_broker) as closing:
        kept.send(NO_TOPICS).result(10)
        kept_end, closing_end = ends(kept), busy(closing, topic)[1]
        # Both idle from here; the one at IDLE_MS closes, the other one stays open.
        closed_at_broker(closing_end)
        threading.Event().wait(2 * IDLE_MS / 1000)  # and two idle periods more: nothing comes
        assert kept.connected and broker_end_open(kept_end)
        assert kept.send(NO_TOPICS).result(10).brokers and ends(kept) == kept_end
        # Its watchdog still fails a request past its deadline (Java's Long.MAX_VALUE would
        # overflow a thread's timed wait).
        late = kept.send(long_poll(topic, 5_000), FETCH_BY_NAME, timeout_ms=200)
        with pytest.raises(RequestTimeoutError):
            late.result(10)
