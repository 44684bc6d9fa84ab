"""Control records and transaction markers: what read_committed readers filter by."""

from __future__ import annotations

import struct
from collections.abc import Iterable

import attrs

from groupkit.errors import CorruptRecordError
from groupkit.protocol.records.batch_write import encode_batch
from groupkit.protocol.records.layout import _H2
from groupkit.protocol.records.values import (
    CONTROL_ABORT,
    NO_TIMESTAMP,
    Record,
    RecordBatch,
)


def control_type(record: Record) -> int:
    """The marker type of a control batch's record: CONTROL_ABORT (0) or CONTROL_COMMIT (1)."""
    key = record.key
    if key is None or len(key) < 4:
        raise CorruptRecordError(
            f"control record at offset {record.offset} has no 4-byte key; the batch is corrupt")
    return _H2.unpack_from(key)[1]


@attrs.define
class AbortedFilter:
    """read_committed filtering fed batch runs in offset order, its state kept between runs.

    Built from the Fetch response's list of (producer_id, first_offset) for one partition. A
    producer's records count as aborted from its listed first offset until its ABORT marker,
    the rule Kafka's own consumer applies (CompletedFetch keeps the same two collections, the
    aborted transactions not reached yet and the producers being aborted, across its batches).
    """

    _pending: list[tuple[int, int]]
    _aborting: set[int] = attrs.field(factory=set)

    @classmethod
    def of(cls, aborted_transactions: Iterable[tuple[int, int]] | None) -> AbortedFilter:
        """A filter for one partition's answer."""
        return cls(sorted(aborted_transactions or (), key=lambda t: t[1], reverse=True))

    def visible(self, batches: Iterable[RecordBatch]) -> list[Record]:
        """The records of ``batches`` a read_committed consumer may see, markers removed."""
        pending, aborting = self._pending, self._aborting
        out: list[Record] = []
        for batch in batches:
            while pending and pending[-1][1] <= batch.last_offset:
                aborting.add(pending.pop()[0])
            if batch.is_control:
                if (batch.records and batch.producer_id in aborting
                        and control_type(batch.records[0]) == CONTROL_ABORT):
                    aborting.discard(batch.producer_id)
                continue
            if batch.is_transactional and batch.producer_id in aborting:
                continue
            out.extend(batch.records)
        return out


def filter_aborted(batches: Iterable[RecordBatch],
                   aborted_transactions: Iterable[tuple[int, int]] | None) -> list[Record]:
    """The records a read_committed consumer may see: aborted transactions and markers removed.

    ``aborted_transactions`` is the Fetch response's list of (producer_id, first_offset) for the
    partition; see :class:`AbortedFilter`.
    """
    return AbortedFilter.of(aborted_transactions).visible(batches)


def encode_control_batch(marker: int, *, producer_id: int, producer_epoch: int,
                         base_offset: int = 0, timestamp: int = NO_TIMESTAMP,
                         coordinator_epoch: int = 0) -> bytes:
    """A transaction marker batch (CONTROL_COMMIT or CONTROL_ABORT), as a broker writes it."""
    key = _H2.pack(0, marker)
    value = struct.pack(">hi", 0, coordinator_epoch)
    return encode_batch([(key, value, [], timestamp)], base_offset=base_offset,
                        producer_id=producer_id, producer_epoch=producer_epoch,
                        transactional=True, control=True)
