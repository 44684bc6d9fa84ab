"""Bad record bytes: CRC mismatches, truncation, lying lengths, bombs and a mutation fuzz.

Every outcome must be either records or a CorruptFrame-family error, quickly and without
allocating what a length field claims.
"""

from __future__ import annotations

import contextlib
import gc
import struct
import time
import tracemalloc
import zlib

import pytest
import zstandard
from hypothesis import given, strategies as st

from groupkit.errors import CorruptFrame, CorruptRecordError
from groupkit.protocol.records import (
    decode_batches,
    decode_records,
    encode_batch,
    encode_message_set,
)
from tests.protocol.corrupt_records import (
    ROWS,
    SEEDS,
    entries,
    mutate,
    mutation,
    recrc_legacy,
    recrc_v2,
)

pytestmark = pytest.mark.usefixtures("record_loops")

def test_v2_crc_mismatch_names_topic_partition_offset() -> None:
    data = bytearray(encode_batch(ROWS, base_offset=4242))
    data[bytes(data).rindex(b"value-3") + 2] ^= 0x20
    with pytest.raises(CorruptRecordError, match=r"orders-3 at offset 4242.*CRC-32C"):
        decode_records(bytes(data), topic="orders", partition=3)
    assert decode_records(bytes(data), check_crc=False)[-1].value != ROWS[-1][1]


def test_legacy_crc_mismatch_names_topic_partition_offset() -> None:
    data = bytearray(encode_message_set([(b"k", b"value")], magic=1, base_offset=77))
    data[-1] ^= 0x01
    with pytest.raises(CorruptRecordError, match=r"t-0 at offset 77.*CRC-32"):
        decode_records(bytes(data), topic="t", partition=0)


@pytest.mark.parametrize("index", range(5))
def test_truncation_drops_only_the_partial_trailing_entry(index: int) -> None:
    parts = entries()
    head = b"".join(parts[:index])
    complete = decode_records(head)
    entry = parts[index]
    for cut in range(len(entry)):
        assert decode_records(head + entry[:cut]) == complete, cut
    assert len(decode_records(head + entry)) > len(complete)


def test_truncated_records_inside_a_consistent_batch_raise() -> None:
    # Cut the record area but fix length and CRC: the frame is whole, its records are not.
    full = encode_batch(ROWS)
    for cut in range(61, len(full)):
        batch = bytearray(full[:cut])
        struct.pack_into(">i", batch, 8, cut - 12)
        with pytest.raises(CorruptRecordError):
            decode_records(recrc_v2(batch))


def test_truncated_compressed_payload_raises() -> None:
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        full = encode_batch(ROWS, compression=codec)
        for cut in range(61, len(full), 3):
            batch = bytearray(full[:cut])
            struct.pack_into(">i", batch, 8, cut - 12)
            with pytest.raises(CorruptRecordError):
                decode_records(recrc_v2(batch))


@pytest.mark.parametrize(("at", "fmt", "value", "match"), [
    (8, ">i", 5, "below the smallest"),
    (8, ">i", -1, "below the smallest"),
    (8, ">i", 30, "below the 49-byte header"),
    (16, ">b", 3, "unknown magic 3"),
    (16, ">b", -1, "unknown magic"),
    (57, ">i", 10**6, "claims 1000000 records"),
    (57, ">i", -1, "claims -1 records"),
    (57, ">i", 3, "records end at byte"),
    (57, ">i", 5, "malformed record"),
])
def test_lying_v2_header_fields(at: int, fmt: str, value: int, match: str) -> None:
    batch = bytearray(encode_batch(ROWS, base_offset=9))
    struct.pack_into(fmt, batch, at, value)
    data = recrc_v2(batch) if at >= 21 else bytes(batch)
    with pytest.raises(CorruptRecordError, match=match):
        decode_records(data + encode_batch(ROWS))


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_compression_id(codec: int) -> None:
    batch = bytearray(encode_batch(ROWS))
    batch[22] = (batch[22] & 0xF8) | codec
    with pytest.raises(CorruptRecordError, match=f"unknown compression id {codec}"):
        decode_records(recrc_v2(batch))


def test_huge_length_on_a_small_frame_is_a_partial_entry() -> None:
    batch = bytearray(encode_batch(ROWS))
    struct.pack_into(">i", batch, 8, 2**31 - 1)
    tracemalloc.start()
    try:
        assert decode_records(bytes(batch)) == []
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def _record_bytes(body: bytes) -> bytes:
    """One v2 batch whose single record is ``body`` zero-padded to 8 bytes (past its length)."""
    body = body.ljust(8, b"\0")
    length = len(body) << 1
    prefix = bytes([length]) if length < 0x80 else bytes([(length & 0x7F) | 0x80, length >> 7])
    good = bytearray(encode_batch([(None, b"")]))
    good[61:] = prefix + body
    struct.pack_into(">i", good, 8, len(good) - 12)
    return recrc_v2(good)


@pytest.mark.parametrize(("body", "match"), [
    (b"\x00\x00\x00\x03", r"key length -2\b"),
    (b"\x00\x00\x00\x01\x05", r"value length -3\b"),
    (b"\x00\x00\x00\x01\x08ab", "malformed record"),
    (b"\x00\x00\x00\x01\x00\x02\x02\xff\x00", "malformed record"),
    (b"\x00\x00\x00\x01\x00\x03", "header count"),
    (b"\x00\x00\x00\x01\x00\x02\x01", "header key length"),
    (b"\x00\x00\x00\x01\x00\x02\x00\x05", "header value length"),
    (b"\x00\x00\x00\x01\x00\x00\x00", "record length says"),
    (b"\x00" + b"\xff" * 11, "malformed record"),
])
def test_malformed_records(body: bytes, match: str) -> None:
    with pytest.raises(CorruptRecordError, match=match):
        decode_records(_record_bytes(body))


def test_negative_record_length() -> None:
    batch = bytearray(encode_batch([(None, b"v")]))
    batch[61] = 0x03
    with pytest.raises(CorruptRecordError, match=r"record length -2\b"):
        decode_records(recrc_v2(batch))


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_decompression_bomb_is_refused(codec: str) -> None:
    data = encode_batch([(None, bytes(2_000_000))], compression=codec)
    assert len(data) < 200_000
    with pytest.raises(CorruptRecordError, match="max_decompressed_size=100000"):
        decode_records(data, max_decompressed_size=100_000)
    assert decode_records(data, max_decompressed_size=3_000_000)[0].value == bytes(2_000_000)


def test_zstd_bomb_is_refused_before_it_is_inflated() -> None:
    bomb = zstandard.ZstdCompressor().compress(bytes(200 * 1024 * 1024))
    batch = bytearray(encode_batch([(None, b"x")]))
    batch[22] |= 4
    batch[61:] = bomb
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    tracemalloc.start()
    try:
        with pytest.raises(CorruptRecordError, match="max_decompressed_size"):
            decode_records(recrc_v2(batch), max_decompressed_size=1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20


def test_legacy_structural_errors() -> None:
    msg = bytearray(encode_message_set([(b"k", b"v")], magic=1))
    bad_key = bytearray(msg)
    struct.pack_into(">i", bad_key, 26, 1000)
    with pytest.raises(CorruptRecordError, match="key claims 1000 bytes"):
        decode_records(recrc_legacy(bad_key))
    trailing = msg + b"\x00"
    struct.pack_into(">i", trailing, 8, len(trailing) - 12)
    with pytest.raises(CorruptRecordError, match="after its value"):
        decode_records(recrc_legacy(trailing))
    null_wrapper = bytearray(encode_message_set([(None, None)], magic=1))
    null_wrapper[17] |= 1
    with pytest.raises(CorruptRecordError, match="null value"):
        decode_records(recrc_legacy(null_wrapper))


def test_nested_compression_and_magic_mismatch_in_wrappers() -> None:
    inner = encode_message_set([(b"k", b"v")], magic=1, compression="gzip")
    gz = zlib.compressobj(6, zlib.DEFLATED, 31)
    wrapper = bytearray(encode_message_set([(None, b"x")], magic=1))
    payload = gz.compress(inner) + gz.flush()
    nested = wrapper[:-1] + payload
    struct.pack_into(">i", nested, 30, len(payload))
    struct.pack_into(">i", nested, 8, len(nested) - 12)
    nested[17] |= 1
    with pytest.raises(CorruptRecordError, match="nested"):
        decode_records(recrc_legacy(nested))
    v0_inside_v1 = bytearray(encode_message_set([(b"k", b"v")], magic=0, compression="gzip"))
    v0_inside_v1[16] = 1
    v0_inside_v1[18:18] = bytes(8)
    struct.pack_into(">i", v0_inside_v1, 8, len(v0_inside_v1) - 12)
    with pytest.raises(CorruptRecordError, match="differs from its wrapper"):
        decode_records(recrc_legacy(v0_inside_v1))


def test_bad_utf8_header_key() -> None:
    batch = bytearray(encode_batch([(None, b"v", [("hé", b"x")])]))
    at = bytes(batch).index("é".encode())
    batch[at] = 0xFF
    with pytest.raises(CorruptRecordError, match="malformed record"):
        decode_records(recrc_v2(batch))


@given(seed=st.sampled_from(range(len(SEEDS))), edits=st.lists(mutation, min_size=1, max_size=4),
       fix_crc=st.booleans(), tail=st.sampled_from([b"", SEEDS[0][:40]]))
def test_fuzzed_record_sets_only_raise_corrupt_frame(seed: int, edits: list[tuple],
                                                     fix_crc: bool, tail: bytes) -> None:
    data = mutate(SEEDS[seed], edits)
    if fix_crc and len(data) >= 61 and data[16] == 2:
        data = bytearray(recrc_v2(data))
    elif fix_crc and len(data) >= 26 and data[16] in (0, 1):
        data = bytearray(recrc_legacy(data))
    tracemalloc.start()
    started = time.monotonic()
    try:
        for fn in (decode_records, decode_batches):
            with contextlib.suppress(CorruptFrame):
                assert isinstance(fn(bytes(data) + tail, max_decompressed_size=1 << 20), list)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20
    assert time.monotonic() - started < 5  # a few ms normally; generous for a loaded machine


@pytest.mark.parametrize("enabled", [True, False])
def test_collector_state_is_restored_after_success_and_failure(enabled: bool) -> None:
    was = gc.isenabled()
    try:
        if not enabled:
            gc.disable()
        decode_records(SEEDS[0])
        assert gc.isenabled() is enabled
        with pytest.raises(CorruptRecordError):
            decode_batches(SEEDS[0][:8] + (1).to_bytes(4, "big") + SEEDS[0][12:])
        assert gc.isenabled() is enabled
    finally:
        if was:
            gc.enable()
