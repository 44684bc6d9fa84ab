"""Request/response headers and whole frames, checked against the protocol guide and kafka-python."""

from __future__ import annotations

import contextlib
import logging
import struct

import pytest
from hypothesis import given, strategies as st

from groupkit.errors import CorruptFrame, UnsupportedVersionError
from groupkit.protocol import registry
from groupkit.protocol.headers import (
    RequestHeader,
    decode_request_frame,
    decode_response_frame,
    encode_request_frame,
    encode_response_frame,
    peek_correlation_id,
    request_header_version,
    response_header_version,
    set_request_correlation_id,
)
from groupkit.protocol.messages.api_versions import (
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
)
from groupkit.protocol.messages.metadata import MetadataResponse, MetadataResponseBroker
from groupkit.protocol.schema import INT32, STRING, Request, Response, f, message, pair

_TEST_KEY = 32000


@message(api_key=_TEST_KEY, versions="0-2", flexible="2+")
class EchoRequest(Request):
    text: str = f(STRING)


@message(api_key=_TEST_KEY, versions="0-2", flexible="2+")
class EchoResponse(Response):
    error_code: int = f(INT32)
    text: str = f(STRING)


pair(EchoRequest, EchoResponse)


@pytest.fixture
def echo_api(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.REQUESTS, _TEST_KEY, EchoRequest)


def unframe(frame: bytes) -> bytes:
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    return frame[4:]


@pytest.mark.parametrize(("version", "expected"), [(0, 1), (1, 1), (2, 1), (3, 2), (4, 2)])
def test_request_header_version_follows_flexibility(version: int, expected: int) -> None:
    assert request_header_version(18, version) == expected


@pytest.mark.parametrize("version", range(5))
def test_api_versions_response_header_is_always_v0(version: int) -> None:
    assert response_header_version(18, version) == 0


def test_response_header_v1_for_other_flexible_apis(echo_api: None) -> None:
    assert [response_header_version(_TEST_KEY, v) for v in range(3)] == [0, 0, 1]
    assert [request_header_version(_TEST_KEY, v) for v in range(3)] == [1, 1, 2]


def test_unknown_api_key_names_it() -> None:
    with pytest.raises(UnsupportedVersionError, match="API key 31999"):
        request_header_version(31999, 0)


def test_request_frame_v1_bytes() -> None:
    frame = encode_request_frame(ApiVersionsRequest(), 0, correlation_id=7, client_id="me")
    assert frame == (struct.pack(">ihhih", 12, 18, 0, 7, 2) + b"me")


def test_request_frame_v2_keeps_classic_client_id_then_tags() -> None:
    req = ApiVersionsRequest(client_software_name="gk", client_software_version="1")
    frame = encode_request_frame(req, 3, correlation_id=1, client_id="c")
    header = struct.pack(">hhih", 18, 3, 1, 1) + b"c" + b"\x00"
    body = b"\x03gk" + b"\x021" + b"\x00"
    assert unframe(frame) == header + body


def test_null_client_id() -> None:
    frame = encode_request_frame(ApiVersionsRequest(), 1, correlation_id=3, client_id=None)
    header, _ = decode_request_frame(unframe(frame))
    assert header.client_id is None
    assert unframe(frame)[8:10] == b"\xff\xff"


@pytest.mark.parametrize("version", range(5))
def test_request_frame_round_trip(version: int) -> None:
    req = ApiVersionsRequest() if version < 3 else ApiVersionsRequest(
        client_software_name="groupkit", client_software_version="0.1")
    frame = encode_request_frame(req, version, correlation_id=99, client_id="client-1")
    header, body = decode_request_frame(unframe(frame))
    assert header == RequestHeader(18, version, 99, "client-1", {})
    assert body == req


@pytest.mark.parametrize("version", range(5))
def test_a_request_frame_given_another_correlation_id_is_that_request_with_it(
        version: int) -> None:
    req = ApiVersionsRequest() if version < 3 else ApiVersionsRequest(
        client_software_name="groupkit", client_software_version="0.1")
    frame = bytearray(encode_request_frame(req, version, correlation_id=99, client_id="c"))
    set_request_correlation_id(frame, 2**31 - 1)
    assert bytes(frame) == encode_request_frame(req, version, 2**31 - 1, "c")
    header, body = decode_request_frame(unframe(bytes(frame)))
    assert (header.correlation_id, body) == (2**31 - 1, req)


@given(corr=st.integers(-(2**31), 2**31 - 1), client=st.none() | st.text(max_size=30),
       text=st.text(max_size=50), version=st.integers(0, 2))
def test_echo_round_trip_any_header(corr: int, client: str | None, text: str,
                                    version: int) -> None:
    registry.REQUESTS[_TEST_KEY] = EchoRequest
    try:
        frame = encode_request_frame(EchoRequest(text=text), version, corr, client)
        header, body = decode_request_frame(unframe(frame))
        assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
            _TEST_KEY, version, corr, client)
        assert body == EchoRequest(text=text)
        resp = EchoResponse(error_code=0, text=text)
        rframe = unframe(encode_response_frame(resp, version, corr))
        assert peek_correlation_id(rframe) == corr
        assert decode_response_frame(rframe, EchoResponse, version) == (corr, resp)
    finally:
        del registry.REQUESTS[_TEST_KEY]


def test_flexible_response_header_carries_tags(echo_api: None) -> None:
    frame = unframe(encode_response_frame(EchoResponse(text="x"), 2, correlation_id=5))
    assert frame[:5] == struct.pack(">i", 5) + b"\x00"
    # A broker may send header tags we do not know; they are skipped.
    with_tag = frame[:4] + b"\x01\x07\x02ab" + frame[5:]
    assert decode_response_frame(with_tag, EchoResponse, 2) == (5, EchoResponse(text="x"))


def test_request_header_tags_are_kept(echo_api: None) -> None:
    frame = unframe(encode_request_frame(EchoRequest(text="t"), 2, 1, "c"))
    with_tag = frame[:11] + b"\x01\x03\x01z" + frame[12:]
    header, body = decode_request_frame(with_tag)
    assert header.unknown_tags == {3: b"z"}
    assert body == EchoRequest(text="t")


@pytest.mark.parametrize("version", range(5))
def test_api_versions_response_uses_header_v0(version: int) -> None:
    resp = ApiVersionsResponse(error_code=0, api_keys=[ApiVersion(api_key=18, min_version=0,
                                                                 max_version=4)])
    frame = unframe(encode_response_frame(resp, version, correlation_id=12))
    assert frame[:4] == struct.pack(">i", 12)
    assert frame[4:] == resp.encode(version)
    assert decode_response_frame(frame, ApiVersionsResponse, version) == (12, resp)


def test_matches_kafka_python_request_encoding() -> None:
    from kafka.protocol.old.api_versions import ApiVersionsRequest as KpRequest

    for version in range(5):
        kwargs = {}
        if version >= 3:
            kwargs = {"client_software_name": "gk", "client_software_version": "1.0"}
        kp = KpRequest[version](**kwargs) if version < 3 else KpRequest[version](**kwargs,
                                                                                tags={})
        kp.with_header(correlation_id=42, client_id="kp")
        ours = encode_request_frame(ApiVersionsRequest(**kwargs), version, 42, "kp")
        assert ours == kp.encode(header=True, framed=True), version


@pytest.mark.parametrize("bad", [b"", b"\x00\x00\x00", b"\x00\x12\x00\x00\x00\x00\x00\x01\x00"])
def test_short_request_frames_are_corrupt(bad: bytes) -> None:
    with pytest.raises(CorruptFrame):
        decode_request_frame(bad)


def test_unknown_api_in_request_frame() -> None:
    with pytest.raises(UnsupportedVersionError, match="31999"):
        decode_request_frame(struct.pack(">hhih", 31999, 0, 1, -1))


def test_out_of_range_version_in_request_frame() -> None:
    with pytest.raises(UnsupportedVersionError, match="v9 is not supported"):
        decode_request_frame(struct.pack(">hhih", 18, 9, 1, -1))


def test_trailing_bytes_are_corrupt_in_a_request_and_a_strict_response() -> None:
    frame = unframe(encode_request_frame(ApiVersionsRequest(), 0, 1, "c")) + b"!"
    with pytest.raises(CorruptFrame, match="unexpected bytes"):
        decode_request_frame(frame)
    resp = unframe(encode_response_frame(ApiVersionsResponse(), 0, 1)) + b"!"
    with pytest.raises(CorruptFrame, match="unexpected bytes"):
        decode_response_frame(resp, ApiVersionsResponse, 0, strict=True)


def test_bytes_after_a_response_body_are_ignored_and_logged_at_debug(
        caplog: pytest.LogCaptureFixture) -> None:
    # Java reads the fields it knows and leaves the rest; so does groupkit (a DEBUG line).
    body = MetadataResponse(brokers=[MetadataResponseBroker(node_id=1, host="h", port=9)])
    frame = unframe(encode_response_frame(body, 12, 7)) + b"\x00"
    with caplog.at_level(logging.DEBUG, logger="groupkit.protocol.headers"):
        assert decode_response_frame(frame, MetadataResponse, 12) == (7, body)
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]
    assert "ignored 1 bytes" in caplog.text


@pytest.mark.parametrize("bad", [b"", b"\x00\x00\x01"])
def test_short_response_frames_are_corrupt(bad: bytes) -> None:
    with pytest.raises(CorruptFrame):
        peek_correlation_id(bad)
    with pytest.raises(CorruptFrame):
        decode_response_frame(bad, ApiVersionsResponse, 0)


def test_header_tag_count_past_the_end_is_corrupt(echo_api: None) -> None:
    with pytest.raises(CorruptFrame, match="cannot fit"):
        decode_response_frame(struct.pack(">i", 1) + b"\x7f", EchoResponse, 2)


@given(st.binary(max_size=64))
def test_response_decoding_is_total(data: bytes) -> None:
    with contextlib.suppress(CorruptFrame):
        decode_response_frame(data, ApiVersionsResponse, 3)


@given(st.binary(max_size=64))
def test_request_decoding_is_total(data: bytes) -> None:
    with contextlib.suppress(CorruptFrame, UnsupportedVersionError):
        decode_request_frame(data)
