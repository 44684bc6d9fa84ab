"""The acquired-records bookkeeping of a share consumer (KIP-932), sans-IO.

What the Java client spreads over ShareCompletedFetch, ShareInFlightBatch and Acknowledgements,
kept in one place per partition: the offsets the broker gave this member (with their delivery
count and the time their acquisition lock runs out), how the application acknowledged each,
and the acknowledgements on their way to the broker, so every result can be reported against
the offsets it covers. An offset moves one way only::

    acquired ──acknowledge──> acknowledged ──take──> sent ──answered──> (gone)

except a RENEW (KIP-1222), which ``answered`` makes acquired again, under the lock the answer
names, when the broker renewed it (Java's ShareInFlightBatch: renewing, then renewed).
An acquired offset with no data record in the answer (a control record, a compacted one) is
acknowledged as a gap at once, as Java's ShareCompletedFetch does. The runtime guards a ledger
with its lock; nothing here reads a clock (``now`` comes in).
"""

from __future__ import annotations

import bisect
import collections
import heapq
import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from groupkit.errors import IllegalStateError
from groupkit.protocol.messages.share_fetch import ACK_RENEW, AcquiredRecords
from groupkit.share.acknowledge import GAP
from groupkit.share.offsets import OffsetRuns
from groupkit.share.session import SharePartition


@attrs.define
class _Partition:
    #: offset -> (delivery count, lock deadline): given to this member, not acknowledged yet,
    #: offset by offset (an answer that was not one clean run, or a run explicit
    #: acknowledgements or a redelivery spread).
    acquired: dict[int, tuple[int, float]] = attrs.field(factory=dict)
    #: The same kept as whole runs, [first, last, delivery count, lock deadline], none of
    #: their offsets in ``acquired``: an answer's acquired range, with every record present and
    #: none held already, stays one run until polls accept it (from its start, as they take
    #: records), so an answer and a poll cost a few steps instead of a few per record.
    runs: list[list[Any]] = attrs.field(factory=list)
    #: offset -> acknowledgement type id: acknowledged, not sent yet, offset by offset.
    acknowledged: dict[int, int] = attrs.field(factory=dict)
    #: The same for whole runs (first, last, type id), as a poll's records are accepted;
    #: none of their offsets in ``acknowledged``.
    ack_runs: list[tuple[int, int, int]] = attrs.field(factory=list)
    #: Offsets sent and not answered yet (an offset acquired again meanwhile is a duplicate).
    #: As taken by each request (``take``), until answered.
    sent: list[OffsetRuns] = attrs.field(factory=list)
    #: Offsets whose lock was seen to run out while unacknowledged (counted once each).
    expired: set[int] = attrs.field(factory=set)
    #: offset -> delivery count: acknowledged RENEW, not answered yet (acquired again when
    #: the broker renews the lock).
    renewing: dict[int, int] = attrs.field(factory=dict)

    def lookup(self, offset: int) -> tuple[int, float] | None:
        """The delivery count and deadline of an acquired, unacknowledged offset."""
        held = self.acquired.get(offset)
        if held is None:
            for run in self.runs:
                if run[0] <= offset <= run[1]:
                    return run[2], run[3]
        return held

    def overlaps(self, first: int, last: int) -> bool:
        return any(run[0] <= last and first <= run[1] for run in self.runs)

    def cut(self, first: int, last: int) -> list[tuple[int, int]]:
        """Take the offsets ``first``..``last`` out of the runs; the (first, last) pieces
        taken. A run is trimmed in place (a poll that took part of an answer moves its start),
        or split in two when the cut falls inside it."""
        taken: list[tuple[int, int]] = []
        runs = self.runs
        i = 0
        while i < len(runs):
            run = runs[i]
            a, b = run[0], run[1]
            i += 1
            if b < first or last < a:
                continue
            taken.append((max(a, first), min(b, last)))
            if first <= a and b <= last:
                i -= 1
                del runs[i]
            elif first <= a:
                run[0] = last + 1
            elif b <= last:
                run[1] = first - 1
            else:
                run[1] = first - 1
                runs.insert(i, [last + 1, b, run[2], run[3]])
                i += 1
        return taken

    def spread(self, first: int, last: int) -> None:
        """Move the runs holding offsets within ``first``..``last`` to ``acquired``, whole
        (offset by offset, for the steps that look at each)."""
        for run in [r for r in self.runs if r[0] <= last and first <= r[1]]:
            self.runs.remove(run)
            self.acquired.update(dict.fromkeys(range(run[0], run[1] + 1), (run[2], run[3])))

    def first_held(self, offsets: Sequence[int], start: int, deadline: float) -> int | None:
        """The index (from ``start``) of the first of ``offsets`` (sorted) still held under
        the lock running out at ``deadline``."""
        best: int | None = None
        for run in self.runs:
            if run[3] == deadline:
                index = bisect.bisect_left(offsets, run[0], start)
                if index < len(offsets) and offsets[index] <= run[1] \
                        and (best is None or index < best):
                    best = index
        acquired = self.acquired
        if acquired:
            # The offsets still acquired one by one, found by a loop in C.
            for index in itertools.compress(itertools.count(start), map(
                    acquired.__contains__, itertools.islice(offsets, start, best))):
                if acquired[offsets[index]][1] == deadline:
                    return index
        return best

    def held_under(self, offsets: Sequence[int], start: int, deadline: float) -> list[int]:
        """Which of ``offsets[start:]`` (sorted) are still held under the lock running out at
        ``deadline``, in order."""
        late: list[int] = []
        for run in self.runs:
            if run[3] == deadline:
                low = bisect.bisect_left(offsets, run[0], start)
                late.extend(offsets[low:bisect.bisect_right(offsets, run[1], low)])
        acquired = self.acquired
        if acquired:
            late.extend(o for o in itertools.islice(offsets, start, None)
                        if (held := acquired.get(o)) is not None and held[1] == deadline)
        return sorted(late)

    def cut_acks(self, first: int, last: int) -> bool:
        """Take the offsets ``first``..``last`` out of the acknowledged runs; whether any
        were there."""
        if not any(a <= last and first <= b for a, b, _ in self.ack_runs):
            return False
        kept: list[tuple[int, int, int]] = []
        for a, b, kind in self.ack_runs:
            if b < first or last < a:
                kept.append((a, b, kind))
                continue
            if a < first:
                kept.append((a, first - 1, kind))
            if last < b:
                kept.append((last + 1, b, kind))
        self.ack_runs = kept
        return True

    def spread_acks(self, first: int, last: int) -> None:
        """Move the acknowledged runs within ``first``..``last`` to ``acknowledged``."""
        for run in [r for r in self.ack_runs if r[0] <= last and first <= r[1]]:
            self.ack_runs.remove(run)
            self.acknowledged.update(dict.fromkeys(range(run[0], run[1] + 1), run[2]))

    def pending(self) -> bool:
        return bool(self.acknowledged or self.ack_runs)

    def held_count(self) -> int:
        return len(self.acquired) + sum(run[1] - run[0] + 1 for run in self.runs)


@attrs.frozen
class Acquired:
    """What one partition's answer gave: the offsets to deliver (offset -> delivery count;
    in offset order when iterated), the gaps acknowledged at once, and offsets the member
    already held."""

    deliver: OffsetRuns
    gaps: list[int]
    duplicates: int


@attrs.frozen
class Sent:
    """Acknowledgements taken for one request: ``token`` names them in ``answered``."""

    token: int
    acks: dict[SharePartition, OffsetRuns]


@attrs.define
class ShareLedger:
    """Every partition's acquired records and acknowledgements for one share consumer."""

    _parts: dict[SharePartition, _Partition] = attrs.field(factory=dict)
    #: One entry per answer that acquired records: [deadline, seq, partition, offsets, next],
    #: a heap by deadline; ``next`` skips the offsets already known to be done with, so each
    #: offset is looked at a bounded number of times however often the deadline is asked for.
    _locks: list[list[Any]] = attrs.field(factory=list)
    _seq: itertools.count[int] = attrs.field(factory=itertools.count)
    _sent: dict[int, dict[SharePartition, OffsetRuns]] = attrs.field(factory=dict)
    _tokens: itertools.count[int] = attrs.field(factory=lambda: itertools.count(1))

    def acquire(self, partition: SharePartition, ranges: Iterable[AcquiredRecords],
                present: set[int] | None, now: float, lock_s: float) -> Acquired:
        """Record what a ShareFetch answer acquired for ``partition``: ``ranges`` from the
        answer, ``present`` the offsets of its data records (None: every acquired offset has
        one). The lock runs out ``lock_s`` seconds after ``now`` (the answer's
        acquisition_lock_timeout_ms)."""
        part = self._parts.get(partition)
        if part is None:
            part = self._parts[partition] = _Partition()
        runs: list[tuple[int, int, int]] = []
        singles: dict[int, int] = {}
        gaps: list[int] = []
        duplicates = 0
        deadline = now + lock_s
        acquired, acknowledged, sent = part.acquired, part.acknowledged, part.sent
        for r in ranges:
            first, last, count = r.first_offset, r.last_offset, r.delivery_count
            span = range(first, last + 1)
            # Loops in C, each skipped when there is nothing to look through.
            clear = not any(acks.overlaps(first, last) for acks in sent) \
                and not (acknowledged and not acknowledged.keys().isdisjoint(span)) \
                and not (acquired and not acquired.keys().isdisjoint(span)) \
                and not part.overlaps(first, last) \
                and not any(a <= last and first <= b for a, b, _ in part.ack_runs)
            if clear and (present is None or present.issuperset(span)):
                # The usual answer: a new run, every record there.
                part.runs.append([first, last, count, deadline])
                if part.expired:
                    part.expired.difference_update(span)
                runs.append((first, last, count))
                continue
            part.spread(first, last)
            part.spread_acks(first, last)
            if not clear:
                in_flight = set().union(*sent) if sent else set()
                # Kafka gives an offset to a member once per delivery; an answer that names
                # one this member still holds is not a new delivery.
                held = [o for o in span if o in in_flight or o in acknowledged
                        or ((h := acquired.get(o)) is not None and h[0] >= count)]
                if held:
                    duplicates += len(held)
                    skip = set(held)
                    span = [o for o in span if o not in skip]  # type: ignore[assignment]
            new = span if present is None or present.issuperset(span) \
                else [o for o in span if o in present]
            if len(new) != len(span):
                missing = [o for o in span if o not in present]  # type: ignore[operator]
                gaps.extend(missing)
                acknowledged.update(dict.fromkeys(missing, GAP))
            if new:
                acquired.update(dict.fromkeys(new, (count, deadline)))
                if part.expired:
                    part.expired.difference_update(new)
                singles.update(dict.fromkeys(new, count))
        deliver = OffsetRuns(runs, singles)
        if deliver:
            order: Sequence[int]
            if not singles and len(runs) == 1:
                order = range(runs[0][0], runs[0][1] + 1)
            else:
                order = list(deliver)
            heapq.heappush(self._locks, [deadline, next(self._seq), partition, order, 0])
        return Acquired(deliver, gaps, duplicates)

    def acknowledge(self, partition: SharePartition, offset: int, ack_type: int,
                    delivery_count: int | None = None) -> None:
        """The application acknowledged one record; IllegalStateError when this member does not
        hold it (never delivered, or its acknowledgement already sent). A RENEW needs the
        record's ``delivery_count``: the offset is acquired again with it once renewed."""
        kind = int(ack_type)
        if kind == ACK_RENEW and delivery_count is None:
            raise IllegalStateError("a RENEW acknowledgement needs the record's delivery count")
        part = self._parts.get(partition)
        if part is not None and part.runs and offset not in part.acquired:
            # Explicit acknowledgements come record by record: the run goes to single
            # offsets once, and each acknowledgement after is one dictionary step.
            part.spread(offset, offset)
        if part is None or (part.acquired.pop(offset, None) is None
                            and offset not in part.acknowledged
                            and not part.cut_acks(offset, offset)):
            raise IllegalStateError(
                f"record {partition.topic}-{partition.partition}@{offset} cannot be"
                " acknowledged: it was not delivered to this consumer, or its acknowledgement"
                " was already sent (commit_sync, commit_async or the next poll)")
        part.acknowledged[offset] = kind
        if kind == ACK_RENEW and delivery_count is not None:  # (never None here: above)
            part.renewing[offset] = delivery_count
        elif part.renewing:
            part.renewing.pop(offset, None)  # acknowledged again before it was sent

    def acknowledge_all(self, partition: SharePartition, offsets: Iterable[int],
                        ack_type: int) -> int:
        """Acknowledge every offset of ``offsets`` this member still holds unacknowledged (the
        implicit mode's accept of a poll's records); how many it acknowledged. A ``range``
        (what a poll took of one answer) is taken out of the runs in one step."""
        part = self._parts.get(partition)
        if part is None:
            return 0
        kind = int(ack_type)
        acknowledged = part.acknowledged
        if isinstance(offsets, range) and offsets.step == 1:
            given: Sequence[int] = offsets
            done = 0
            if offsets:
                for a, b in part.cut(offsets[0], offsets[-1]):
                    part.ack_runs.append((a, b, kind))
                    done += b - a + 1
        else:
            given = offsets if isinstance(offsets, list) else list(offsets)
            done = 0
            if given and part.runs:
                part.spread(min(given), max(given))
        acquired = part.acquired
        if acquired:
            # By loops in C: a poll's records are accepted in one go.
            held = list(itertools.compress(given, map(acquired.__contains__, given)))
            collections.deque(map(acquired.__delitem__, held), maxlen=0)
            acknowledged.update(dict.fromkeys(held, kind))
            done += len(held)
        return done

    def is_held(self, partition: SharePartition, offset: int) -> bool:
        """Whether the record is acquired and not yet acknowledged."""
        part = self._parts.get(partition)
        return part is not None and part.lookup(offset) is not None

    def has_pending(self, partitions: Iterable[SharePartition] | None = None) -> bool:
        """Whether acknowledgements wait to be sent (for ``partitions``, or any)."""
        keys = self._parts.keys() if partitions is None else partitions
        return any((p := self._parts.get(k)) is not None and p.pending() for k in keys)

    def renews(self, partitions: Iterable[SharePartition]) -> bool:
        """Whether RENEW acknowledgements wait to be sent for any of ``partitions``."""
        return any((p := self._parts.get(k)) is not None and p.renewing
                   and not p.renewing.keys().isdisjoint(p.acknowledged) for k in partitions)

    def pending_partitions(self) -> list[SharePartition]:
        """The partitions with acknowledgements waiting to be sent."""
        return [k for k, p in self._parts.items() if p.pending()]

    def take(self, partitions: Iterable[SharePartition] | None = None) -> Sent:
        """Take the acknowledgements waiting for ``partitions`` (all when None) for one request."""
        token = next(self._tokens)
        taken: dict[SharePartition, OffsetRuns] = {}
        keys = list(self._parts) if partitions is None else list(partitions)
        for key in keys:
            part = self._parts.get(key)
            if part is None or not part.pending():
                continue
            acks = taken[key] = OffsetRuns(part.ack_runs, part.acknowledged)
            part.sent.append(acks)
            part.acknowledged = {}
            part.ack_runs = []
        if taken:
            self._sent[token] = taken
        return Sent(token, taken)

    def answered(self, token: int, lock_until: float | None = None,
                 refused: Iterable[SharePartition] = ()) -> dict[SharePartition, OffsetRuns]:
        """The request carrying ``token`` got its answer (or failed): its acknowledgements, by
        partition, leave the ledger; the caller reports each partition's result. Its RENEWs
        are acquired again, locked until ``lock_until``, except those of the partitions
        ``refused`` (answered with an error), or all when ``lock_until`` is None (no answer)."""
        taken = self._sent.pop(token, {})
        refused = set(refused)
        for key, acks in taken.items():
            part = self._parts.get(key)
            if part is not None:
                part.sent = [a for a in part.sent if a is not acks]
                if part.expired:  # rarely: a pass over every offset otherwise
                    part.expired.difference_update(acks)
                if part.renewing:
                    renewed = {o: part.renewing.pop(o) for o in list(part.renewing)
                               if acks.get(o) == ACK_RENEW}
                    if renewed and lock_until is not None and key not in refused:
                        self._renew(key, part, renewed, lock_until)
        return taken

    def _renew(self, partition: SharePartition, part: _Partition, renewed: dict[int, int],
               lock_until: float) -> None:
        """The broker renewed these offsets' locks (offset -> delivery count): they are this
        member's again until ``lock_until``, to be acknowledged once more."""
        part.acquired.update({o: (count, lock_until) for o, count in renewed.items()})
        order = sorted(renewed)
        heapq.heappush(self._locks, [lock_until, next(self._seq), partition, order, 0])

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
            late = [o for o in part.held_under(offsets, start, deadline)
                    if o not in part.expired]
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
                # The first offset still held under this entry's lock (not acknowledged, not
                # acquired again since) makes it the answer.
                index = part.first_held(offsets, start, deadline)
                if index is not None:
                    entry[4] = index
                    return float(deadline)
            heapq.heappop(locks)  # everything it acquired is acknowledged or acquired again
        return None

    def held(self, partitions: Iterable[SharePartition] | None = None
             ) -> dict[SharePartition, list[int]]:
        """The offsets acquired and not acknowledged, by partition."""
        keys = list(self._parts) if partitions is None else list(partitions)
        out: dict[SharePartition, list[int]] = {}
        for k in keys:
            p = self._parts.get(k)
            if p is not None and (p.acquired or p.runs):
                every = list(p.acquired)
                for run in p.runs:
                    every.extend(range(run[0], run[1] + 1))
                out[k] = sorted(every)
        return out

    def drop(self, partition: SharePartition, offsets: Iterable[int]) -> None:
        """Forget acquired offsets without acknowledging them (records the application never
        saw, whose locks the broker releases on its own)."""
        part = self._parts.get(partition)
        if part is not None:
            for offset in offsets:
                if part.acquired.pop(offset, None) is None:
                    part.cut(offset, offset)

    def counts(self) -> Mapping[str, int]:
        """Sizes for logs and tests: acquired, acknowledged (unsent) and sent offsets."""
        return {"acquired": sum(p.held_count() for p in self._parts.values()),
                "acknowledged": sum(len(p.acknowledged) + sum(b - a + 1 for a, b, _ in p.ack_runs)
                                    for p in self._parts.values()),
                "sent": sum(len(a) for p in self._parts.values() for a in p.sent)}
