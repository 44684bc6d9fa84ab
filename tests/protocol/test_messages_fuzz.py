"""Decoders are total: mutated frames of every API and version decode or raise CorruptFrame.

Mutations are bit flips, truncations and huge lengths written over or into a valid frame. Each
decode must finish fast and allocate in proportion to the bytes that arrived, never to what a
length field claims.
"""

from __future__ import annotations

import struct
import time
import tracemalloc

import pytest
from hypothesis import given, settings, strategies as st

from groupkit.errors import CorruptFrame
from groupkit.protocol.messages.group import SyncGroupResponse
from groupkit.protocol.schema import Message
from tests.protocol import strategies as gs

CASES = gs.all_cases()

#: Lengths and counts a hostile or broken peer might send (int32, int16 and uvarint forms).
HUGE_INT32 = [0x7FFFFFFF, 0x40000000, -2, -0x80000000]
HUGE_INT16 = [0x7FFF, -2]
HUGE_VARINTS = [b"\xff\xff\xff\xff\x07", b"\xff\xff\xff\xff\x0f", b"\xff" * 9 + b"\x01",
                b"\xff" * 11]

#: A decode of a frame under 4 KiB may take this long on a loaded machine, and no more.
MAX_SECONDS = 2.0


def _memory_budget(size: int) -> int:
    """Generous for the Python objects a frame of ``size`` bytes can become; far under 2 GiB."""
    return 512 * 1024 + 128 * size


def decode_checked(cls: type[Message], data: bytes, version: int) -> Message | CorruptFrame:
    """Decode, allowing only CorruptFrame (returned), within the time and memory budget."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        return cls.decode(data, version)
    except CorruptFrame as exc:
        return exc
    finally:
        elapsed = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert elapsed < MAX_SECONDS, f"decoding {len(data)} bytes took {elapsed:.2f} s"
        assert peak < _memory_budget(len(data)), f"decoding {len(data)} bytes used {peak} bytes"


@st.composite
def mutated(draw: st.DrawFn, frame: bytes) -> bytes:
    data = bytearray(frame)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "truncate", "overwrite", "insert", "insert_varint"]))
        pos = draw(st.integers(0, len(data)))
        if kind == "flip" and data:
            i = min(pos, len(data) - 1)
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif kind == "truncate":
            del data[pos:]
        elif kind == "overwrite":
            data[pos:pos + 4] = struct.pack(">i", draw(st.sampled_from(HUGE_INT32)))
        elif kind == "insert":
            data[pos:pos] = struct.pack(">i", draw(st.sampled_from(HUGE_INT32)))
        else:
            data[pos:pos] = draw(st.sampled_from(HUGE_VARINTS))
    return bytes(data)


@pytest.mark.parametrize("case", CASES, ids=gs.case_id)
@settings(max_examples=8)
@given(data=st.data())
def test_mutated_frames_decode_or_raise_corrupt_frame(case: tuple[type[Message], int],
                                                     data: st.DataObject) -> None:
    cls, version = case
    frame = data.draw(gs.messages(cls, version)).encode(version)
    decoded = decode_checked(cls, data.draw(mutated(frame)), version)
    assert isinstance(decoded, (cls, CorruptFrame))


@pytest.mark.parametrize("case", CASES, ids=gs.case_id)
@settings(max_examples=3)
@given(data=st.data())
def test_every_truncation_raises_corrupt_frame(case: tuple[type[Message], int],
                                               data: st.DataObject) -> None:
    cls, version = case
    frame = data.draw(gs.messages(cls, version)).encode(version)
    for cut in range(len(frame)):
        with pytest.raises(CorruptFrame):
            cls.decode(frame[:cut], version)


@pytest.mark.parametrize("case", CASES, ids=gs.case_id)
def test_huge_length_at_every_offset(case: tuple[type[Message], int]) -> None:
    cls, version = case
    frame = gs.minimal(cls, version, cls.is_flexible(version)).encode(version)
    patches = [struct.pack(">i", n) for n in HUGE_INT32[:3]]
    patches += [struct.pack(">h", n) for n in HUGE_INT16]
    if cls.is_flexible(version):
        patches += HUGE_VARINTS[1:3]
    for pos in range(len(frame) + 1):
        for patch in patches:
            bad = frame[:pos] + patch + frame[pos + len(patch):]
            assert isinstance(decode_checked(cls, bad, version), (cls, CorruptFrame))


def test_two_gib_claim_in_a_short_frame_is_refused_before_allocating() -> None:
    frame = struct.pack(">ihi", 0, 0, 0x7FFFFFFF) + b"x" * 90
    assert len(frame) == 100
    error = decode_checked(SyncGroupResponse, frame, 1)
    assert isinstance(error, CorruptFrame)
    assert "2147483647" in str(error)
