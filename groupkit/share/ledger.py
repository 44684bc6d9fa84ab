"""The acquired-records bookkeeping of a share consumer (KIP-932), sans-IO.

What the Java client spreads over ShareCompletedFetch, ShareInFlightBatch and Acknowledgements,
kept in one place per partition: the offsets the broker gave this member (with their delivery
count and the time their acquisition lock runs out), how the application acknowledged each,
and the acknowledgements on their way to the broker, so every result can be reported against
the offsets it covers. An offset moves one way only::

    acquired ──acknowledge──> acknowledged ──take──> sent ──answered──> (gone)

An acquired offset with no data record in the answer (a control record, a compacted one) is
acknowledged as a gap at once, as Java's ShareCompletedFetch does. The runtime guards a ledger
with its lock; nothing here reads a clock (``now`` comes in).
"""

from __future__ import annotations

import collections
import heapq
import itertools
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from groupkit.errors import IllegalStateError
from groupkit.protocol.messages.share_fetch import AcquiredRecords
from groupkit.share.acknowledge import GAP
from groupkit.share.session import SharePartition


@attrs.define
class _Partition:
    #: offset -> (delivery count, lock deadline): given to this member, not acknowledged yet.
    acquired: dict[int, tuple[int, float]] = attrs.field(factory=dict)
    #: offset -> acknowledgement type id: acknowledged, not sent yet.
    acknowledged: dict[int, int] = attrs.field(factory=dict)
    #: Offsets sent and not answered yet (an offset acquired again meanwhile is a duplicate).
    sent: set[int] = attrs.field(factory=set)
    #: Offsets whose lock was seen to run out while unacknowledged (counted once each).
    expired: set[int] = attrs.field(factory=set)


@attrs.frozen
class Acquired:
    """What one partition's answer gave: the offsets to deliver (offset -> delivery count, in
    offset order), the gaps acknowledged at once, and offsets the member already held."""

    deliver: dict[int, int]
    gaps: list[int]
    duplicates: int


@attrs.frozen
class Sent:
    """Acknowledgements taken for one request: ``token`` names them in ``answered``."""

    token: int
    acks: dict[SharePartition, dict[int, int]]


@attrs.define
class ShareLedger:
    """Every partition's acquired records and acknowledgements for one share consumer."""

    _parts: dict[SharePartition, _Partition] = attrs.field(factory=dict)
    #: One entry per answer that acquired records: [deadline, seq, partition, offsets, next],
    #: a heap by deadline; ``next`` skips the offsets already known to be done with, so each
    #: offset is looked at a bounded number of times however often the deadline is asked for.
    _locks: list[list[Any]] = attrs.field(factory=list)
    _seq: itertools.count[int] = attrs.field(factory=itertools.count)
    _sent: dict[int, dict[SharePartition, dict[int, int]]] = attrs.field(factory=dict)
    _tokens: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1))

    def acquire(self, partition: SharePartition, ranges: Iterable[AcquiredRecords],
                present: set[int], now: float, lock_s: float) -> Acquired:
        """Record what a ShareFetch answer acquired for ``partition``: ``ranges`` from the
        answer, ``present`` the offsets of its data records. The lock runs out ``lock_s``
        seconds after ``now`` (the answer's acquisition_lock_timeout_ms)."""
        part = self._parts.get(partition)
        if part is None:
            part = self._parts[partition] = _Partition()
        deliver: dict[int, int] = {}
        gaps: list[int] = []
        duplicates = 0
        deadline = now + lock_s
        acquired, acknowledged, sent = part.acquired, part.acknowledged, part.sent
        for r in ranges:
            span = range(r.first_offset, r.last_offset + 1)
            count = r.delivery_count
            if not (sent.isdisjoint(span) and acknowledged.keys().isdisjoint(span)
                    and acquired.keys().isdisjoint(span)):  # looked at by loops in C
                # Kafka gives an offset to a member once per delivery; an answer that names
                # one this member still holds is not a new delivery.
                held = [o for o in span if o in sent or o in acknowledged
                        or ((h := acquired.get(o)) is not None and h[0] >= count)]
                if held:
                    duplicates += len(held)
                    skip = set(held)
                    span = [o for o in span if o not in skip]  # type: ignore[assignment]
            new = span if present.issuperset(span) else [o for o in span if o in present]
            if len(new) != len(span):
                missing = [o for o in span if o not in present]
                gaps.extend(missing)
                acknowledged.update(dict.fromkeys(missing, GAP))
            if new:
                acquired.update(dict.fromkeys(new, (count, deadline)))
                if part.expired:
                    part.expired.difference_update(new)
                deliver.update(dict.fromkeys(new, count))
        if deliver:
            order = sorted(deliver)
            heapq.heappush(self._locks, [deadline, next(self._seq), partition, order, 0])
            if list(deliver) != order:
                deliver = {o: deliver[o] for o in order}
        return Acquired(deliver, gaps, duplicates)

    def acknowledge(self, partition: SharePartition, offset: int, ack_type: int) -> None:
        """The application acknowledged one record; IllegalStateError when this member does not
        hold it (never delivered, or its acknowledgement already sent)."""
        part = self._parts.get(partition)
        if part is None or (offset not in part.acquired and offset not in part.acknowledged):
            raise IllegalStateError(
                f"record {partition.topic}-{partition.partition}@{offset} cannot be"
                " acknowledged: it was not delivered to this consumer, or its acknowledgement"
                " was already sent (commit_sync, commit_async or the next poll)")
        part.acquired.pop(offset, None)
        part.acknowledged[offset] = int(ack_type)

    def acknowledge_all(self, partition: SharePartition, offsets: Iterable[int],
                        ack_type: int) -> int:
        """Acknowledge every offset of ``offsets`` this member still holds unacknowledged (the
        implicit mode's accept of a poll's records); how many it acknowledged."""
        part = self._parts.get(partition)
        if part is None:
            return 0
        acquired = part.acquired
        given = offsets if isinstance(offsets, list) else list(offsets)
        # By loops in C: a poll's records are accepted in one go.
        held = list(itertools.compress(given, map(acquired.__contains__, given)))
        collections.deque(map(acquired.__delitem__, held), maxlen=0)
        part.acknowledged.update(dict.fromkeys(held, int(ack_type)))
        return len(held)

    def is_held(self, partition: SharePartition, offset: int) -> bool:
        """Whether the record is acquired and not yet acknowledged."""
        part = self._parts.get(partition)
        return part is not None and offset in part.acquired

    def has_pending(self, partitions: Iterable[SharePartition] | None = None) -> bool:
        """Whether acknowledgements wait to be sent (for ``partitions``, or any)."""
        keys = self._parts.keys() if partitions is None else partitions
        return any((p := self._parts.get(k)) is not None and p.acknowledged for k in keys)

    def pending_partitions(self) -> list[SharePartition]:
        """The partitions with acknowledgements waiting to be sent."""
        return [k for k, p in self._parts.items() if p.acknowledged]

    def take(self, partitions: Iterable[SharePartition] | None = None) -> Sent:
        """Take the acknowledgements waiting for ``partitions`` (all when None) for one request."""
        token = next(self._tokens)
        taken: dict[SharePartition, dict[int, int]] = {}
        keys = list(self._parts) if partitions is None else list(partitions)
        for key in keys:
            part = self._parts.get(key)
            if part is None or not part.acknowledged:
                continue
            taken[key] = part.acknowledged
            part.sent.update(part.acknowledged)
            part.acknowledged = {}
        if taken:
            self._sent[token] = taken
        return Sent(token, taken)

    def answered(self, token: int) -> dict[SharePartition, dict[int, int]]:
        """The request carrying ``token`` got its answer (or failed): its acknowledgements, by
        partition, leave the ledger; the caller reports each partition's result."""
        taken = self._sent.pop(token, {})
        for key, acks in taken.items():
            part = self._parts.get(key)
            if part is not None:
                part.sent.difference_update(acks)
                if part.expired:  # rarely: a pass over every offset otherwise
                    part.expired.difference_update(acks)
        return taken

    def expire(self, now: float) -> dict[SharePartition, list[int]]:
        """Offsets whose acquisition lock ran out at ``now`` while unacknowledged, each
        reported once: the broker may already have given them to another member."""
        out: dict[SharePartition, list[int]] = {}
        locks = self._locks
        while locks and locks[0][0] <= now:
            deadline, _, partition, offsets, start = heapq.heappop(locks)
            part = self._parts.get(partition)
            if part is None:
                continue
            late = [o for o in offsets[start:]
                    if (held := part.acquired.get(o)) is not None and held[1] == deadline
                    and o not in part.expired]
            if late:
                part.expired.update(late)
                out.setdefault(partition, []).extend(late)
        return out

    def next_expiry(self) -> float | None:
        """When the first lock of an unacknowledged, not yet expired record runs out."""
        locks = self._locks
        while locks:
            entry = locks[0]
            deadline, _, partition, offsets, start = entry
            part = self._parts.get(partition)
            if part is not None:
                acquired = part.acquired
                # The offsets still acquired, found by a loop in C; the first one whose lock
                # is this entry's (not acquired again since) is the answer.
                for index in itertools.compress(itertools.count(start), map(
                        acquired.__contains__, itertools.islice(offsets, start, None))):
                    if acquired[offsets[index]][1] == deadline:
                        entry[4] = index
                        return float(deadline)
            heapq.heappop(locks)  # everything it acquired is acknowledged or acquired again
        return None

    def held(self, partitions: Iterable[SharePartition] | None = None
             ) -> dict[SharePartition, list[int]]:
        """The offsets acquired and not acknowledged, by partition."""
        keys = list(self._parts) if partitions is None else list(partitions)
        return {k: sorted(p.acquired) for k in keys
                if (p := self._parts.get(k)) is not None and p.acquired}

    def drop(self, partition: SharePartition, offsets: Iterable[int]) -> None:
        """Forget acquired offsets without acknowledging them (records the application never
        saw, whose locks the broker releases on its own)."""
        part = self._parts.get(partition)
        if part is not None:
            for offset in offsets:
                part.acquired.pop(offset, None)

    def counts(self) -> Mapping[str, int]:
        """Sizes for logs and tests: acquired, acknowledged (unsent) and sent offsets."""
        return {"acquired": sum(len(p.acquired) for p in self._parts.values()),
                "acknowledged": sum(len(p.acknowledged) for p in self._parts.values()),
                "sent": sum(len(p.sent) for p in self._parts.values())}
