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

import itertools
from collections.abc import Collection, Iterable, Mapping

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
    _sent: dict[int, dict[SharePartition, dict[int, int]]] = attrs.field(factory=dict)
    _tokens: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1))

    def acquire(self, partition: SharePartition, ranges: Iterable[AcquiredRecords],
                present: Collection[int], now: float, lock_s: float) -> Acquired:
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
        for r in ranges:
            for offset in range(r.first_offset, r.last_offset + 1):
                held = part.acquired.get(offset)
                if (held is not None and held[0] >= r.delivery_count) \
                        or offset in part.acknowledged or offset in part.sent:
                    # Kafka gives an offset to a member once per delivery; an answer that
                    # names one this member still holds is not a new delivery.
                    duplicates += 1
                elif offset in present:
                    part.acquired[offset] = (r.delivery_count, deadline)
                    part.expired.discard(offset)
                    deliver[offset] = r.delivery_count
                else:
                    part.acknowledged[offset] = GAP
                    gaps.append(offset)
        return Acquired(dict(sorted(deliver.items())), gaps, duplicates)

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
        done = 0
        kind = int(ack_type)
        for offset in offsets:
            if part.acquired.pop(offset, None) is not None:
                part.acknowledged[offset] = kind
                done += 1
        return done

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
                part.expired.difference_update(acks)
        return taken

    def expire(self, now: float) -> dict[SharePartition, list[int]]:
        """Offsets whose acquisition lock ran out at ``now`` while unacknowledged, each
        reported once: the broker may already have given them to another member."""
        out: dict[SharePartition, list[int]] = {}
        for key, part in self._parts.items():
            late = [o for o, (_, deadline) in part.acquired.items()
                    if deadline <= now and o not in part.expired]
            if late:
                part.expired.update(late)
                out[key] = late
        return out

    def next_expiry(self) -> float | None:
        """When the first lock of an unacknowledged, not yet expired record runs out."""
        first: float | None = None
        for part in self._parts.values():
            for offset, (_, deadline) in part.acquired.items():
                if offset not in part.expired and (first is None or deadline < first):
                    first = deadline
        return first

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
