"""Protocol bytes spelled out by hand, for tests that check our encoder and decoder against the
layout the Kafka protocol documents rather than against themselves."""

from __future__ import annotations

import struct

NO_TAGS = b"\x00"
NULL_STRING = struct.pack(">h", -1)
NULL_ARRAY = struct.pack(">i", -1)
#: A null compact string, bytes or array: length 0.
COMPACT_NULL = b"\x00"


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def uv(v: int) -> bytes:
    """An unsigned varint: seven bits a byte, low bits first, the high bit set on all but the
    last byte."""
    out = bytearray()
    while v > 0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def s(v: str | None) -> bytes:
    """A classic (int16-length) string; None is the null string."""
    return NULL_STRING if v is None else i16(len(v.encode())) + v.encode()


def cs(v: str | None) -> bytes:
    """A compact string (uvarint length + 1; 0 is null)."""
    return COMPACT_NULL if v is None else uv(len(v.encode()) + 1) + v.encode()


def b32(v: bytes) -> bytes:
    """Classic (int32-length) bytes."""
    return i32(len(v)) + v


def cb(v: bytes) -> bytes:
    """Compact bytes (uvarint length + 1)."""
    return uv(len(v) + 1) + v


def arr(items: list[bytes]) -> bytes:
    """A classic array: int32 count, then the items."""
    return i32(len(items)) + b"".join(items)


def carr(items: list[bytes] | None) -> bytes:
    """A compact array (uvarint count + 1, then the items); None is the null array."""
    return COMPACT_NULL if items is None else carr_len(len(items)) + b"".join(items)


def carr_len(n: int) -> bytes:
    """The count in front of a compact array of ``n`` items, for items spelled after it."""
    return uv(n + 1)
