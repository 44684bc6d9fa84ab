"""The codecs behind record batches: framings other clients write, limits, and bad payloads."""

from __future__ import annotations

import gzip
import os

import lz4.frame
import pytest
import snappy
import xxhash
import zstandard
from kafka import codec as kafka_codec

from groupkit.errors import ConfigError, CorruptRecordError
from groupkit.protocol.compression import (
    XERIAL_MAGIC,
    _xxh32,
    codec_id,
    compress,
    decompress,
)

PAYLOAD = os.urandom(3000) + b"abcdefgh" * 20000  # spans several 32 KiB xerial blocks


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_round_trip(codec: int) -> None:
    assert decompress(codec, compress(codec, PAYLOAD)) == PAYLOAD
    assert decompress(codec, memoryview(compress(codec, b""))) == b""


def test_snappy_writes_xerial_framing_like_java() -> None:
    data = compress(2, PAYLOAD)
    assert data.startswith(XERIAL_MAGIC + b"\x00\x00\x00\x01\x00\x00\x00\x01")
    assert kafka_codec.snappy_decode(data) == PAYLOAD


def test_snappy_reads_raw_and_xerial_written_by_others() -> None:
    assert decompress(2, snappy.compress(PAYLOAD)) == PAYLOAD
    xerial = kafka_codec.snappy_encode(PAYLOAD, xerial_compatible=True, xerial_blocksize=4096)
    assert decompress(2, xerial) == PAYLOAD
    assert decompress(2, kafka_codec.snappy_encode(PAYLOAD, xerial_compatible=False)) == PAYLOAD


def test_gzip_reads_concatenated_members() -> None:
    assert decompress(1, gzip.compress(b"first ") + gzip.compress(b"second")) == b"first second"


def test_lz4_reads_frames_with_and_without_content_size() -> None:
    for store_size in (True, False):
        framed = lz4.frame.compress(PAYLOAD, store_size=store_size)
        assert decompress(3, framed) == PAYLOAD


def test_lz4_writes_independent_blocks_without_content_size() -> None:
    flg = compress(3, PAYLOAD)[4]
    assert flg & 0x20, "block-independence flag must be set for Kafka's Java reader"
    assert not flg & 0x08, "Kafka's framing carries no content size"


def test_legacy_lz4_matches_kafka_pythons_kip57_framing() -> None:
    theirs = kafka_codec.lz4_encode_old_kafka(PAYLOAD)
    assert decompress(3, theirs, legacy_lz4=True) == PAYLOAD
    ours = compress(3, PAYLOAD, legacy_lz4=True)
    assert kafka_codec.lz4_decode_old_kafka(ours) == PAYLOAD
    with pytest.raises(CorruptRecordError, match="lz4"):
        decompress(3, ours)


def test_xxh32_matches_the_reference_and_lz4_header_checksums() -> None:
    assert _xxh32(b"") == 0x02CC5D05
    assert _xxh32(b"a" * 40, seed=7) == xxhash.xxh32_intdigest(b"a" * 40, seed=7)
    framed = lz4.frame.compress(b"x" * 100)
    hc = 14 if framed[4] & 0x08 else 6
    assert framed[hc] == (_xxh32(framed[4:hc]) >> 8) & 0xFF


def test_zstd_streams_frames_without_content_size_and_several_frames() -> None:
    no_size = zstandard.ZstdCompressor(write_content_size=False).compress(PAYLOAD)
    assert zstandard.frame_content_size(no_size) == -1
    assert decompress(4, no_size) == PAYLOAD
    assert decompress(4, no_size + compress(4, b"tail")) == PAYLOAD + b"tail"


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_limit_is_inclusive(codec: int) -> None:
    data = compress(codec, PAYLOAD)
    assert decompress(codec, data, max_size=len(PAYLOAD)) == PAYLOAD
    with pytest.raises(CorruptRecordError, match=f"max_decompressed_size={len(PAYLOAD) - 1}"):
        decompress(codec, data, max_size=len(PAYLOAD) - 1)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_garbage_and_truncation_raise_corrupt_record_error(codec: int) -> None:
    data = compress(codec, PAYLOAD)
    bad_inputs = [b"", data[: len(data) // 2], data[:-1], b"\x82SNAPPY\x00" + data,
                  bytes(reversed(data))]
    if codec != 2:  # b"\x00" is snappy's valid encoding of nothing
        bad_inputs.append(b"\x00")
    for bad in bad_inputs:
        with pytest.raises(CorruptRecordError):
            decompress(codec, bad)


def test_xerial_chunk_length_past_the_end() -> None:
    data = bytearray(compress(2, b"hello" * 100))
    data[16:20] = (10**6).to_bytes(4, "big")
    with pytest.raises(CorruptRecordError, match="claims 1000000 bytes"):
        decompress(2, bytes(data))


def test_codec_names_and_ids() -> None:
    assert [codec_id(n) for n in (None, "gzip", "snappy", "lz4", "zstd")] == [0, 1, 2, 3, 4]
    with pytest.raises(ConfigError, match="unknown compression 'lzo'"):
        codec_id("lzo")
    with pytest.raises(ConfigError):
        compress(0, b"x")
    with pytest.raises(CorruptRecordError, match="compression id 6"):
        decompress(6, b"x")
