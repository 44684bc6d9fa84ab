"""BrokerConnection against a scripted fake broker: the faults a real broker will not produce
on demand (silence, wrong correlation ids), proof of pipelining, and SASL exchanges with a
SCRAM server side written here (Tansu 0.6.0 with memory storage cannot hold SASL users)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import socket
import struct
import time
from collections.abc import Callable

import pytest

from groupkit.errors import (
    ApiKey,
    AuthenticationError,
    KafkaConnectionError,
    NegotiationError,
    RequestTimeoutError,
    UnsupportedVersionError,
)
from groupkit.hooks import BrokerRecovered, BrokerUnreachable
from groupkit.protocol.headers import RequestHeader, encode_response_frame
from groupkit.protocol.messages.api_versions import (
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
)
from groupkit.protocol.messages.metadata import MetadataRequest, MetadataResponse
from groupkit.protocol.messages.produce import ProduceRequest
from groupkit.protocol.messages.sasl import SaslAuthenticateResponse, SaslHandshakeResponse
from groupkit.protocol.schema import Request
from groupkit.runtime.connection import BrokerConnection
from groupkit.runtime.sasl import SaslCredentials
from tests.support.fake_broker import FakeBroker, Handler, reply


@pytest.fixture
def fake_broker():
    brokers: list[FakeBroker] = []

    def make(handler: Handler, port: int = 0) -> FakeBroker:
        broker = FakeBroker(handler, port=port)
        brokers.append(broker)
        return broker

    yield make
    for broker in brokers:
        broker.close()


def metadata_reply(sock, header, request) -> None:
    reply(sock, header, MetadataResponse())


def test_requests_are_pipelined_not_serialised(fake_broker) -> None:
    # The fake answers nothing until it holds 20 requests: a client that waited for each
    # response before sending the next would never see one.
    held: list[RequestHeader] = []

    def hold_then_answer(sock, header, request) -> None:
        held.append(header)
        if len(held) == 20:
            for h in held:
                reply(sock, h, MetadataResponse())

    broker = fake_broker(hold_then_answer)
    with BrokerConnection("127.0.0.1", broker.port, request_timeout_ms=10_000) as conn:
        futures = [conn.send(MetadataRequest()) for _ in range(20)]
        results = [f.result(10) for f in futures]
    assert all(isinstance(r, MetadataResponse) for r in results)
    assert len({h.correlation_id for h in held}) == 20


def test_silent_broker_times_out_the_request_and_closes(fake_broker) -> None:
    broker = fake_broker(lambda sock, header, request: None)
    events: list[object] = []
    with BrokerConnection("127.0.0.1", broker.port, request_timeout_ms=300,
                          hooks=[events.append]) as conn:
        conn.connect()
        first = conn.send(MetadataRequest())
        second = conn.send(MetadataRequest(), timeout_ms=10_000)
        with pytest.raises(RequestTimeoutError, match="Metadata v12 .* within 300 ms"):
            first.result(5)
        with pytest.raises(KafkaConnectionError, match="closed"):
            second.result(1)
        assert not conn.connected and conn.in_flight() == 0
    # The broken connection is reported once; close() afterwards is not a failure.
    assert len(events) == 1 and isinstance(events[0], BrokerUnreachable)
    assert events[0].broker == f"127.0.0.1:{broker.port}" and events[0].failures == 0
    assert "within 300 ms" in events[0].error


def test_failed_connects_and_the_recovery_reach_the_hooks(fake_broker) -> None:
    port = _free_port()
    events: list[object] = []
    with BrokerConnection("127.0.0.1", port, reconnect_backoff_ms=1, reconnect_backoff_max_ms=1,
                          hooks=[events.append]) as conn:
        for _ in range(2):
            with pytest.raises(KafkaConnectionError, match="cannot connect"):
                conn.connect()
        assert [(type(e), e.failures) for e in events] == [(BrokerUnreachable, 1),
                                                           (BrokerUnreachable, 2)]
        fake_broker(metadata_reply, port)  # the broker comes (back) on that address
        assert isinstance(conn.send(MetadataRequest()).result(5), MetadataResponse)
    assert len(events) == 3 and isinstance(events[2], BrokerRecovered)
    assert events[2].broker == f"127.0.0.1:{port}"
    assert events[2].failures == 2 and events[2].down_s > 0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_failing_hook_does_not_break_the_connection(fake_broker) -> None:
    def broken_hook(event: object) -> None:
        raise RuntimeError("hook bug")

    broker = fake_broker(metadata_reply)
    refused = BrokerConnection("127.0.0.1", _free_port(), hooks=[broken_hook])
    with pytest.raises(KafkaConnectionError, match="cannot connect"):
        refused.connect()
    with BrokerConnection("127.0.0.1", broker.port, hooks=[broken_hook]) as conn:
        assert isinstance(conn.send(MetadataRequest()).result(5), MetadataResponse)
        assert isinstance(conn.send(MetadataRequest()).result(5), MetadataResponse)


def test_mismatched_correlation_id_fails_every_waiter(fake_broker) -> None:
    def wrong_id(sock, header, request) -> None:
        if header.correlation_id % 3 == 0:
            reply(sock, header, MetadataResponse(), correlation_id=header.correlation_id + 1000)

    broker = fake_broker(wrong_id)
    with BrokerConnection("127.0.0.1", broker.port, request_timeout_ms=10_000) as conn:
        conn.connect()
        futures = [conn.send(MetadataRequest()) for _ in range(3)]
        for future in futures:
            with pytest.raises(KafkaConnectionError, match="correlation id"):
                future.result(5)
        assert not conn.connected and conn.in_flight() == 0


def test_broker_closing_the_socket_fails_waiters_and_next_send_reconnects(fake_broker) -> None:
    def close_on_first(sock, header, request) -> None:
        if broker.connections == 1:
            sock.shutdown(socket.SHUT_RDWR)
        else:
            reply(sock, header, MetadataResponse())

    broker = fake_broker(close_on_first)
    with BrokerConnection("127.0.0.1", broker.port, request_timeout_ms=10_000) as conn:
        started = time.monotonic()
        with pytest.raises(KafkaConnectionError):
            conn.send(MetadataRequest()).result(5)
        assert time.monotonic() - started < 5
        assert isinstance(conn.send(MetadataRequest()).result(5), MetadataResponse)
    assert broker.connections == 2


def test_acks_zero_produce_waits_for_no_response(fake_broker) -> None:
    def answer_metadata_only(sock, header, request) -> None:
        if header.api_key == 3:
            reply(sock, header, MetadataResponse())

    broker = fake_broker(answer_metadata_only)
    with BrokerConnection("127.0.0.1", broker.port, request_timeout_ms=2_000) as conn:
        produced = conn.send(ProduceRequest(acks=0, timeout_ms=1000, topic_data=[]))
        assert produced.result(1) is None
        assert isinstance(conn.send(MetadataRequest()).result(5), MetadataResponse)
        assert conn.in_flight() == 0
    assert [h.api_key for h in broker.received] == [18, 0, 3]


# --- version negotiation ---------------------------------------------------------------------

OLD_KEYS = [ApiVersion(api_key=18, min_version=0, max_version=2),
            ApiVersion(api_key=3, min_version=0, max_version=9)]
ApiVersionsAnswer = Callable[[RequestHeader], bytes]


def unsupported_in_v0(header: RequestHeader) -> bytes:
    """Kafka 2.4+ (KIP-511): refuse in v0 form, listing the ApiVersions range it speaks."""
    body = ApiVersionsResponse(error_code=35, api_keys=OLD_KEYS)
    return encode_response_frame(body, 0, header.correlation_id)


def unsupported_in_requested_form(header: RequestHeader) -> bytes:
    """Refuse in the flexible form of the version that was asked for."""
    body = ApiVersionsResponse(error_code=35, api_keys=OLD_KEYS)
    return encode_response_frame(body, header.api_version, header.correlation_id)


def unsupported_unparsable(header: RequestHeader) -> bytes:
    """Error code 35 first, then bytes that are no ApiVersions body in any version."""
    body = struct.pack(">h", 35) + b"\xff\xff\xff\x7f\x01"
    return struct.pack(">ii", 4 + len(body), header.correlation_id) + body


def old_broker(refuse: ApiVersionsAnswer, above: int) -> FakeBroker:
    """A broker that refuses ApiVersions above ``above`` with ``refuse`` and answers the rest
    (ApiVersions up to 2, Metadata up to 9) in the form asked for."""
    def api_versions(sock: socket.socket, header: RequestHeader, request: Request) -> None:
        if header.api_version > above:
            sock.sendall(refuse(header))
        else:
            reply(sock, header, ApiVersionsResponse(error_code=0, api_keys=OLD_KEYS))

    return FakeBroker(metadata_reply, script={ApiKey.API_VERSIONS: api_versions})


def asked_versions(broker: FakeBroker) -> list[int]:
    """The version of every ApiVersions request the broker was sent, in order."""
    return [h.api_version for h in broker.received if h.api_key == ApiKey.API_VERSIONS]


@pytest.mark.parametrize(("refuse", "retried_with"), [
    (unsupported_in_v0, 2),
    (unsupported_in_requested_form, 2),
    (unsupported_unparsable, 0),
], ids=["v0-form", "requested-flexible-form", "unparsable-body"])
def test_unsupported_api_versions_is_retried_lower_never_closed(
        refuse: ApiVersionsAnswer, retried_with: int) -> None:
    # Java (NetworkClient): retry with the highest ApiVersions version the refusal lists, or v0
    # when the list cannot be read; the same connection carries on.
    with old_broker(refuse, above=2) as broker, \
            BrokerConnection("127.0.0.1", broker.port) as conn:
        conn.connect()
        assert asked_versions(broker) == [ApiVersionsRequest.MAX_VERSION, retried_with]
        assert conn.versions[3] == 9
        assert conn.versions[18] == 2
        assert isinstance(conn.send(MetadataRequest()).result(5), MetadataResponse)


def test_a_refusal_listing_a_version_not_lower_still_steps_down() -> None:
    def claims_v4(header: RequestHeader) -> bytes:
        keys = [ApiVersion(api_key=18, min_version=0, max_version=4)]
        return encode_response_frame(ApiVersionsResponse(error_code=35, api_keys=keys), 0,
                                     header.correlation_id)

    with old_broker(claims_v4, above=1) as broker, \
            BrokerConnection("127.0.0.1", broker.port) as conn:
        conn.connect()
    assert asked_versions(broker) == [4, 3, 2, 1]


def test_a_refusal_of_v0_is_an_unsupported_version_error() -> None:
    with old_broker(unsupported_in_v0, above=-1) as broker, \
            BrokerConnection("127.0.0.1", broker.port) as conn, \
            pytest.raises(UnsupportedVersionError, match="refused ApiVersions v0"):
        conn.connect()
    assert asked_versions(broker) == [ApiVersionsRequest.MAX_VERSION, 2, 1, 0]


def test_an_unreadable_negotiation_reply_names_the_api_and_version() -> None:
    def garbage(header: RequestHeader) -> bytes:
        body = b"\x00\x00\xff\xff"
        return struct.pack(">ii", 4 + len(body), header.correlation_id) + body

    version = ApiVersionsRequest.MAX_VERSION
    with old_broker(garbage, above=-1) as broker, \
            BrokerConnection("127.0.0.1", broker.port) as conn, \
            pytest.raises(NegotiationError, match=f"ApiVersions v{version} reply from"):
        conn.connect()


def test_bytes_after_a_known_response_body_keep_the_connection(fake_broker) -> None:
    # A newer broker may append fields this version does not define; Java ignores them.
    def metadata_plus_one_byte(sock, header, request) -> None:
        frame = encode_response_frame(MetadataResponse(), header.api_version,
                                      header.correlation_id) + b"\x00"
        sock.sendall(struct.pack(">i", len(frame) - 4) + frame[4:])

    broker = fake_broker(metadata_plus_one_byte)
    with BrokerConnection("127.0.0.1", broker.port) as conn:
        for _ in range(2):
            assert isinstance(conn.send(MetadataRequest()).result(5), MetadataResponse)
        assert broker.connections == 1


# --- SASL ----------------------------------------------------------------------------------


class ScramServer:
    """The server side of RFC 5802 for one user, enough to check the client end to end."""

    def __init__(self, mechanism: str, username: str, password: str) -> None:
        self.hash = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
        self.username = username
        self.salt = b"groupkit-test-salt"
        self.iterations = 4096
        salted = hashlib.pbkdf2_hmac(self.hash, password.encode(), self.salt, self.iterations)
        client_key = hmac.new(salted, b"Client Key", self.hash).digest()
        self.stored_key = hashlib.new(self.hash, client_key).digest()
        self.server_key = hmac.new(salted, b"Server Key", self.hash).digest()
        self.client_first_bare = ""
        self.server_first = ""

    def first(self, message: bytes) -> tuple[int, str, bytes]:
        text = message.decode()
        assert text.startswith("n,,")
        self.client_first_bare = text[3:]
        fields = dict(p.split("=", 1) for p in self.client_first_bare.split(","))
        if fields["n"] != self.username:
            return 58, "Authentication failed: unknown user", b""
        self.server_first = (f"r={fields['r']}server-nonce,"
                             f"s={base64.b64encode(self.salt).decode()},i={self.iterations}")
        return 0, "", self.server_first.encode()

    def final(self, message: bytes) -> tuple[int, str, bytes]:
        text = message.decode()
        without_proof, _, proof = text.rpartition(",p=")
        auth = f"{self.client_first_bare},{self.server_first},{without_proof}".encode()
        signature = hmac.new(self.stored_key, auth, self.hash).digest()
        client_key = bytes(a ^ b for a, b in zip(base64.b64decode(proof), signature,
                                                  strict=True))
        if hashlib.new(self.hash, client_key).digest() != self.stored_key:
            return 58, "Authentication failed due to invalid credentials with SASL mechanism", b""
        server_signature = hmac.new(self.server_key, auth, self.hash).digest()
        return 0, "", b"v=" + base64.b64encode(server_signature)


def sasl_handler(mechanism: str, username: str, password: str,
                 tamper_signature: bool = False) -> Handler:
    scram = ScramServer(mechanism, username, password) if mechanism != "PLAIN" else None
    step = {"n": 0}

    def handle(sock, header, request) -> None:
        if header.api_key == 17:
            ok = request.mechanism == mechanism
            reply(sock, header, SaslHandshakeResponse(error_code=0 if ok else 33,
                                                      mechanisms=[mechanism]))
        elif header.api_key == 36:
            if scram is None:
                good = request.auth_bytes == f"\0{username}\0{password}".encode()
                code, message, data = (0, "", b"") if good else (
                    58, "Authentication failed: Invalid username or password", b"")
            elif step["n"] == 0:
                code, message, data = scram.first(request.auth_bytes)
            else:
                code, message, data = scram.final(request.auth_bytes)
                if tamper_signature and code == 0:
                    data = b"v=" + base64.b64encode(b"\0" * 32)
            step["n"] += 1
            reply(sock, header, SaslAuthenticateResponse(error_code=code, error_message=message,
                                                         auth_bytes=data))
        else:
            reply(sock, header, MetadataResponse())

    return handle


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_login_succeeds_with_the_right_secret(fake_broker, mechanism: str) -> None:
    broker = fake_broker(sasl_handler(mechanism, "alice", "s3cret-pw"))
    creds = SaslCredentials(mechanism, "alice", "s3cret-pw")
    with BrokerConnection("127.0.0.1", broker.port, sasl=creds) as conn:
        assert isinstance(conn.send(MetadataRequest()).result(5), MetadataResponse)
    assert [h.api_key for h in broker.received][:2] == [18, 17]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_wrong_secret_raises_with_the_brokers_message_and_no_secret(
        fake_broker, caplog: pytest.LogCaptureFixture, mechanism: str) -> None:
    broker = fake_broker(sasl_handler(mechanism, "alice", "s3cret-pw"))
    creds = SaslCredentials(mechanism, "alice", "hunter2-wrong")
    caplog.set_level(logging.DEBUG)
    conn = BrokerConnection("127.0.0.1", broker.port, sasl=creds)
    with conn, pytest.raises(AuthenticationError, match="Authentication failed") as info:
        conn.connect()
    future = conn.send(MetadataRequest())
    for text in (str(info.value), repr(info.value), repr(conn), repr(creds), caplog.text,
                 repr(future.exception())):
        assert "hunter2-wrong" not in text
        assert "s3cret-pw" not in text


def test_scram_rejects_a_server_that_cannot_prove_the_password(fake_broker) -> None:
    broker = fake_broker(sasl_handler("SCRAM-SHA-256", "alice", "pw", tamper_signature=True))
    creds = SaslCredentials("SCRAM-SHA-256", "alice", "pw")
    with BrokerConnection("127.0.0.1", broker.port, sasl=creds) as conn, \
            pytest.raises(AuthenticationError, match="server signature"):
        conn.connect()


def test_mechanism_the_broker_does_not_offer_is_named(fake_broker) -> None:
    broker = fake_broker(sasl_handler("SCRAM-SHA-512", "alice", "pw"))
    creds = SaslCredentials("PLAIN", "alice", "pw")
    with BrokerConnection("127.0.0.1", broker.port, sasl=creds) as conn, \
            pytest.raises(AuthenticationError, match="offers SCRAM-SHA-512"):
        conn.connect()


def test_a_closed_fake_broker_takes_no_more_connections() -> None:
    """close() stops the fake's accepting thread at once. A thread left blocked in accept
    keeps the socket listening after close until one more connection comes: in one CI run
    another test's metrics server got that connection's port, and its scrape reached the fake."""
    broker = FakeBroker(metadata_reply)
    with BrokerConnection("127.0.0.1", broker.port) as conn:
        assert isinstance(conn.send(MetadataRequest()).result(5), MetadataResponse)
    broker.close()
    broker.acceptor.join(5)
    assert not broker.acceptor.is_alive()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", broker.port), timeout=5).close()
