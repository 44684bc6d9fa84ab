"""A BrokerConnection under an ``api_version`` pin, against brokers that misbehave about
versions: one that advertises a version and closes the connection on it, one that lacks an API,
one whose answer cannot be read. A scripted fake broker is the only way to get each of these on
demand; the mock cluster test (tests/integration/test_mock_cluster.py) meets the real one."""

from __future__ import annotations

import logging
import socket

import pytest

from groupkit.errors import (
    ApiKey,
    CorruptFrame,
    FeatureUnsupportedError,
    KafkaConnectionError,
    RequestDroppedError,
    UnsupportedVersionError,
)
from groupkit.protocol.headers import RequestHeader
from groupkit.protocol.messages.group import JoinGroupRequest, JoinGroupResponse
from groupkit.protocol.messages.metadata import MetadataRequest, MetadataResponse
from groupkit.protocol.messages.offset_delete import OffsetDeleteRequest
from groupkit.protocol.schema import Request
from groupkit.protocol.versions import CLIENT_VERSIONS
from groupkit.runtime.connection import BrokerConnection
from groupkit.runtime.reachability import Reachability
from tests.support.fake_broker import FakeBroker, reply, reply_body

JOIN = JoinGroupRequest(group_id="g", session_timeout_ms=6000, member_id="",
                        protocol_type="consumer")
#: What the mock cluster advertises for the group APIs it cannot serve at their top version.
MOCK_LIKE = {**CLIENT_VERSIONS, ApiKey.JOIN_GROUP: (0, 6), ApiKey.SYNC_GROUP: (0, 4)}


def answer_metadata(sock: socket.socket, header: RequestHeader, request: Request) -> None:
    reply(sock, header, MetadataResponse())


def connection(broker: FakeBroker, **settings: object) -> BrokerConnection:
    return BrokerConnection("127.0.0.1", broker.port, reconnect_backoff_ms=1,
                            reconnect_backoff_max_ms=1, **settings)  # type: ignore[arg-type]


def test_a_pin_caps_api_versions_and_every_api_it_negotiates() -> None:
    with FakeBroker(answer_metadata) as broker, connection(broker, api_version="2.3") as conn:
        conn.connect(5)
        assert broker.received[0].api_key == ApiKey.API_VERSIONS
        assert broker.received[0].api_version == 2  # Kafka 2.3 speaks ApiVersions v0-v2
        assert conn.versions[ApiKey.JOIN_GROUP] == 5
        assert conn.versions[ApiKey.METADATA] == 8
        assert ApiKey.OFFSET_DELETE not in conn.versions
        error = conn.send(OffsetDeleteRequest(group_id="g")).exception(5)
    assert isinstance(error, FeatureUnsupportedError)
    assert error.release == "2.4" and error.feature == "OffsetDelete"
    assert "api_version='2.3' pins a Kafka release without OffsetDelete" in str(error)


def test_without_a_pin_an_api_the_broker_lacks_names_the_release_that_has_it() -> None:
    versions = {k: v for k, v in CLIENT_VERSIONS.items() if k != ApiKey.OFFSET_DELETE}
    with FakeBroker(answer_metadata, versions=versions) as broker, connection(broker) as conn:
        error = conn.send(OffsetDeleteRequest(group_id="g")).exception(5)
    assert isinstance(error, FeatureUnsupportedError)
    assert "does not offer OffsetDelete (API key 47); Kafka 2.4 and newer have it" in str(error)


def test_versions_that_do_not_meet_are_not_called_a_missing_feature() -> None:
    versions = {**CLIENT_VERSIONS, ApiKey.OFFSET_DELETE: (7, 9)}
    with FakeBroker(answer_metadata, versions=versions) as broker, connection(broker) as conn:
        error = conn.send(OffsetDeleteRequest(group_id="g")).exception(5)
    assert type(error) is UnsupportedVersionError
    assert "speaks versions 7-9, groupkit 0-0" in str(error)


def test_a_broker_that_closes_the_connection_on_a_version_is_named_after_three_times(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="groupkit")
    # Nothing scripted for JoinGroup: the fake closes the connection on it, every time.
    reachability = Reachability()
    with FakeBroker(versions=MOCK_LIKE) as broker, \
            connection(broker, reachability=reachability) as conn:
        errors = [conn.send(JOIN).exception(5) for _ in range(4)]
    first, second, third, fourth = errors
    for error in (first, second):
        assert type(error) is KafkaConnectionError
        assert "closed the connection right after JoinGroup v6" in str(error)
    assert isinstance(third, RequestDroppedError) and isinstance(fourth, RequestDroppedError)
    assert "right after JoinGroup v6, 3 times in a row" in str(third)
    assert "try api_version='2.3' (the newest release whose JoinGroup stops below v6)" \
        in str(third)
    # Four closes, one line at INFO: the rest are DEBUG, and none is a WARNING.
    closed = [r for r in caplog.records if "closed" in r.getMessage()
              and r.name.startswith("groupkit.runtime")]
    assert [r.levelno for r in closed if r.levelno >= logging.INFO] == [logging.INFO]
    assert len(closed) == 4


def test_the_pin_the_error_names_makes_the_broker_serve_the_request() -> None:
    def join_only_below_v6(sock: socket.socket, header: RequestHeader, request: Request) -> None:
        if header.api_version >= 6:
            sock.close()
        else:
            reply(sock, header, JoinGroupResponse(error_code=0, member_id="m-1"))

    with FakeBroker(versions=MOCK_LIKE,
                    script={ApiKey.JOIN_GROUP: join_only_below_v6}) as broker:
        with connection(broker) as conn:
            errors = [conn.send(JOIN).exception(5) for _ in range(3)]
        assert isinstance(errors[-1], RequestDroppedError)
        with connection(broker, api_version="2.3") as conn:
            answer = conn.send(JOIN).result(5)
        assert isinstance(answer, JoinGroupResponse) and answer.member_id == "m-1"
        assert broker.received[-1].api_version == 5


def test_an_answer_between_two_drops_starts_the_count_again() -> None:
    script = {ApiKey.METADATA: answer_metadata}
    with FakeBroker(versions=MOCK_LIKE, script=script) as broker, connection(broker) as conn:
        assert type(conn.send(JOIN).exception(5)) is KafkaConnectionError
        assert type(conn.send(JOIN).exception(5)) is KafkaConnectionError
        # A socket that answered something and then closed: not a request the broker refused.
        assert isinstance(conn.send(MetadataRequest()).result(5), MetadataResponse)
        assert type(conn.send(JOIN).exception(5)) is KafkaConnectionError
        assert type(conn.send(JOIN).exception(5)) is KafkaConnectionError
        assert type(conn.send(JOIN).exception(5)) is KafkaConnectionError
        assert isinstance(conn.send(JOIN).exception(5), RequestDroppedError)


def test_an_unreadable_answer_fails_its_request_at_once_naming_it() -> None:
    def short_metadata(sock: socket.socket, header: RequestHeader, request: Request) -> None:
        reply_body(sock, header, b"\x00\x00")

    with FakeBroker(short_metadata) as broker, connection(broker) as conn:
        error = conn.send(MetadataRequest()).exception(5)
        assert isinstance(error, CorruptFrame)
        assert f"the Metadata v12 answer from 127.0.0.1:{broker.port} could not be read" \
            in str(error)
        # The next send reconnects.
        assert isinstance(conn.send(MetadataRequest()).exception(5), CorruptFrame)
    assert broker.connections == 2


def test_a_close_long_after_the_request_is_an_outage_not_a_refusal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import groupkit.runtime.connection as connection_module

    # A broker that holds JoinGroup and dies meanwhile is not refusing the version.
    monkeypatch.setattr(connection_module, "_DROP_WINDOW_S", 0.0)
    with FakeBroker(versions=MOCK_LIKE) as broker, connection(broker) as conn:
        errors = [conn.send(JOIN).exception(5) for _ in range(4)]
    assert all(type(e) is KafkaConnectionError for e in errors)
    assert not any("right after" in str(e) for e in errors)
