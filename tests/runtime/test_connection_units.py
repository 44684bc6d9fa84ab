"""Units of the connection layer that need no broker: the SCRAM client against RFC 7677's
published exchange, the reconnect backoff, and secrets kept out of reprs."""

from __future__ import annotations

import socket
import time

import pytest

from groupkit.errors import AuthenticationError, ConfigError, KafkaConnectionError
from groupkit.protocol.messages.metadata import MetadataRequest
from groupkit.runtime.connection import BrokerConnection
from groupkit.runtime.sasl import SaslCredentials, ScramClient, plain_message
from groupkit.runtime.tls import TlsConfig

# RFC 7677 section 3: SCRAM-SHA-256 for user "user", password "pencil".
CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_FIRST = (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_scram_sha256_matches_rfc7677() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=CLIENT_NONCE)
    assert client.first_message() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert client.final_message(SERVER_FIRST) == CLIENT_FINAL
    client.verify_server_final(SERVER_FINAL)


def test_scram_rejects_a_wrong_server_signature() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=CLIENT_NONCE)
    client.first_message()
    client.final_message(SERVER_FIRST)
    with pytest.raises(AuthenticationError, match="server signature"):
        client.verify_server_final(b"v=" + SERVER_FINAL[2:].replace(b"6", b"7"))


def test_scram_rejects_a_server_nonce_that_drops_ours() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=CLIENT_NONCE)
    client.first_message()
    with pytest.raises(AuthenticationError, match="nonce"):
        client.final_message(b"r=someone-else,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")


def test_scram_reports_the_servers_error() -> None:
    client = ScramClient("SCRAM-SHA-512", "user", "pencil")
    client.first_message()
    with pytest.raises(AuthenticationError, match="unknown-user"):
        client.final_message(b"e=unknown-user")


def test_scram_escapes_comma_and_equals_in_the_username() -> None:
    client = ScramClient("SCRAM-SHA-512", "a,b=c", "pw", nonce="n0")
    assert client.first_message() == b"n,,n=a=2Cb=3Dc,r=n0"


def test_plain_message_layout() -> None:
    assert plain_message("alice", "pw") == b"\0alice\0pw"


def test_secrets_stay_out_of_reprs() -> None:
    creds = SaslCredentials("SCRAM-SHA-512", "alice", "top-secret-1")
    scram = ScramClient("SCRAM-SHA-512", "alice", "top-secret-1")
    tls = TlsConfig(password="top-secret-2")
    conn = BrokerConnection("127.0.0.1", 9, sasl=creds)
    for text in (repr(creds), repr(scram), repr(tls), repr(conn)):
        assert "top-secret" not in text
    assert "alice" in repr(creds)


def test_unknown_mechanism_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="SCRAM-SHA-512"):
        SaslCredentials("GSSAPI", "alice", "pw")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_reconnect_waits_out_the_backoff_with_injected_jitter() -> None:
    draws: list[float] = []

    def jitter() -> float:
        draws.append(0.5)
        return 0.5

    conn = BrokerConnection("127.0.0.1", _closed_port(), reconnect_backoff_ms=200,
                            reconnect_backoff_max_ms=300, jitter=jitter)
    # The back-off runs from the failed attempt, so the clock starts before it: a test thread
    # delayed between the failure and the next line must not shorten the wait it sees.
    started = time.monotonic()
    with pytest.raises(KafkaConnectionError, match="cannot connect"):
        conn.connect()
    future = conn.send(MetadataRequest())
    assert isinstance(future.exception(5), KafkaConnectionError)
    assert time.monotonic() - started >= 0.19
    assert len(draws) == 2


def test_bad_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="request_timeout_ms"):
        BrokerConnection("127.0.0.1", 9092, request_timeout_ms=0)
    with pytest.raises(ConfigError, match="cafile"):
        BrokerConnection("127.0.0.1", 9092, tls=TlsConfig(cafile="/nonexistent/ca.pem"))


