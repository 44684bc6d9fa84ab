"""Background prefetching: one long-poll Fetch in flight per partition leader.

A daemon thread finds each assigned partition's starting offset (committed, else
``auto_offset_reset``), sends Fetch requests on connections used only for fetching, and
buffers each partition's answer raw, sized by its batch headers (``runtime.fetched``); ``take``
decodes the answers into ``ConsumerRecord`` objects as it hands them over, one answer after
another in the order they arrived. A partition is fetched again as soon as its buffer holds
less than ``max_partition_fetch_bytes``, so the next answer is on its way before the
application runs dry, while memory stays within that plus one answer per partition and
``fetch_max_bytes`` overall. Seek, pause and revoke bump the partition's epoch: an answer that
left under an older epoch is dropped, so no stale record ever reaches the application.

The fetcher is built in layers, one job per module: ``fetch_state`` (the partition table,
its lock and the moves every part shares), ``fetch_answers`` (the answers), ``fetch_loop``
(the fetcher thread and the Fetches it sends), and this module (the application's side:
assignment, seek, pause, ``take`` and ``progress``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

from assignors import TopicPartition
from groupkit.errors import GroupkitError, IllegalStateError
from groupkit.hooks import PartitionProgress
from groupkit.runtime.fetch_loop import FetchLoop
from groupkit.runtime.fetch_state import log
from groupkit.runtime.fetched import ConsumerRecord, FetchedPartition
from groupkit.runtime.partition_state import FAILED_STATES, PartitionEvent

E = PartitionEvent


class Fetcher(FetchLoop):
    """Keeps records of the assigned partitions ready for ``take``.

    Built as ``Fetcher(cluster, config, offsets, hooks=(), wakeup=...)``; ``wakeup`` is called
    on the fetcher thread when new records (or errors) are ready, so a blocked ``poll`` can
    return at once.
    """

    __slots__ = ()

    # --- the application's side ----------------------------------------------------------------

    def start(self) -> None:
        """Start the fetcher thread."""
        self._thread = threading.Thread(target=self._run, daemon=True, name="groupkit-fetcher")
        self._thread.start()

    def close(self, timeout: float) -> None:
        """Stop fetching; the thread ends within ``timeout`` (it is a daemon either way)."""
        with self._cond:
            self._closed = True
            self._end_repeats()
            self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Fetch exactly ``partitions`` from now on; dropped ones lose their buffers."""
        wanted = set(partitions)
        with self._cond:
            for tp in list(self._parts):
                if tp not in wanted:
                    self._drop(self._parts.pop(tp))
            for tp in wanted:
                if tp not in self._parts:
                    self._parts[tp] = FetchedPartition(tp)
            self._end_repeats()
            self._cond.notify_all()
        self.cluster.add_topics({tp.topic for tp in wanted})

    def assignment(self) -> set[TopicPartition]:
        """The partitions being fetched."""
        with self._cond:
            return set(self._parts)

    def seek(self, tp: TopicPartition, offset: int | None, reset: str | None = None) -> None:
        """Read ``tp`` from ``offset`` next (or from ``reset``: "earliest"/"latest")."""
        with self._cond:
            part = self._part(tp)
            self._drop(part)
            part.position = part.fetch_offset = offset
            part.reset = reset
            self._changed.add(tp)
            part.error = None
            part.go(E.RESET_REQUESTED if offset is None else E.SEEKED)
            self._cond.notify_all()

    def position(self, tp: TopicPartition, timeout: float) -> int | None:
        """The offset of the next record ``take`` gives for ``tp``; waits while it is looked up."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                part = self._part(tp)
                if part.error is not None:
                    raise part.error
                if part.position is not None:
                    return part.position
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)

    def positions(self) -> dict[TopicPartition, int]:
        """The known positions of all assigned partitions (what a commit stores)."""
        with self._cond:
            return {tp: p.position for tp, p in self._parts.items() if p.position is not None}

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        """Hold back records of ``partitions``; what is buffered is dropped and refetched."""
        with self._cond:
            for tp in partitions:
                part = self._part(tp)
                part.paused = True
                self._drop(part)
            # Caught-up partitions may have waited for the dropped buffer to drain.
            self._cond.notify_all()

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        """Fetch ``partitions`` again."""
        with self._cond:
            for tp in partitions:
                self._part(tp).paused = False
            self._end_repeats()
            self._cond.notify_all()

    def paused(self) -> set[TopicPartition]:
        """The partitions held back by ``pause``."""
        with self._cond:
            return {tp for tp, p in self._parts.items() if p.paused}

    def ready(self) -> bool:
        """Whether ``take`` would return records or raise an error now."""
        with self._cond:
            return any(p.state in FAILED_STATES or (p.chunks and not p.paused)
                       for p in self._parts.values())

    def take(self, max_records: int) -> list[ConsumerRecord]:
        """Up to ``max_records`` buffered records, decoded from the raw answers as they are
        taken.

        Answers are drained one at a time, in the order they arrived, as the Java client's
        FetchCollector drains its next-in-line CompletedFetch before it moves on to the next
        one; a partition's next answer is asked for as its buffer drains, so it queues behind
        the answers of the others and every partition gets its turn. A poll so touches one or
        two answers, not every assigned partition.

        Raises the first stored partition error (e.g. NoOffsetForPartitionError, or a corrupt
        entry met while decoding) instead, once the records buffered ahead of it are taken.
        Wakes the fetcher thread when a partition's buffer drops below the refetch mark or an
        answer is used up (the overall ``fetch_max_bytes`` budget).
        """
        if not self._takeable:
            return []  # nothing buffered, nothing owed (every poll of an idle consumer)
        # ``_cond``'s lock entered directly (C), not the Condition's Python-level ``with``.
        with self._lock:
            self._raise_owed()
            # Hooks hear of what is handed over (``handed``) and, from the fetcher thread, of
            # where the partitions stand: woken below when this take leaves the first change.
            hooks = self.hooks
            quiet = not self._changed
            part = self._in_line
            if part is None:
                part = self._next_in_line()
                if part is None:
                    # Nothing raisable, nothing unpaused buffered: nothing at all (pause drops
                    # the buffers; an owed error is raisable in every state it is owed in).
                    self._takeable = False
                    return []
            out: list[ConsumerRecord] = []
            mark = self.config.max_partition_fetch_bytes
            refetch = False
            while len(out) < max_records:
                if part is None or not part.chunks or part.paused \
                        or self._parts.get(part.tp) is not part:
                    part = self._next_in_line()
                    if part is None:
                        break
                chunk = part.chunks[0]
                try:
                    piece = chunk.take(max_records - len(out))
                except GroupkitError as exc:
                    self._undecodable(part, exc)
                    refetch = True
                    part = None
                    continue
                out.extend(piece)
                if piece:
                    last = piece[-1]
                    part.position = last.offset + 1
                    part.last_timestamp = last.timestamp
                    self._changed.add(part.tp)
                done = chunk.done
                if done:
                    part.chunks.popleft()
                    freed = chunk.left
                    part.position = max(part.position or 0, chunk.next_offset)
                    self._changed.add(part.tp)
                    refetch = True
                else:
                    # The headers' count can be short (legacy compressed entries).
                    freed = min(chunk.left, chunk.size * len(piece) // max(1, chunk.count))
                chunk.left -= freed
                part.buffered -= freed
                if hooks and (piece or freed):
                    if not part.taken and not part.taken_bytes:
                        self._handed.append(part)
                    part.taken += len(piece)
                    part.taken_bytes += freed
                self._buffered -= freed
                refetch = refetch or part.buffered < mark <= part.buffered + freed
                if done:
                    part = None  # the next answer in arrival order
            self._in_line = part
            if refetch or (quiet and hooks and self._changed):
                self._cond.notify_all()
            if not out and refetch:
                # Only an answer used up or found undecodable above (each sets refetch) can
                # leave an error owed that the first look did not raise.
                self._raise_owed()
        return out

    def _next_in_line(self) -> FetchedPartition | None:
        """The unpaused partition whose first buffered answer arrived before the others'."""
        # A loop, not min() over a generator: no second frame on an idle consumer's polls.
        first: FetchedPartition | None = None
        for part in self._parts.values():
            if part.chunks and not part.paused and (
                    first is None or part.chunks[0].arrival < first.chunks[0].arrival):
                first = part
        return first

    def _raise_owed(self) -> None:
        """Raise the first partition error with no records buffered ahead of it (once)."""
        for part in self._parts.values():
            if part.error is not None and part.state in FAILED_STATES and not part.chunks:
                error, part.error = part.error, None
                part.go(E.ERROR_RAISED)
                raise error

    def _undecodable(self, part: FetchedPartition, exc: GroupkitError) -> None:
        """A buffered entry of ``part`` cannot be decoded: forget what is buffered from the
        position on and owe the application the error. Fetching then resumes at the position,
        so the entry is met, and raised, again until the application seeks past it (as the
        Java client raises a corrupt record each time its position reaches it)."""
        log.warning("%s-%d: the record batch at offset %s cannot be decoded (%s); poll()"
                    " raises it until the application seeks past it", part.tp.topic,
                    part.tp.partition, part.position, exc)
        self._drop(part)
        self._owe(part, exc, E.DECODE_FAILED)

    def handed(self) -> tuple[PartitionProgress, ...]:
        """What ``take`` handed over since the last call, per partition: records and wire
        bytes, with the partition's position, for the ``Polled`` event of every poll (so the
        counters built on it are exact however fast the polls come). Counted only while there
        are hooks. Application thread only, as ``take``."""
        parts = self._handed
        if not parts:
            return ()
        self._handed = []
        committed = self.config.isolation_level == "read_committed"
        out = []
        for part in parts:
            end = part.log_end
            if end < 0 and not committed:
                end = part.high_watermark
            position = part.position
            out.append(PartitionProgress(part.tp.topic, part.tp.partition, part.taken,
                                         part.taken_bytes, -1 if position is None else position,
                                         end, part.last_timestamp))
            part.taken = part.taken_bytes = 0
        return tuple(out)

    def _part(self, tp: TopicPartition) -> FetchedPartition:
        part = self._parts.get(tp)
        if part is None:
            raise IllegalStateError(
                f"{tp.topic}-{tp.partition} is not assigned to this consumer; use assignment()"
                " to see which partitions it holds")
        return part

    def _drop(self, part: FetchedPartition) -> None:
        """Forget buffered and in-flight data of ``part`` (seek, pause, revoke)."""
        part.epoch += 1
        part.go(E.DROPPED)
        self._buffered -= part.buffered
        part.buffered = 0
        part.chunks.clear()
        part.fetch_offset = part.position
        part.log_end = -1
        self._end_repeats()
