"""A ShareFetch answer's records for one partition, as the share fetcher reads them: only the
acquired offsets are delivered, with their delivery counts; acquired offsets without a data
record (a transaction marker, a compacted record) are gaps; a corrupt batch's acquired records
are rejected and its error comes after the good records (Java's ShareCompletedFetch)."""

from __future__ import annotations

import gc
import uuid

import pytest

from groupkit.errors import CorruptRecordError
from groupkit.protocol import native
from groupkit.protocol.messages.share_fetch import (
    ACK_GAP,
    ACK_REJECT,
    AcquiredRecords,
)
from groupkit.protocol.records import (
    CONTROL_COMMIT,
    batch_read,
    encode_batch,
    encode_control_batch,
)
from groupkit.runtime.share_records import ShareConsumerRecord, read_share_answer
from groupkit.share import ShareLedger, SharePartition

P = SharePartition("orders", 3, uuid.UUID(int=5))


def _batch(first: int, count: int) -> bytes:
    return encode_batch([(None, b"v%d" % (first + i)) for i in range(count)], base_offset=first)


def _acquired(*spec: tuple[int, int, int]) -> list[AcquiredRecords]:
    return [AcquiredRecords(first_offset=a, last_offset=b, delivery_count=c) for a, b, c in spec]


def test_only_acquired_offsets_are_delivered_with_their_counts() -> None:
    ledger = ShareLedger()
    data = _batch(0, 10)
    got = read_share_answer(P, data, _acquired((2, 4, 1), (7, 7, 3)), ledger, 0.0, 30.0,
                            check_crcs=True)
    records = got.batch.records
    assert [(r.offset, r.value, r.delivery_count) for r in records] == [
        (2, b"v2", 1), (3, b"v3", 1), (4, b"v4", 1), (7, b"v7", 3)]
    assert all(isinstance(r, ShareConsumerRecord) and (r.topic, r.partition) == ("orders", 3)
               for r in records)
    assert got.counts == {1: 3, 3: 1} and got.gaps == 0


def test_acquired_offsets_without_a_data_record_are_gaps() -> None:
    ledger = ShareLedger()
    data = _batch(0, 4) + encode_control_batch(CONTROL_COMMIT, producer_id=1, producer_epoch=0,
                                               base_offset=4) + _batch(5, 2)
    got = read_share_answer(P, data, _acquired((0, 6, 1), (8, 8, 1)), ledger, 0.0, 30.0,
                            check_crcs=True)
    assert [r.offset for r in got.batch.records] == [0, 1, 2, 3, 5, 6]
    assert got.gaps == 2  # the marker at 4, and 8 (not in the answer at all)
    assert ledger.take().acks == {P: {4: ACK_GAP, 8: ACK_GAP}}


def test_a_corrupt_batch_is_rejected_and_raised_after_the_good_records() -> None:
    ledger = ShareLedger()
    bad = bytearray(_batch(3, 3))
    bad[-1] ^= 0xFF  # the CRC covers the records: this one fails it
    data = _batch(0, 3) + bytes(bad) + _batch(6, 2)
    got = read_share_answer(P, data, _acquired((0, 7, 1)), ledger, 0.0, 30.0,
                            check_crcs=True)
    assert [r.offset for r in got.batch.records] == [0, 1, 2, 6, 7]
    assert isinstance(got.batch.error, CorruptRecordError)
    assert ledger.take().acks == {P: {3: ACK_REJECT, 4: ACK_REJECT, 5: ACK_REJECT}}
    assert ledger.held() == {P: [0, 1, 2, 6, 7]}


def test_no_records_but_acquired_ranges_are_all_gaps() -> None:
    ledger = ShareLedger()
    got = read_share_answer(P, None, _acquired((10, 11, 2)), ledger, 0.0, 30.0,
                            check_crcs=True)
    assert got.batch.records == [] and got.gaps == 2


@pytest.mark.parametrize("check", [True, False])
def test_delivery_counts_are_set_on_every_record_kept(check: bool) -> None:
    ledger = ShareLedger()
    got = read_share_answer(P, _batch(0, 500), _acquired((0, 499, 4)), ledger, 0.0, 30.0,
                            check_crcs=check)
    assert {r.delivery_count for r in got.batch.records} == {4}
    assert len(got.batch.records) == 500



needs_native = pytest.mark.skipif(not native.available, reason="the C extension is not built")


@needs_native
def test_an_answers_buffered_records_are_left_to_reference_counting() -> None:
    # The C loop leaves the records untracked by the cyclic collector; their list, which waits
    # in the buffer, is untracked too, so the young collections do not walk it.
    for whole in (True, False):  # every record kept, or a part of the batch
        acquired = _acquired((0, 9, 1)) if whole else _acquired((2, 4, 1), (7, 7, 2))
        got = read_share_answer(P, _batch(0, 10), acquired, ShareLedger(), 0.0, 30.0,
                                check_crcs=True)
        assert got.batch.records and not gc.is_tracked(got.batch.records)
        assert not any(gc.is_tracked(r) for r in got.batch.records)


def test_records_the_python_loop_built_stay_tracked_with_their_list(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_read, "_reader", batch_read._read_records)
    got = read_share_answer(P, _batch(0, 10), _acquired((0, 9, 1)), ShareLedger(), 0.0, 30.0,
                            check_crcs=True)
    assert gc.is_tracked(got.batch.records[0]) and gc.is_tracked(got.batch.records)


@needs_native
def test_untrack_list_leaves_a_list_with_a_tracked_item_tracked() -> None:
    assert native.module is not None
    untrack = native.module.untrack_list
    holder: list[object] = [1, "a", None, b"x", (1, 2)]
    holder.append(holder)  # a cycle through the list itself
    assert untrack(holder) is False and gc.is_tracked(holder)
    atoms: list[object] = [1, "a", None, b"x", 2.0]
    assert untrack(atoms) is True and not gc.is_tracked(atoms)
    assert untrack([[]]) is False
    with pytest.raises(TypeError):
        untrack((1, 2))  # type: ignore[arg-type]
