"""What the fetcher keeps per assigned partition: its decoded answers and its fetch state.

A partition's answer is decoded straight into ``ConsumerRecord`` objects, kept as one
``Chunk``; a ``FetchedPartition`` holds its chunks, its position and its ``PartitionState``,
which changes only through the table in ``partition_state``. The fetcher's lock guards both.
"""

from __future__ import annotations

import bisect
import collections
from operator import attrgetter
from typing import Any, cast

import attrs

from assignors import TopicPartition
from groupkit.errors import GroupkitError
from groupkit.protocol.records import Record, decode_batches, filter_aborted
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
    """One answer's records; ``left`` is the share of its wire size not yet taken."""

    records: list[ConsumerRecord]
    next_offset: int
    size: int
    index: int = 0
    left: int = attrs.field()

    @left.default
    def _all_left(self) -> int:
        return self.size


def decode_chunk(tp: TopicPartition, offset: int, data: bytes, aborted: list[Any] | None, *,
                 check_crcs: bool, read_committed: bool) -> Chunk:
    """The records of one partition's answer from ``offset`` on, without control records
    (and, for ``read_committed``, without aborted ones); raises what the decoder raises."""
    with gc_paused():
        batches = decode_batches(data, topic=tp.topic, partition=tp.partition,
                                 check_crc=check_crcs, record_type=ConsumerRecord)
    if not batches:
        return Chunk([], offset, 0)
    records: list[Record]
    if read_committed:
        records = filter_aborted(batches, [(a.producer_id, a.first_offset)
                                           for a in aborted or ()])
    else:
        records = []
        for batch in batches:
            if not batch.is_control:
                records.extend(batch.records)
    # A batch may start before the offset asked for; records come in offset order.
    skip = bisect.bisect_left(records, offset, key=_by_offset)
    if skip:
        del records[:skip]
    return Chunk(cast("list[ConsumerRecord]", records),
                 max(offset, batches[-1].next_offset), len(data))


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
    #: What ``take`` handed over since the last ``progress()``: records, wire bytes, and the
    #: timestamp of the last record (-1 when none); for the Polled hook event.
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
