"""FrameDecoder: frames out of arbitrary chunks, and bad size prefixes refused at once."""

from __future__ import annotations

import struct
import time

import pytest
from hypothesis import given, strategies as st

from groupkit.errors import ConfigError, CorruptFrame, FrameTooLarge, IllegalStateError
from groupkit.protocol.framing import DEFAULT_MAX_FRAME_SIZE, DIRECT_FRAME_BYTES, FrameDecoder


def framed(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def test_default_max_is_100_mib() -> None:
    assert DEFAULT_MAX_FRAME_SIZE == 100 * 1024 * 1024
    assert FrameDecoder().max_frame_size == DEFAULT_MAX_FRAME_SIZE


def test_one_byte_at_a_time() -> None:
    dec = FrameDecoder()
    stream = framed(b"hello") + framed(b"") + framed(b"world!")
    out: list[bytes] = []
    for i in range(len(stream)):
        out += dec.feed(stream[i:i + 1])
    assert out == [b"hello", b"", b"world!"]
    assert dec.buffered == 0


def test_many_frames_in_one_chunk_and_a_partial_tail() -> None:
    dec = FrameDecoder()
    stream = framed(b"a") + framed(b"bb") + framed(b"ccc")
    assert dec.feed(stream + framed(b"dddd")[:6]) == [b"a", b"bb", b"ccc"]
    assert dec.buffered == 6
    assert dec.feed(b"dd") == [b"dddd"]
    assert dec.buffered == 0


def test_buffered_counts_held_bytes() -> None:
    dec = FrameDecoder()
    assert dec.feed(b"\x00\x00") == []
    assert dec.buffered == 2
    assert dec.feed(b"\x00\x03ab") == []
    assert dec.buffered == 6


def test_accepts_memoryview_and_bytearray() -> None:
    dec = FrameDecoder()
    data = framed(b"xyz")
    assert dec.feed(memoryview(data)[:5]) == []
    assert dec.feed(bytearray(data[5:])) == [b"xyz"]


@given(bodies=st.lists(st.binary(max_size=300), max_size=8), data=st.data())
def test_random_chunking_gives_the_same_frames(bodies: list[bytes], data: st.DataObject) -> None:
    stream = b"".join(framed(b) for b in bodies)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=20)))
    dec = FrameDecoder()
    out: list[bytes] = []
    prev = 0
    for cut in [*cuts, len(stream)]:
        out += dec.feed(stream[prev:cut])
        prev = cut
    assert out == bodies
    assert dec.buffered == 0


def test_oversized_prefix_fails_before_the_body_arrives() -> None:
    dec = FrameDecoder(max_frame_size=1000)
    with pytest.raises(FrameTooLarge, match="max_frame_size"):
        dec.feed(struct.pack(">i", 1001))
    assert dec.buffered == 0


def test_two_gib_claim_on_a_short_frame_is_refused() -> None:
    dec = FrameDecoder()
    with pytest.raises(FrameTooLarge):
        dec.feed(struct.pack(">i", 0x7FFFFFFF) + b"x" * 100)


def test_tls_record_read_as_plaintext_is_refused() -> None:
    # A TLS alert/handshake record starts 0x15 0x03 / 0x16 0x03: read as a size, ~350 MB.
    with pytest.raises(FrameTooLarge, match="security_protocol"):
        FrameDecoder().feed(b"\x16\x03\x01\x02\x00")


def test_negative_prefix_is_corrupt() -> None:
    dec = FrameDecoder()
    with pytest.raises(CorruptFrame, match="negative") as info:
        dec.feed(struct.pack(">i", -5))
    assert not isinstance(info.value, FrameTooLarge)


def test_frame_at_exactly_the_maximum_is_accepted() -> None:
    dec = FrameDecoder(max_frame_size=8)
    assert dec.feed(framed(b"12345678")) == [b"12345678"]


def test_decoder_refuses_input_after_a_failure() -> None:
    dec = FrameDecoder(max_frame_size=4)
    with pytest.raises(FrameTooLarge):
        dec.feed(framed(b"too long"))
    with pytest.raises(IllegalStateError, match="new decoder"):
        dec.feed(framed(b"ok"))


def test_large_frame_in_small_chunks_is_linear() -> None:
    size = 16 * 1024 * 1024
    body = bytes(range(256)) * (size // 256)
    stream = framed(body)
    chunk = 1024
    dec = FrameDecoder()
    start = time.perf_counter()
    out: list[bytes] = []
    for i in range(0, len(stream), chunk):
        out += dec.feed(stream[i:i + chunk])
    elapsed = time.perf_counter() - start
    assert out == [body]
    # Re-copying the buffer on every chunk would move ~128 GB here (tens of seconds); linear
    # work is 16k cheap appends, so five seconds only catches the quadratic case.
    assert elapsed < 5


def test_negative_maximum_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="max_frame_size"):
        FrameDecoder(max_frame_size=-1)


def _body(size: int, seed: int = 0) -> bytes:
    return bytes((seed + i) % 251 for i in range(size))


def test_a_large_frame_is_received_straight_into_its_own_buffer() -> None:
    big, small = _body(DIRECT_FRAME_BYTES + 5000), b"next"
    stream = framed(big) + framed(small)
    dec = FrameDecoder()
    assert dec.room() is None
    assert dec.feed(stream[:1000]) == []
    room = dec.room()
    assert room is not None and len(room) == len(big) - 996
    # What a socket's recv_into does: write into the room, then count what it wrote.
    got = stream[1000:1000 + 30000]
    room[:len(got)] = got
    assert dec.received(len(got)) == []
    assert dec.buffered == 4 + 996 + len(got)
    rest = stream[1000 + len(got):4 + len(big)]
    room = dec.room()
    assert room is not None and len(room) == len(rest)
    room[:] = rest
    assert dec.received(len(rest)) == [big]
    assert dec.room() is None and dec.buffered == 0
    assert dec.feed(framed(small)) == [small]


def test_bytes_fed_past_the_end_of_a_large_frame_start_the_next_ones() -> None:
    big = _body(DIRECT_FRAME_BYTES * 2)
    stream = framed(big) + framed(b"a") + framed(b"bb")[:3]
    dec = FrameDecoder()
    assert dec.feed(stream[:10]) == []
    assert dec.room() is not None
    assert dec.feed(stream[10:]) == [big, b"a"]
    assert dec.room() is None and dec.buffered == 3
    assert dec.feed(b"\x02bb") == [b"bb"]


def test_a_read_ending_a_large_frame_and_holding_one_whole_small_one_returns_both() -> None:
    big = _body(DIRECT_FRAME_BYTES * 2)
    dec = FrameDecoder(max_frame_size=DIRECT_FRAME_BYTES * 2)
    stream = framed(big)
    assert dec.feed(stream[:10]) == []
    assert dec.feed(stream[10:] + framed(b"a")) == [big, b"a"]
    assert dec.feed(framed(b"bc")) == [b"bc"]  # one read, one whole frame
    assert dec.room() is None and dec.buffered == 0
    with pytest.raises(FrameTooLarge):
        dec.feed(framed(_body(DIRECT_FRAME_BYTES * 2 + 1)))  # whole, but over the maximum


def test_received_refuses_more_bytes_than_the_room_had() -> None:
    dec = FrameDecoder()
    with pytest.raises(IllegalStateError, match="room"):
        dec.received(1)
    dec.feed(framed(_body(DIRECT_FRAME_BYTES))[:100])
    with pytest.raises(IllegalStateError, match="room"):
        dec.received(DIRECT_FRAME_BYTES)


@given(sizes=st.lists(st.sampled_from([0, 7, DIRECT_FRAME_BYTES - 1, DIRECT_FRAME_BYTES,
                                       DIRECT_FRAME_BYTES * 3]), max_size=5),
       data=st.data())
def test_feed_and_room_mixed_give_the_same_frames(sizes: list[int], data: st.DataObject) -> None:
    bodies = [_body(n, seed) for seed, n in enumerate(sizes)]
    stream = b"".join(framed(b) for b in bodies)
    dec = FrameDecoder()
    out: list[bytes | bytearray] = []
    pos = 0
    while pos < len(stream):
        step = data.draw(st.integers(1, 3 * DIRECT_FRAME_BYTES))
        room = dec.room()
        if room is not None and data.draw(st.booleans()):
            n = min(step, len(room), len(stream) - pos)
            room[:n] = stream[pos:pos + n]
            out += dec.received(n)
        else:
            n = min(step, len(stream) - pos)
            out += dec.feed(stream[pos:pos + n])
        pos += n
    assert out == bodies
    assert dec.buffered == 0
