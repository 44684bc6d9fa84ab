"""walk_entries sizes a record set by its headers: the same entries, offsets and counts the
decoder finds, without decoding."""

from __future__ import annotations

import pytest

from groupkit.errors import CorruptRecordError
from groupkit.protocol.records import (
    CONTROL_COMMIT,
    decode_batches,
    encode_batch,
    encode_control_batch,
    encode_message_set,
)
from groupkit.protocol.records.walk import walk_entries


def batches() -> list[bytes]:
    return [
        encode_batch([(None, b"a"), (None, b"b"), (None, b"c")], base_offset=10),
        encode_control_batch(CONTROL_COMMIT, producer_id=1, producer_epoch=0, base_offset=13),
        encode_batch([(None, b"d")] * 4, base_offset=14, compression="gzip"),
    ]


def test_each_complete_entry_is_sized_with_its_data_records_and_the_next_offset() -> None:
    parts = batches()
    data = b"".join(parts)
    entries = walk_entries(data)
    ends = [len(b"".join(parts[:i + 1])) for i in range(3)]
    assert entries.ends == tuple(ends)
    assert entries.counts == (3, 0, 4)
    assert entries.next_offset == 18 == decode_batches(data)[-1].next_offset
    assert not entries.malformed


@pytest.mark.parametrize("cut", [1, 12, 40])
def test_a_partial_entry_at_the_end_is_left_out(cut: int) -> None:
    parts = batches()
    data = b"".join(parts)[:-cut]
    entries = walk_entries(data)
    assert entries.ends == (len(parts[0]), len(parts[0]) + len(parts[1]))
    assert entries.next_offset == 14
    assert not entries.malformed


def test_legacy_entries_count_one_each_and_end_at_their_offset() -> None:
    data = encode_message_set([(None, b"x"), (None, b"y")], magic=1, base_offset=5)
    entries = walk_entries(data)
    assert entries.counts == (1, 1)
    assert entries.next_offset == 7


def test_an_empty_record_set_has_no_entries() -> None:
    entries = walk_entries(b"")
    assert entries.ends == () and entries.next_offset == -1 and not entries.malformed


@pytest.mark.parametrize("damage", ["length", "magic"])
def test_an_entry_it_cannot_size_runs_to_the_end_so_decoding_it_raises(damage: str) -> None:
    good = batches()[0]
    bad = bytearray(batches()[2])
    if damage == "length":
        bad[8:12] = (3).to_bytes(4, "big")
    else:
        bad[16] = 7
    data = good + bytes(bad)
    entries = walk_entries(data)
    assert entries.malformed
    assert entries.ends == (len(good), len(data))
    assert entries.next_offset == 13
    with pytest.raises(CorruptRecordError):
        decode_batches(data[len(good):])
