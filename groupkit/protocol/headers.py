"""Request and response headers, and whole size-prefixed frames built from them.

Request header v1 is ``api_key, api_version, correlation_id, client_id``; v2 (flexible
versions) appends a tagged-field section. ``client_id`` stays a classic nullable int16 string
even in v2. Response header v0 is the correlation id alone; v1 adds tagged fields, except that
ApiVersions responses always use v0 so that a client can read a broker's answer before it knows
which versions the broker speaks.
"""

from __future__ import annotations

import logging
import struct
from typing import TypeVar

import attrs

from groupkit.errors import ApiKey, CorruptFrame, UnsupportedVersionError
from groupkit.protocol.primitives import Reader, Writer
from groupkit.protocol.registry import MODULES, request_class
from groupkit.protocol.schema import Request, Response

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")
_CORRELATION_ID = struct.Struct(">i")
#: Where a request frame's correlation id sits: after the size prefix, API key and version.
_REQUEST_CORRELATION_AT = _SIZE.size + 2 + 2
_R = TypeVar("_R", bound=Response)


def _request_class(api_key: int) -> type[Request]:
    try:
        return request_class(api_key)
    except KeyError:
        raise UnsupportedVersionError(
            f"groupkit has no schema for API key {api_key}; only keys {sorted(MODULES)} are known"
        ) from None


def request_header_version(api_key: int, version: int) -> int:
    """The request header version for an API at ``version``: 2 when flexible, else 1."""
    return 2 if _request_class(api_key).is_flexible(version) else 1


def response_header_version(api_key: int, version: int) -> int:
    """The response header version: 1 when flexible, else 0; ApiVersions always uses 0."""
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if _request_class(api_key).is_flexible(version) else 0


@attrs.frozen
class RequestHeader:
    """A decoded request header (what a broker, or a fake one, reads first)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    unknown_tags: dict[int, bytes] = attrs.field(factory=dict, eq=False, repr=False)


def _write_empty_tags(w: Writer) -> None:
    w.uvarint(0)


def _read_tags(r: Reader) -> dict[int, bytes]:
    """Read a header's tagged-field section; headers define no tags, so all are kept raw."""
    count = r.uvarint()
    if count > r.remaining():
        raise r.fail(f"{count} tagged fields cannot fit")
    tags: dict[int, bytes] = {}
    last = -1
    for _ in range(count):
        tag = r.uvarint()
        if tag <= last:
            raise r.fail(f"tagged field {tag} out of order")
        last = tag
        tags[tag] = r.raw(r.uvarint(), f"tagged field {tag}")
    return tags


def _with_size_prefix(w: Writer) -> bytes:
    _SIZE.pack_into(w.buf, 0, len(w.buf) - _SIZE.size)
    return w.getvalue()


def encode_request_frame(request: Request, version: int, correlation_id: int,
                         client_id: str | None) -> bytes:
    """Encode ``request`` at ``version`` as a whole frame: size prefix, header, body."""
    header_version = request_header_version(request.API_KEY, version)
    w = Writer()
    w.int32(0)
    w.int16(request.API_KEY)
    w.int16(version)
    w.int32(correlation_id)
    w.nullable_string(client_id)
    if header_version >= 2:
        _write_empty_tags(w)
    request.encode_into(w, version)
    return _with_size_prefix(w)


def decode_request_frame(frame: bytes | bytearray | memoryview) -> tuple[RequestHeader, Request]:
    """Decode a request frame (without its size prefix) into its header and body.

    An API key or version without a schema raises UnsupportedVersionError (a broker answers
    that with UNSUPPORTED_VERSION); anything malformed raises CorruptFrame.
    """
    r = Reader(frame, context="request header")
    api_key = r.int16()
    api_version = r.int16()
    correlation_id = r.int32()
    cls = _request_class(api_key)
    if not cls.MIN_VERSION <= api_version <= cls.MAX_VERSION:
        raise UnsupportedVersionError(
            f"{cls.__name__} v{api_version} is not supported; groupkit knows versions"
            f" {cls.MIN_VERSION}-{cls.MAX_VERSION}")
    client_id = r.nullable_string()
    tags = _read_tags(r) if request_header_version(api_key, api_version) >= 2 else {}
    header = RequestHeader(api_key, api_version, correlation_id, client_id, tags)
    r.context = f"{cls.__name__} v{api_version}"
    body = cls.decode_from(r, api_version)
    _expect_end(r)
    return header, body


def encode_response_frame(response: Response, version: int, correlation_id: int) -> bytes:
    """Encode ``response`` at ``version`` as a whole frame: size prefix, header, body."""
    w = Writer()
    w.int32(0)
    w.int32(correlation_id)
    if response_header_version(response.API_KEY, version) >= 1:
        _write_empty_tags(w)
    response.encode_into(w, version)
    return _with_size_prefix(w)


def set_request_correlation_id(frame: bytearray, correlation_id: int) -> None:
    """Give a whole request frame (size prefix included) another correlation id, in place:
    a request sent again unchanged need not be encoded again."""
    _CORRELATION_ID.pack_into(frame, _REQUEST_CORRELATION_AT, correlation_id)


def peek_correlation_id(frame: bytes | bytearray | memoryview) -> int:
    """The correlation id at the start of a response frame (without its size prefix)."""
    if len(frame) >= _CORRELATION_ID.size:
        return int(_CORRELATION_ID.unpack_from(frame)[0])
    return Reader(frame, context="response header").int32()  # raises the CorruptFrame


def decode_response_frame(frame: bytes | bytearray | memoryview, response_cls: type[_R],
                          version: int, *, strict: bool = False) -> tuple[int, _R]:
    """Decode a response frame (without its size prefix) into its correlation id and body.

    Bytes after the fields this version defines are ignored (logged at DEBUG), as the Java
    client reads the fields it knows and leaves the rest; ``strict=True`` makes them a
    CorruptFrame. The frame's own length and every field inside it stay strictly checked.
    """
    r = Reader(frame, context="response header")
    correlation_id = r.int32()
    if response_header_version(response_cls.API_KEY, version) >= 1:
        _read_tags(r)
    r.context = f"{response_cls.__name__} v{version}"
    body = response_cls.decode_from(r, version)
    if strict:
        _expect_end(r)
    elif r.pos != r.end:
        log.debug("%s: ignored %d bytes after the fields this version defines", r.context,
                  r.end - r.pos)
    return correlation_id, body


def _expect_end(r: Reader) -> None:
    if r.pos != r.end:
        raise CorruptFrame(f"{r.context}: {r.end - r.pos} unexpected bytes after the body")
