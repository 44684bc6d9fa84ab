"""Record sets to break and the ways to break them: shared by the corrupt-record tests of the
Python reader (test_records_corrupt.py) and of the C reader (test_records_native.py)."""

from __future__ import annotations

import struct
import zlib

from crc32c import crc32c
from hypothesis import strategies as st

from groupkit.protocol.records import encode_batch, encode_message_set

ROWS = [(b"k%d" % i, b"value-%d" % i * 3, [("h", b"x"), ("n", None)], 1000 + i)
        for i in range(4)]


def recrc_v2(batch: bytearray) -> bytes:
    """Fix a v2 batch's CRC after a deliberate edit, so the parser (not the CRC) meets it."""
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return bytes(batch)


def recrc_legacy(message: bytearray) -> bytes:
    struct.pack_into(">I", message, 12, zlib.crc32(bytes(message[16:])))
    return bytes(message)


def entries() -> list[bytes]:
    """One of each entry kind, each a separately framed unit of a record set."""
    plain = [(k, v, [], ts) for k, v, _, ts in ROWS]
    return [
        encode_batch(ROWS, base_offset=0),
        encode_batch(ROWS, base_offset=4, compression="gzip"),
        encode_message_set(plain[:1], magic=0, base_offset=8),
        encode_message_set(plain, magic=1, base_offset=9, compression="snappy"),
        encode_batch(ROWS, base_offset=13, compression="zstd"),
    ]


SEEDS = entries() + [
    encode_batch(ROWS, compression="lz4", transactional=True, producer_id=3, producer_epoch=1),
    encode_message_set([(k, v, [], ts) for k, v, _, ts in ROWS], magic=0, compression="lz4"),
    encode_message_set([(k, v, [], ts) for k, v, _, ts in ROWS], magic=1, compression="gzip"),
]

mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(min_value=0), st.integers(min_value=1, max_value=255)),
    st.tuples(st.just("int32"), st.integers(min_value=0),
              st.sampled_from([-2**31, -2, -1, 0, 1, 7, 2**16, 2**31 - 1])),
    st.tuples(st.just("varint"), st.integers(min_value=0),
              st.sampled_from([b"\xff" * 10, b"\x7f", b"\x01", b"\xfe\xff\xff\xff\x0f"])),
    st.tuples(st.just("cut"), st.integers(min_value=0), st.just(0)),
)


def mutate(data: bytes, edits: list[tuple]) -> bytearray:
    buf = bytearray(data)
    for kind, where, arg in edits:
        if not buf:
            break
        at = where % len(buf)
        if kind == "flip":
            buf[at] ^= arg
        elif kind == "int32" and at + 4 <= len(buf):
            struct.pack_into(">i", buf, at, arg)
        elif kind == "varint":
            buf[at:at + len(arg)] = arg
        elif kind == "cut":
            del buf[at:]
    return buf
