"""What the fetcher keeps per assigned partition: its raw answers and its fetch state.

A partition's answer is kept as the bytes the broker sent, one ``Chunk``, and decoded into
``ConsumerRecord`` objects a few entries at a time as ``take`` needs them, as the Java client's
CompletedFetch does. So the memory a consumer holds is bounded by the fetch size settings and
``max_poll_records``, not by how far behind it is. A ``FetchedPartition`` holds its chunks,
its position and its ``PartitionState``, which changes only through the table in
``partition_state``. The fetcher's lock guards both.
"""

from __future__ import annotations

import bisect
import collections
from operator import attrgetter
from typing import Any, cast

import attrs

from assignors import TopicPartition
from groupkit.errors import GroupkitError
from groupkit.protocol.records import Record, decode_batches, decode_records
from groupkit.protocol.records.control import AbortedFilter
from groupkit.protocol.records.walk import Entries, walk_entries
from groupkit.runtime.gc_pause import gc_paused
from groupkit.runtime.partition_state import PartitionEvent, PartitionState, next_state


@attrs.frozen
class ConsumerRecord(Record):
    """One record as the application receives it: a ``Record`` and the partition it came from.

    The decoder builds these directly, so a fetched record is never copied into another object.
    """

    topic: str = attrs.field(kw_only=True)
    partition: int = attrs.field(kw_only=True)


_by_offset = attrgetter("offset")


@attrs.define
class Chunk:
    """One answer of one partition, held raw and decoded as records are wanted.

    ``left`` is the share of its wire size not yet handed over; ``records[index:]`` the decoded
    records not yet taken; ``entry`` the first entry not decoded yet. Records before ``start``
    (a batch may begin before the offset asked for) are skipped; control records, and for
    read_committed aborted ones, are filtered as they are decoded.
    """

    tp: TopicPartition
    start: int
    data: bytes | memoryview
    entries: Entries
    check_crcs: bool
    aborted: AbortedFilter | None
    records: list[ConsumerRecord] = attrs.field(factory=list)
    index: int = 0
    entry: int = 0
    left: int = attrs.field()
    #: Its place among the answers buffered (the fetcher numbers them as they arrive).
    arrival: int = 0
    #: The data records the headers announce (an estimate for legacy compressed entries);
    #: kept, not summed per ``take``.
    count: int = attrs.field(init=False)

    @left.default
    def _all_left(self) -> int:
        return len(self.data)

    @count.default
    def _announced(self) -> int:
        return sum(self.entries.counts)

    @property
    def size(self) -> int:
        """The answer's wire size."""
        return len(self.data)

    @property
    def next_offset(self) -> int:
        """The offset after the answer's last complete entry (at least ``start``)."""
        return max(self.start, self.entries.next_offset)

    @property
    def done(self) -> bool:
        """Whether every record of the answer has been taken."""
        return self.index >= len(self.records) and self.entry >= len(self.entries.ends)

    def take(self, want: int) -> list[ConsumerRecord]:
        """Up to ``want`` records, decoding entries until some come (none once ``done``).

        Raises what the decoder raises for a malformed or corrupt entry.
        """
        while self.index >= len(self.records) and self.entry < len(self.entries.ends):
            self._decode(want)
        piece = self.records[self.index:self.index + want]
        self.index += len(piece)
        return piece

    def _decode(self, want: int) -> None:
        """Replace the taken window with the records of the next entries, about ``want`` of
        them (whole entries: at least one)."""
        counts = self.entries.counts
        first = last = self.entry
        found = counts[first]
        while found < want and last + 1 < len(counts):
            last += 1
            found += counts[last]
        try:
            records = self._records(first, last)
        except GroupkitError:
            if last == first:
                raise
            # Hand over the good entries before the bad one first, one entry per decode: the
            # bad one raises when the application reaches it (as Java's CompletedFetch does).
            last = first
            records = self._records(first, last)
        self.entry = last + 1
        if records and records[0].offset < self.start:
            del records[:bisect.bisect_left(records, self.start, key=_by_offset)]
        self.records = cast("list[ConsumerRecord]", records)
        self.index = 0

    def _records(self, first: int, last: int) -> list[Record]:
        """The visible records of entries ``first`` to ``last``."""
        ends = self.entries.ends
        raw = self.data[ends[first - 1] if first else 0:ends[last]]
        tp = self.tp
        with gc_paused():
            if self.aborted is None:
                return decode_records(raw, topic=tp.topic, partition=tp.partition,
                                      check_crc=self.check_crcs, record_type=ConsumerRecord)
            return self.aborted.visible(decode_batches(
                raw, topic=tp.topic, partition=tp.partition, check_crc=self.check_crcs,
                record_type=ConsumerRecord))


def read_chunk(tp: TopicPartition, offset: int, data: bytes | memoryview,
               aborted: list[Any] | None, *, check_crcs: bool, read_committed: bool) -> Chunk:
    """One partition's answer from ``offset`` on, sized by its headers and not yet decoded.

    An answer that starts with an entry the walk cannot size is decoded at once, so the error
    it raises reaches the caller now instead of with the records.
    """
    entries = walk_entries(data)
    if entries.malformed and entries.next_offset < 0:
        decode_batches(data, topic=tp.topic, partition=tp.partition, check_crc=check_crcs)
    filt = AbortedFilter.of([(a.producer_id, a.first_offset) for a in aborted or ()]) \
        if read_committed else None
    return Chunk(tp, offset, data, entries, check_crcs, filt)


@attrs.define
class FetchedPartition:
    """One assigned partition as the fetcher tracks it.

    ``state`` changes only through ``go``; ``paused`` is the application's wish, ``retry_at``
    a back-off timer, ``error`` what ``take`` raises in the failed states.
    """

    tp: TopicPartition
    state: PartitionState = PartitionState.AWAIT_POSITION
    position: int | None = None
    fetch_offset: int | None = None
    epoch: int = 0
    paused: bool = False
    #: The reset strategy of the next lookup (None: the committed offset first).
    reset: str | None = None
    retry_at: float = 0.0
    error: GroupkitError | None = None
    high_watermark: int = -1
    #: The offset up to which the broker has records to give (the last stable offset for
    #: read_committed), as of the last answer; -1 before one.
    log_end: int = -1
    buffered: int = 0
    chunks: collections.deque[Chunk] = attrs.field(factory=collections.deque)
    #: What ``take`` handed over since the last ``handed()``: records and wire bytes (for the
    #: Polled hook event); and the timestamp of the last record handed over (-1 when none).
    taken: int = 0
    taken_bytes: int = 0
    last_timestamp: int = -1

    def go(self, event: PartitionEvent) -> None:
        """Move to where ``event`` leads from the current state."""
        self.state = next_state(self.state, event)

    @property
    def caught_up(self) -> bool:
        """Whether the last answer said there is nothing past ``fetch_offset`` yet."""
        return 0 <= self.log_end <= (self.fetch_offset or 0)
