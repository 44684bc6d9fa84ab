"""BrokerConnection against the local Tansu broker: negotiation, pipelining, concurrency,
a socket killed under a request, metrics, TLS (through a TLS terminator, since the
bundled Tansu cannot serve TLS) and SCRAM refusal."""

from __future__ import annotations

import socket
import ssl
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import trustme

from groupkit.errors import AuthenticationError, ConfigError, KafkaConnectionError
from groupkit.protocol.framing import DIRECT_FRAME_BYTES
from groupkit.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupkit.protocol.messages.create_topics import CreateTopicsRequest, CreateTopicsRequestTopic
from groupkit.protocol.messages.fetch import (
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    FetchResponse,
)
from groupkit.protocol.messages.metadata import MetadataRequest, MetadataResponse
from groupkit.protocol.records import decode_records
from groupkit.protocol.versions import negotiate
from groupkit.runtime.connection import BrokerConnection
from groupkit.runtime.sasl import SaslCredentials
from groupkit.runtime.tls import TlsConfig
from groupkit.testing import LocalBroker, probe_api_versions
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support.broker_data import create_topic as create_broker_topic, write_batches
from tests.support.tls_terminator import TlsTerminator

pytestmark = pytest.mark.broker

# Fetch v12 is the last version that names topics instead of using topic ids.
FETCH_BY_NAME = 12


@pytest.fixture
def conn(kafka_broker: LocalBroker):  # noqa: F811
    with BrokerConnection(kafka_broker.host, kafka_broker.port, request_timeout_ms=30_000) as c:
        yield c


def create_topic(conn: BrokerConnection, name: str) -> None:
    request = CreateTopicsRequest(
        topics=[CreateTopicsRequestTopic(name=name, num_partitions=1, replication_factor=1)],
        timeout_ms=10_000)
    response = conn.send(request).result(10)
    assert response.topics[0].error_code == 0


def long_poll(topic: str, wait_ms: int) -> FetchRequest:
    partition = FetchRequestPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
    return FetchRequest(max_wait_ms=wait_ms, min_bytes=1,
                        topics=[FetchRequestTopic(topic=topic, partitions=[partition])])


def test_versions_are_negotiated_from_api_versions(kafka_broker, conn) -> None:  # noqa: F811
    conn.connect()
    broker_side = probe_api_versions(kafka_broker.host, kafka_broker.port, timeout=5)
    assert conn.versions == negotiate(broker_side)
    assert conn.versions[18] == ApiVersionsRequest.MAX_VERSION
    response = conn.send(ApiVersionsRequest()).result(10)
    assert isinstance(response, ApiVersionsResponse) and response.error_code == 0


def test_many_requests_pipelined_on_one_connection(kafka_broker) -> None:  # noqa: F811
    with BrokerConnection(kafka_broker.host, kafka_broker.port) as c:
        c.connect()
        futures = [c.send(MetadataRequest()) for _ in range(200)]
        results = [f.result(30) for f in futures]
    assert all(isinstance(r, MetadataResponse) for r in results)
    assert all(r.brokers[0].port == kafka_broker.port for r in results)


def test_eight_threads_share_one_connection(conn) -> None:
    def work(n: int) -> list[object]:
        kinds = (MetadataRequest(), ApiVersionsRequest())
        futures = [conn.send(kinds[(n + i) % 2]) for i in range(40)]
        return [f.result(30) for f in futures]

    with ThreadPoolExecutor(8) as pool:
        batches = list(pool.map(work, range(8)))
    for n, batch in enumerate(batches):
        for i, response in enumerate(batch):
            expected = (MetadataResponse, ApiVersionsResponse)[(n + i) % 2]
            assert isinstance(response, expected)
    assert conn.in_flight() == 0


def test_killed_socket_fails_waiters_at_once_and_next_request_reconnects(conn,
                                                                          unique_name) -> None:  # noqa: F811
    topic = unique_name("idle")
    create_topic(conn, topic)
    # The broker answers in order, so the Metadata waits behind the 20 s long poll.
    fetch = conn.send(long_poll(topic, 20_000), version=FETCH_BY_NAME)
    meta = conn.send(MetadataRequest())
    assert conn.in_flight() == 2
    started = time.monotonic()
    conn._link.sock.shutdown(socket.SHUT_RDWR)  # fault injection: the socket dies under us
    for waiter in (fetch, meta):
        with pytest.raises(KafkaConnectionError):
            waiter.result(5)
    assert time.monotonic() - started < 5
    assert isinstance(conn.send(MetadataRequest()).result(10), MetadataResponse)
    assert conn.connected


def test_long_poll_on_one_connection_does_not_delay_another(kafka_broker, conn,  # noqa: F811
                                                             unique_name) -> None:  # noqa: F811
    topic = unique_name("slow")
    create_topic(conn, topic)
    started = time.monotonic()
    fetch = conn.send(long_poll(topic, 10_000), version=FETCH_BY_NAME, timeout_ms=30_000)
    with BrokerConnection(kafka_broker.host, kafka_broker.port) as coordinator:
        assert isinstance(coordinator.send(MetadataRequest()).result(10), MetadataResponse)
    assert time.monotonic() - started < 8
    assert not fetch.done()


def test_long_poll_fetch_answers_after_its_wait(conn, unique_name) -> None:  # noqa: F811
    topic = unique_name("poll")
    create_topic(conn, topic)
    response = conn.send(long_poll(topic, 300), version=FETCH_BY_NAME).result(10)
    assert isinstance(response, FetchResponse)
    assert response.responses[0].partitions[0].error_code == 0


# --- TLS -----------------------------------------------------------------------------------


@pytest.fixture
def tls_setup(kafka_broker, tmp_path):  # noqa: F811
    ca = trustme.CA()
    server_cert = ca.issue_cert("127.0.0.1")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_cert.configure_cert(context)
    ca.configure_trust(context)
    context.verify_mode = ssl.CERT_OPTIONAL
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    terminator = TlsTerminator(context, (kafka_broker.host, kafka_broker.port))
    yield ca, ca_file, terminator
    terminator.close()


def test_tls_with_the_right_ca_talks_to_the_broker(tls_setup) -> None:
    _, ca_file, terminator = tls_setup
    tls = TlsConfig(cafile=ca_file)
    with BrokerConnection("127.0.0.1", terminator.port, tls=tls) as c:
        assert isinstance(c.send(MetadataRequest()).result(10), MetadataResponse)
        assert c._link.sock.version() is not None

        def work(_: int) -> list[object]:
            futures = [c.send(MetadataRequest()) for _ in range(50)]
            return [f.result(30) for f in futures]

        with ThreadPoolExecutor(4) as pool:
            batches = list(pool.map(work, range(4)))
        assert all(isinstance(r, MetadataResponse) for batch in batches for r in batch)


def test_tls_answer_larger_than_a_read_is_received_whole(tls_setup, kafka_broker,  # noqa: F811
                                                          unique_name) -> None:  # noqa: F811
    # A Fetch answer of ~400 KB is collected straight into its own buffer (recv_into), here
    # through the serialised TLS socket.
    _, ca_file, terminator = tls_setup
    topic = unique_name("tls-big")
    create_broker_topic(kafka_broker.bootstrap_servers, topic, 1)
    written = write_batches(kafka_broker.bootstrap_servers, topic, {0: [500] * 8}, b"t" * 100)
    assert written == {0: 4000}
    with BrokerConnection("127.0.0.1", terminator.port, tls=TlsConfig(cafile=ca_file)) as c:
        response = c.send(long_poll(topic, 100), version=FETCH_BY_NAME).result(30)
    records = response.responses[0].partitions[0].records
    assert len(records) > DIRECT_FRAME_BYTES
    assert [(r.offset, r.value) for r in decode_records(records)] == [
        (i, b"t" * 100) for i in range(4000)]


def test_tls_client_certificate_with_encrypted_key(tls_setup, tmp_path) -> None:
    from cryptography.hazmat.primitives import serialization

    ca, ca_file, terminator = tls_setup
    client = ca.issue_cert("client.groupkit.test")
    key = serialization.load_pem_private_key(client.private_key_pem.bytes(), password=None)
    (tmp_path / "client.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"key-pass-123")))
    client.cert_chain_pems[0].write_to_path(str(tmp_path / "client.pem"))
    tls = TlsConfig(cafile=ca_file, certfile=tmp_path / "client.pem",
                    keyfile=tmp_path / "client.key", password="key-pass-123")
    assert "key-pass-123" not in repr(tls)
    with BrokerConnection("127.0.0.1", terminator.port, tls=tls) as c:
        assert isinstance(c.send(MetadataRequest()).result(10), MetadataResponse)
        assert "key-pass-123" not in repr(c)
    wrong = TlsConfig(cafile=ca_file, certfile=tmp_path / "client.pem",
                      keyfile=tmp_path / "client.key", password="not-the-pass")
    with pytest.raises(ConfigError, match="key password") as info:
        BrokerConnection("127.0.0.1", terminator.port, tls=wrong)
    assert "not-the-pass" not in str(info.value)


def test_tls_with_the_wrong_ca_fails_clearly(tls_setup, tmp_path) -> None:
    _, _, terminator = tls_setup
    other_ca = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other_ca))
    with BrokerConnection("127.0.0.1", terminator.port, tls=TlsConfig(cafile=other_ca)) as c, \
            pytest.raises(KafkaConnectionError, match=r"CERTIFICATE_VERIFY_FAILED \(.+\).*CA file"):
        c.connect()


def test_tls_hostname_is_checked(tls_setup) -> None:
    _, ca_file, terminator = tls_setup
    # The certificate names 127.0.0.1 only; "localhost" resolves there but is not in it.
    with BrokerConnection("localhost", terminator.port, tls=TlsConfig(cafile=ca_file)) as c, \
            pytest.raises(KafkaConnectionError, match="TLS handshake"):
        c.connect()


# --- SASL against Tansu --------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_tansu_refuses_scram_for_an_unknown_user(mechanism: str) -> None:
    # Tansu with memory storage cannot hold users (see groupkit.testing), so only the refusal
    # is visible; the success path is tested against the SCRAM server in test_connection_fake.
    creds = SaslCredentials(mechanism, "nobody", "no-such-password")
    with LocalBroker(authentication=True) as broker, \
            BrokerConnection(broker.host, broker.port, sasl=creds) as c:
        with pytest.raises(AuthenticationError, match="unknown-user") as info:
            c.connect()
        assert "no-such-password" not in str(info.value)
        assert not c.connected
