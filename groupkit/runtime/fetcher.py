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

Over 600 lines because the partition table, the Fetch requests built from it, the answers
handled on the connections' reader threads (an idle partition's re-send) and the fetcher
thread's loop share one lock and the per-partition state machine.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from functools import partial
from typing import Any

import attrs

from assignors import TopicPartition
from groupkit.config import ConsumerConfig
from groupkit.errors import (
    ApiKey,
    ErrorCode,
    GroupkitError,
    IllegalStateError,
    NoOffsetForPartitionError,
    error_for_code,
)
from groupkit.hooks import FetchCompleted, Hook, PartitionProgress, emit
from groupkit.protocol.messages.fetch import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    FetchResponse,
)
from groupkit.protocol.primitives import NULL_UUID
from groupkit.runtime.cluster import FETCH, Cluster
from groupkit.runtime.connection import BrokerConnection
from groupkit.runtime.fetched import Chunk, ConsumerRecord, FetchedPartition, read_chunk
from groupkit.runtime.offsets import OffsetStore
from groupkit.runtime.partition_state import FAILED_STATES, PartitionEvent, PartitionState

log = logging.getLogger(__name__)

S = PartitionState
E = PartitionEvent

#: The first Fetch version that names topics by id.
_TOPIC_IDS = 13


@attrs.define(eq=False)
class _Sent:
    """A Fetch in flight. A slotted attrs class that is not frozen: on CPython 3.11 it is
    made and read faster than a frozen one or a NamedTuple, and an idle consumer's repeat of
    the same Fetch on a reader thread (see ``_answered``) reuses it with a new ``started``."""

    node: int
    version: int
    offsets: dict[TopicPartition, tuple[int, int]]
    names: dict[Any, str]
    started: float
    request: FetchRequest
    #: The pooled connection it went out on: ``cluster.connection(node, FETCH)``. The pool
    #: replaces it only once it is down and its node moved, and closes it then, so a repeat
    #: on it is refused and the fetcher thread routes again.
    conn: BrokerConnection


@attrs.define(eq=False)
class Fetcher:
    """Keeps records of the assigned partitions ready for ``take``.

    ``wakeup`` is called on the fetcher thread when new records (or errors) are ready, so a
    blocked ``poll`` can return at once.
    """

    cluster: Cluster
    config: ConsumerConfig
    offsets: OffsetStore | None
    hooks: Sequence[Hook] = ()
    wakeup: Callable[[], None] = lambda: None

    #: ``_cond``'s lock. ``_answered`` holds it directly, entered in C, instead of entering
    #: ``_cond`` (a Python-level ``Condition.__enter__``/``__exit__``); it is the same lock.
    _lock: threading.RLock = attrs.field(init=False, factory=threading.RLock)
    _cond: threading.Condition = attrs.field(init=False, default=attrs.Factory(
        lambda fetcher: threading.Condition(fetcher._lock), takes_self=True))
    _parts: dict[TopicPartition, FetchedPartition] = attrs.field(init=False, factory=dict)
    _busy_nodes: set[int] = attrs.field(init=False, factory=set)
    _answers: collections.deque[tuple[_Sent, Future[Any]]] = attrs.field(
        init=False, factory=collections.deque)
    _buffered: int = attrs.field(init=False, default=0)
    #: Partitions whose position, log end or taken records changed since ``progress()``.
    _changed: set[TopicPartition] = attrs.field(init=False, factory=set)
    _closed: bool = attrs.field(init=False, default=False)
    #: What keeps fetching from working, while it lasts (logged once per change).
    _trouble: str | None = attrs.field(init=False, default=None)
    _thread: threading.Thread | None = attrs.field(init=False, default=None)
    #: Per node, a Fetch and the answer to it that changed nothing (no records, no errors):
    #: the same answer to an equal request again may be answered by sending it again (see
    #: ``_idle_again``) without waking the fetcher thread.
    _quiet: dict[int, tuple[FetchRequest | None, Any]] = attrs.field(init=False, factory=dict)
    #: False once a ``take`` found no partition holding an answer or an error; set again
    #: (under the lock) as one is stored (``_store``, ``_owe``). An idle consumer's ``take``
    #: reads it without the lock and returns at once: whatever sets it then rings the poll's
    #: bell, or (an answer with no data records) is taken by the next poll, as before.
    _takeable: bool = attrs.field(init=False, default=True)
    #: The partition whose answer ``take`` is draining.
    _in_line: FetchedPartition | None = attrs.field(init=False, default=None)
    #: How many answers were buffered so far (numbers them in arrival order).
    _arrived: int = attrs.field(init=False, default=0)
    #: A Fetch's timeout: the request timeout on top of the broker's long-poll wait.
    _fetch_timeout_ms: int = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._fetch_timeout_ms = self.config.request_timeout_ms + self.config.fetch_max_wait_ms

    # --- the application's side ----------------------------------------------------------------

    def start(self) -> None:
        """Start the fetcher thread."""
        self._thread = threading.Thread(target=self._run, daemon=True, name="groupkit-fetcher")
        self._thread.start()

    def close(self, timeout: float) -> None:
        """Stop fetching; the thread ends within ``timeout`` (it is a daemon either way)."""
        with self._cond:
            self._closed = True
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
                    part.taken += len(piece)
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
                part.taken_bytes += freed
                self._buffered -= freed
                refetch = refetch or part.buffered < mark <= part.buffered + freed
                if done:
                    part = None  # the next answer in arrival order
            self._in_line = part
            if refetch:
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

    def _owe(self, part: FetchedPartition, error: GroupkitError, event: PartitionEvent) -> None:
        """Store the error ``take`` raises for ``part`` and move it to a failed state."""
        part.error = error
        self._takeable = True
        part.go(event)

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

    def progress(self) -> tuple[PartitionProgress, ...]:
        """The positioned partitions whose position, log end or taken records changed since the
        last call, with what ``take`` handed over from each (for the ``Polled`` hook event; a
        consumer of many idle partitions reports none of them)."""
        committed = self.config.isolation_level == "read_committed"
        out = []
        with self._cond:
            changed, self._changed = self._changed, set()
            for tp in changed:
                part = self._parts.get(tp)
                if part is None or part.position is None:
                    continue
                end = part.log_end
                if end < 0 and not committed:
                    end = part.high_watermark
                out.append(PartitionProgress(tp.topic, tp.partition, part.taken,
                                             part.taken_bytes, part.position, end,
                                             part.last_timestamp))
                part.taken = part.taken_bytes = 0
                part.last_timestamp = -1
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

    # --- the fetcher thread --------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._closed:
                        return
                    answers = list(self._answers)
                    self._answers.clear()
                    for sent, _ in answers:
                        self._busy_nodes.discard(sent.node)
                    init = self._to_initialize()
                    plan = self._plan()
                    if answers or init or plan:
                        break
                    self._cond.wait(self._next_retry())
            try:
                if plan and self.cluster.stale:
                    # A NOT_LEADER/UNKNOWN_TOPIC answer or a broken link: route anew.
                    self.cluster.maybe_refresh()
                    with self._cond:
                        plan = self._plan()
                # Ask for more before decoding what came, so the broker works meanwhile.
                for node, tps in plan.items():
                    self._send(node, tps)
                for sent, future in answers:
                    self._handle(sent, future)
                if init:
                    self._initialize(init)
            except GroupkitError as exc:
                self._troubled(f"the cluster does not answer ({exc})")
                with self._cond:
                    backoff = time.monotonic() + self.config.retry_backoff_max_ms / 1000
                    for part in self._parts.values():
                        part.retry_at = max(part.retry_at, backoff)
            except Exception:
                log.exception("the fetcher hit an unexpected error; it goes on after a backoff")
                with self._cond:
                    backoff = time.monotonic() + self.config.retry_backoff_max_ms / 1000
                    for part in self._parts.values():
                        part.retry_at = max(part.retry_at, backoff)

    def _next_retry(self) -> float | None:
        now = time.monotonic()
        times = [p.retry_at for p in self._parts.values() if p.retry_at > now]
        return min(times) - now if times else None

    def _to_initialize(self) -> list[tuple[TopicPartition, int, str | None]]:
        now = time.monotonic()
        out = []
        for tp, part in self._parts.items():
            if part.state is S.AWAIT_POSITION and part.retry_at <= now:
                part.go(E.LOOKUP_STARTED)
                out.append((tp, part.epoch, part.reset))
        return out

    def _plan(self) -> dict[int, list[TopicPartition]]:
        """Partitions to fetch now, by leader: positioned, unpaused, buffer below the mark,
        leader idle.

        A Fetch that asks only for caught-up partitions is held by the broker for up to
        ``fetch_max_wait_ms``, and the leader takes no other Fetch meanwhile; so it is not
        sent while a partition of that leader waits only for its buffer to drain (or for its
        answer, already here, to be decoded): they go together once it has, and the broker
        answers at once with that partition's records.
        """
        if self._buffered >= self.config.fetch_max_bytes:
            return {}
        now = time.monotonic()
        mark = self.config.max_partition_fetch_bytes
        metadata = self.cluster.metadata
        plan: dict[int, list[TopicPartition]] = collections.defaultdict(list)
        draining: set[int] = set()
        for tp, part in self._parts.items():
            if part.state not in (S.READY, S.FETCHING) or part.paused or part.retry_at > now:
                continue
            leader = metadata.leader_for(tp.topic, tp.partition)
            if part.state is S.FETCHING:
                if leader is not None and leader not in self._busy_nodes:
                    draining.add(leader)
                continue
            if leader is None:
                self.cluster.request_refresh()
                leader = -1
            if part.buffered >= mark:
                draining.add(leader)
            elif leader not in self._busy_nodes:
                plan[leader].append(tp)
        return {node: tps for node, tps in plan.items()
                if node not in draining or not all(self._parts[tp].caught_up for tp in tps)}

    def _initialize(self, todo: list[tuple[TopicPartition, int, str | None]]) -> None:
        found: dict[TopicPartition, int] = {}
        error: GroupkitError | None = None
        try:
            normal = [tp for tp, _, reset in todo if reset is None]
            if normal and self.offsets is not None and self.config.group_id is not None:
                committed = self.offsets.committed(
                    normal, self.config.request_timeout_ms / 1000)
                found.update({tp: o for tp, o in committed.items() if o is not None})
            by_reset: dict[str, list[TopicPartition]] = collections.defaultdict(list)
            for tp, _, reset in todo:
                if tp not in found:
                    by_reset[reset or self.config.auto_offset_reset].append(tp)
            for strategy, tps in by_reset.items():
                found.update(self._list_offsets(tps, strategy))
        except NoOffsetForPartitionError as exc:
            error = exc
        except Exception as exc:
            self._troubled(f"looking up start offsets failed ({exc})")
        backoff = time.monotonic() + self.config.retry_backoff_ms / 1000
        with self._cond:
            for tp, epoch, _ in todo:
                part = self._parts.get(tp)
                if part is None or part.epoch != epoch or part.state is not S.LOOKING_UP:
                    continue  # a seek, pause or revoke abandoned this lookup
                if tp in found:
                    part.position = part.fetch_offset = found[tp]
                    part.reset = None
                    self._changed.add(tp)
                    part.go(E.POSITION_FOUND)
                elif error is not None:
                    self._owe(part, error, E.NO_OFFSET_FOUND)
                else:
                    part.retry_at = backoff
                    part.go(E.LOOKUP_FAILED)
            self._cond.notify_all()
        if error is not None:
            self._wake()

    def _list_offsets(self, tps: list[TopicPartition], strategy: str) -> dict[TopicPartition, int]:
        if self.offsets is None:
            raise GroupkitError("the fetcher has no offset store to look up start offsets")
        return self.offsets.list_offsets(tps, strategy, self.config.request_timeout_ms / 1000)

    def _send(self, node: int, tps: list[TopicPartition]) -> None:
        if node < 0:
            # No leader known (a topic being created, a leader election): ask again, slowly.
            self._backoff(tps, self.config.retry_backoff_max_ms)
            self.cluster.maybe_refresh()
            return
        try:
            conn = self.cluster.connection(node, FETCH)
            conn.connect()
        except GroupkitError as exc:
            self._troubled(f"the leader (node {node}) does not answer ({exc})")
            self.cluster.observe(exc)
            self._backoff(tps)
            return
        metadata = self.cluster.metadata
        version = conn.versions.get(ApiKey.FETCH, 4)
        ids = {t: metadata.topics[t].topic_id if t in metadata.topics else NULL_UUID
               for t in {tp.topic for tp in tps}}
        if version >= _TOPIC_IDS and any(i == NULL_UUID for i in ids.values()):
            version = _TOPIC_IDS - 1
        offsets: dict[TopicPartition, tuple[int, int]] = {}
        by_topic: dict[str, list[FetchRequestPartition]] = collections.defaultdict(list)
        with self._cond:
            for tp in tps:
                part = self._parts.get(tp)
                if part is None or part.state is not S.READY or part.fetch_offset is None:
                    continue
                part.go(E.FETCH_SENT)
                offsets[tp] = (part.fetch_offset, part.epoch)
                by_topic[tp.topic].append(FetchRequestPartition(
                    partition=tp.partition, fetch_offset=part.fetch_offset,
                    partition_max_bytes=self.config.max_partition_fetch_bytes))
            if not offsets:
                return
            self._busy_nodes.add(node)
        request = FetchRequest(
            max_wait_ms=self.config.fetch_max_wait_ms, min_bytes=self.config.fetch_min_bytes,
            max_bytes=self.config.fetch_max_bytes,
            isolation_level=READ_COMMITTED if self.config.isolation_level == "read_committed"
            else READ_UNCOMMITTED,
            session_id=0, session_epoch=-1,
            topics=[FetchRequestTopic(topic=t, topic_id=ids[t], partitions=ps)
                    for t, ps in by_topic.items()],
            forgotten_topics_data=[], rack_id=self.config.client_rack or "")
        names: dict[Any, str] = {ids[t] if version >= _TOPIC_IDS else t: t for t in by_topic}
        sent = _Sent(node, version, offsets, names, time.monotonic(), request, conn)
        future = conn.send(request, version, timeout_ms=self._fetch_timeout_ms)
        future.add_done_callback(partial(self._answered, sent))

    def _troubled(self, why: str) -> None:
        """One WARNING when fetching stops working, not one per retry (the broker outage itself
        is reported per broker by the cluster); each retry backs off and the fetcher recovers
        by itself (see ``_recovered``)."""
        if self._trouble is None:
            self._trouble = why
            log.warning("fetching is held up: %s; retrying with back-off until it works",
                        why)
        else:
            log.debug("fetching still held up: %s", why)

    def _recovered(self) -> None:
        if self._trouble is not None:
            log.info("fetching works again (after: %s)", self._trouble)
            self._trouble = None

    def _answered(self, sent: _Sent, future: Future[Any]) -> None:
        with self._lock:
            if not self._idle_again(sent, future):
                self._queue_answer(sent, future)
                return
        # On the connection's reader thread, outside the lock, as the fetcher thread would,
        # on the connection the fetcher thread would take (``_Sent.conn``); a connection that
        # is not up is left to the fetcher thread (a reader thread never connects). ``sent``
        # itself serves the repeat, with a new start time (nothing else holds it now): one
        # object less to make on every idle long poll's answer.
        conn = sent.conn
        started, sent.started = sent.started, time.monotonic()
        if not conn.send_connected(sent.request, sent.version, self._fetch_timeout_ms,
                                   partial(self._answered, sent)):
            sent.started = started
            with self._lock:
                self._queue_answer(sent, future)
            return
        hooks = self.hooks
        if hooks:
            # Every round trip is told, idle ones too (as the fetcher thread would): on this
            # thread, after the next Fetch left, so a hook never delays it.
            emit(hooks, FetchCompleted(sent.node, len(sent.offsets), 0, 0,
                                       sent.started - started))

    def _queue_answer(self, sent: _Sent, future: Future[Any]) -> None:
        """Hand an answer to the fetcher thread (the caller holds ``_cond``)."""
        self._answers.append((sent, future))
        self._cond.notify_all()

    def _idle_again(self, sent: _Sent, future: Future[Any]) -> bool:
        """Whether to send ``sent``'s request again at once, on the reader thread: its answer
        is the very object that last changed nothing for an equal request, and nothing else
        waits (every assigned partition is in this Fetch, at the same offset and epoch).
        Handling it would change nothing and send the same request, so an idle consumer's
        long polls cost the fetcher thread no wakeup (hooks hear of the round trip from the
        reader thread). Anything else (records, errors, a seek, a new partition, trouble to
        report) goes to the fetcher thread."""
        quiet = self._quiet.get(sent.node)
        if quiet is None or self._closed or self._answers \
                or self._trouble is not None or self.cluster.stale \
                or len(self._parts) != len(sent.offsets):
            return False
        try:
            if quiet[1] is not future.result():  # one look at the done future
                return False
        except BaseException:
            return False
        if quiet[0] is not sent.request:
            if quiet[0] != sent.request:
                return False
            # Keep the request being repeated, so the next answer is matched by identity,
            # not by comparing the whole Fetch field by field.
            self._quiet[sent.node] = (sent.request, quiet[1])
        for tp, (offset, epoch) in sent.offsets.items():
            part = self._parts.get(tp)
            if part is None or part.state is not S.FETCHING or part.epoch != epoch \
                    or part.fetch_offset != offset:
                return False
        return True

    def _handle(self, sent: _Sent, future: Future[Any]) -> None:
        error = future.exception()
        if error is not None:
            self._troubled(f"Fetch from node {sent.node} failed ({error})")
            self.cluster.observe(error)
            self._release(sent, backoff=True)
            return
        response: FetchResponse = future.result()
        if response.error_code:
            self._troubled(f"Fetch from node {sent.node} failed"
                           f" ({error_for_code(response.error_code)()})")
            self.cluster.observe_code(response.error_code)
            self._release(sent, backoff=True)
            return
        self._recovered()
        records = size = 0
        woke = False
        quiet = True
        for topic in response.responses:
            name = sent.names.get(topic.topic_id if sent.version >= _TOPIC_IDS else topic.topic)
            if name is None:
                continue
            for answer in topic.partitions:
                tp = TopicPartition(name, answer.partition_index)
                if tp not in sent.offsets:
                    continue
                offset, epoch = sent.offsets[tp]
                quiet = quiet and not answer.error_code and not answer.records
                got, nbytes, failed = self._fill(tp, offset, epoch, answer)
                records += got
                size += nbytes
                woke = woke or got > 0 or failed
        with self._cond:
            if quiet and not woke:
                self._quiet[sent.node] = (sent.request, response)
            else:
                self._quiet.pop(sent.node, None)
        self._release(sent, backoff=False)
        if self.hooks:
            emit(self.hooks, FetchCompleted(sent.node, len(sent.offsets), records, size,
                                            time.monotonic() - sent.started))
        if woke:
            self._wake()

    def _fill(self, tp: TopicPartition, offset: int, epoch: int,
              answer: Any) -> tuple[int, int, bool]:
        """Put one partition's answer, sized but not decoded, into its buffer.

        Returns (records, bytes, whether an error now waits for the application).
        """
        error, chunk = self._read(tp, offset, answer)
        with self._cond:
            part = self._parts.get(tp)
            if part is None or part.epoch != epoch or part.fetch_offset != offset \
                    or part.state is not S.FETCHING:
                return 0, 0, False
            self._note_log_end(part, answer)
            code = answer.error_code
            if code == ErrorCode.OFFSET_OUT_OF_RANGE:
                self._out_of_range(part, offset)
            elif error is not None:
                self._owe(part, error, E.FETCH_FAILED)
            else:
                part.go(E.FETCH_ANSWERED)
                if code:
                    part.retry_at = time.monotonic() + self.config.retry_backoff_ms / 1000
                elif chunk is not None and chunk.next_offset > offset:
                    self._store(part, offset, chunk)
                    return chunk.count, chunk.size, False
            return 0, 0, part.state in FAILED_STATES

    def _read(self, tp: TopicPartition, offset: int,
              answer: Any) -> tuple[GroupkitError | None, Chunk | None]:
        """Outside the lock: the error for the application (a code retrying cannot fix, or
        an answer whose first entry cannot be read), else the answer's records, if any, sized
        by their headers (``take`` decodes them)."""
        code = answer.error_code
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            log.info("%s-%d: offset %d is out of range", tp.topic, tp.partition, offset)
        elif code:
            self.cluster.observe_code(code)
            exc = error_for_code(code)(f"Fetch of {tp.topic}-{tp.partition}")
            return (None if exc.retriable else exc), None
        elif answer.records:
            try:
                return None, read_chunk(
                    tp, offset, answer.records, answer.aborted_transactions,
                    check_crcs=self.config.check_crcs,
                    read_committed=self.config.isolation_level == "read_committed")
            except GroupkitError as exc:
                return exc, None
        return None, None

    def _note_log_end(self, part: FetchedPartition, answer: Any) -> None:
        """Keep the answer's high watermark and (read_committed) last stable offset."""
        log_end = part.log_end
        part.high_watermark = answer.high_watermark
        part.log_end = answer.high_watermark
        if self.config.isolation_level == "read_committed" and answer.last_stable_offset >= 0:
            part.log_end = answer.last_stable_offset
        if part.log_end != log_end:
            self._changed.add(part.tp)

    def _out_of_range(self, part: FetchedPartition, offset: int) -> None:
        tp = part.tp
        if part.position != offset:
            # Asked ahead of records still buffered: decide once the application has them
            # (the Java client also resets only at its position).
            part.go(E.FETCH_ANSWERED)
            part.retry_at = time.monotonic() + self.config.retry_backoff_ms / 1000
            return
        if self.config.auto_offset_reset == "none":
            self._owe(part, NoOffsetForPartitionError(
                f"offset {offset} of {tp.topic}-{tp.partition} is out of range and"
                " auto_offset_reset is 'none'; seek() to a valid offset"), E.FETCH_FAILED)
        else:
            part.position = part.fetch_offset = None
            part.reset = self.config.auto_offset_reset
            part.go(E.OUT_OF_RANGE)
        self._cond.notify_all()

    def _store(self, part: FetchedPartition, offset: int, chunk: Chunk) -> None:
        """Buffer an answer that moved past ``offset`` (records, or only control/aborted ones)."""
        part.fetch_offset = chunk.next_offset
        if part.position == offset and not chunk.count:
            part.position = chunk.next_offset
            self._changed.add(part.tp)
        else:
            # Behind buffered records, an answer of only control or aborted records still
            # moves the position once the application reaches it.
            self._arrived += 1
            chunk.arrival = self._arrived
            part.chunks.append(chunk)
            part.buffered += chunk.size
            self._buffered += chunk.size
            self._takeable = True

    def _release(self, sent: _Sent, backoff: bool) -> None:
        """Mark the partitions of ``sent`` fetchable again (after a back-off if it failed)."""
        retry = time.monotonic() + self.config.retry_backoff_ms / 1000
        with self._cond:
            for tp, (_, epoch) in sent.offsets.items():
                part = self._parts.get(tp)
                if part is not None and part.epoch == epoch and part.state is S.FETCHING:
                    part.go(E.FETCH_ANSWERED)
                    if backoff:
                        part.retry_at = retry
            self._cond.notify_all()

    def _backoff(self, tps: list[TopicPartition], delay_ms: int | None = None) -> None:
        wait = self.config.retry_backoff_ms if delay_ms is None else delay_ms
        retry = time.monotonic() + wait / 1000
        with self._cond:
            for tp in tps:
                part = self._parts.get(tp)
                if part is not None:
                    part.retry_at = retry

    def _wake(self) -> None:
        try:
            self.wakeup()
        except Exception:
            log.exception("the wakeup callback failed")
