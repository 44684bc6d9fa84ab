"""A share consumer's records: what a ShareFetch answer gave one partition, decoded.

After the Java client's ShareCompletedFetch: the answer's record batches may hold offsets this
member did not acquire (they are skipped) and lack offsets it did (a control record, a
compacted one: acknowledged as gaps, by the ledger). A batch that fails its checks has its
acquired records rejected (they can never be read) and the error is raised once the records
before it are handed over.
"""

from __future__ import annotations

import collections
import itertools
import operator
import struct
from typing import ClassVar, cast

import attrs

from groupkit.errors import CorruptFrame, GroupkitError
from groupkit.protocol import native
from groupkit.protocol.messages.share_fetch import AcquiredRecords
from groupkit.protocol.records import decode_records
from groupkit.protocol.records.layout import _MAGIC_AT, _PREFIX
from groupkit.protocol.records.walk import walk_entries
from groupkit.runtime.fetched import ConsumerRecord
from groupkit.runtime.gc_pause import gc_paused
from groupkit.share import AcknowledgeType, ShareLedger, SharePartition


@attrs.frozen
class ShareConsumerRecord(ConsumerRecord):
    """One record a share group delivered: a ``ConsumerRecord`` and ``delivery_count``, how
    many times the broker has delivered it (1 the first time; more after a release, a lock
    that ran out, or a member that left holding it)."""

    #: The decoder sets this when an answer's records share one delivery count (the usual
    #: answer: one acquired range); otherwise the share fetcher sets it on each record it
    #: keeps.
    SET_AFTER_DECODE: ClassVar[tuple[str, ...]] = ("delivery_count",)

    delivery_count: int = attrs.field(kw_only=True, default=1)


_LAST_DELTA_AT = 23  # a v2 batch's lastOffsetDelta (int32)
_LAST_DELTA = struct.Struct(">i")
_set_delivery_count = ShareConsumerRecord.__dict__["delivery_count"].__set__
#: A record's offset, read by loops in C (``map``) over a whole answer.
offset_of = operator.attrgetter("offset")


@attrs.define
class ShareBatch:
    """One partition's records from one answer, waiting for ``poll`` (``records[index:]``)."""

    partition: SharePartition
    records: list[ShareConsumerRecord]
    index: int = 0
    #: Raised by the poll that reaches the end of ``records`` (a corrupt batch after them).
    error: GroupkitError | None = None
    #: Whether the records' offsets follow one another with no hole (in offset order).
    contiguous: bool = False

    @property
    def done(self) -> bool:
        return self.index >= len(self.records) and self.error is None

    def take(self, want: int) -> list[ShareConsumerRecord]:
        piece = self.records[self.index:self.index + want]
        self.index += len(piece)
        return piece

    def offsets(self, piece: list[ShareConsumerRecord]) -> list[range]:
        """The offsets of ``piece`` (taken from this batch) as runs: one range when the batch
        is contiguous, else one per record."""
        if self.contiguous:
            return [range(piece[0].offset, piece[-1].offset + 1)]
        return [range(o, o + 1) for o in map(offset_of, piece)]


@attrs.frozen
class Delivered:
    """What one partition's answer delivered: the batch for ``poll`` and, for the metrics, the
    delivery counts (count -> records), gaps and duplicates."""

    batch: ShareBatch
    counts: dict[int, int]
    gaps: int
    duplicates: int


def read_share_answer(partition: SharePartition, data: bytes | memoryview | None,
                      acquired: list[AcquiredRecords], ledger: ShareLedger, now: float,
                      lock_s: float, *, check_crcs: bool) -> Delivered:
    """Decode one partition's answer and record what it acquired in ``ledger`` (under the
    caller's lock)."""
    # No record outside the acquired offsets is delivered: a batch's records before the first
    # and after the last are not built (the mock's answers carry whole batches, about twice
    # what was acquired). As Java's ShareCompletedFetch, which passes over records it did not
    # acquire and stops once every acquired offset is accounted for.
    up_to = max((r.last_offset for r in acquired), default=-1)
    from_offset = min((r.first_offset for r in acquired), default=0)
    # One acquired range (the usual answer): its delivery count is every record's, set by the
    # decoder as it builds them.
    preset = acquired[0].delivery_count if len(acquired) == 1 else None
    records, error, bad = _decode(partition, data or b"", check_crcs, from_offset, up_to,
                                  () if preset is None else (preset,))
    for first, last in bad:
        # Java: a corrupt batch's acquired records are rejected; nobody can read them.
        for r in acquired:
            for offset in range(max(first, r.first_offset), min(last, r.last_offset) + 1):
                ledger.acquire(partition, [AcquiredRecords(
                    first_offset=offset, last_offset=offset, delivery_count=r.delivery_count)],
                    {offset}, now, lock_s)
                ledger.acknowledge(partition, offset, AcknowledgeType.REJECT)
    # One acquired range with a record at every offset (the usual answer): the ledger keeps
    # it as a run, and no set of the records' offsets is made.
    whole = len(acquired) == 1 and not bad and len(records) == up_to - from_offset + 1
    got = ledger.acquire(partition, acquired, None if whole else set(map(offset_of, records)),
                         now, lock_s)
    deliver = got.deliver
    # The answer's batches may hold records acquired by others: keep this member's, by a
    # loop in C.
    if len(deliver) == len(records):
        kept = records
    else:
        wanted = deliver.singles if not deliver.runs else set(deliver)
        kept = list(itertools.compress(records, map(wanted.__contains__,
                                                    map(offset_of, records))))
    counts: dict[int, int] = {}
    if len(kinds := deliver.distinct()) == 1:
        # One delivery count for every record: the decoder's, else set by a loop in C.
        count = kinds.pop()
        if count != preset:
            collections.deque(map(_set_delivery_count, kept, itertools.repeat(count)),
                              maxlen=0)
        if kept:
            counts[count] = len(kept)
    else:
        for record in kept:
            count = deliver[record.offset]
            _set_delivery_count(record, count)
            counts[count] = counts.get(count, 0) + 1
    if native.module is not None:
        # The records the C loop built are untracked; so is their list then, which waits in
        # the buffer for the polls while the answers after it start young collections.
        native.module.untrack_list(kept)
    # Offsets one after another, as polls take them: a poll's piece of this batch is a range.
    contiguous = not kept or kept[-1].offset - kept[0].offset + 1 == len(kept)
    return Delivered(ShareBatch(partition, kept, error=error, contiguous=contiguous), counts,
                     len(got.gaps),
                     got.duplicates)


def _decode(partition: SharePartition, data: bytes | memoryview, check_crcs: bool,
            from_offset: int, up_to: int, after: tuple[int, ...],
            ) -> tuple[list[ShareConsumerRecord], GroupkitError | None, list[tuple[int, int]]]:
    """The answer's records (``after``: the delivery count to give each, if any); on bad
    entries, the records of the good ones, the first error,
    and the offset range of each entry that could not be read (to its end, or to the end of
    the partition when the walk cannot size it)."""
    topic, number = partition.topic, partition.partition

    def decode(piece: bytes | memoryview) -> list[ShareConsumerRecord]:
        with gc_paused():
            return cast("list[ShareConsumerRecord]", decode_records(
                piece, topic=topic, partition=number, check_crc=check_crcs,
                record_type=ShareConsumerRecord, from_offset=from_offset, up_to=up_to,
                after=after))

    try:
        return decode(data), None, []
    except CorruptFrame as exc:
        first_error: GroupkitError = exc
    entries = walk_entries(data)
    records: list[ShareConsumerRecord] = []
    bad: list[tuple[int, int]] = []
    start = 0
    for index, end in enumerate(entries.ends):
        try:
            records.extend(decode(data[start:end]))
        except CorruptFrame:
            base = _PREFIX.unpack_from(data, start)[0] if end - start >= _PREFIX.size else 0
            sized = not (entries.malformed and index == len(entries.ends) - 1)
            last = _last_offset(data, start) if sized else _NO_END
            bad.append((base, last))
        start = end
    if not bad:  # the walk found no entry to blame: reject from the end of the good ones on
        bad.append((entries.next_offset if entries.next_offset >= 0 else 0, _NO_END))
    return records, first_error, bad


_NO_END = 2 ** 63 - 1


def _last_offset(data: bytes | memoryview, pos: int) -> int:
    """The last offset of the entry at ``pos``: a v2 batch says it; a legacy entry's offset is
    its last message's."""
    base = _PREFIX.unpack_from(data, pos)[0]
    if data[pos + _MAGIC_AT] == 2:
        return base + _LAST_DELTA.unpack_from(data, pos + _LAST_DELTA_AT)[0]
    return base
