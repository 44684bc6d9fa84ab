"""The fetcher thread: it finds start offsets, sends Fetches, and hands answers on.

Each turn it takes the answers the reader threads queued, the partitions waiting for a start
offset, and the plan of partitions to fetch by leader (``_plan``); it sends the new Fetches
first, so the broker works while the answers are handled, then looks up start offsets
(committed, else ``auto_offset_reset``). Failures back off per partition; nothing ends the
thread but ``close``.
"""

from __future__ import annotations

import collections
import time
from functools import partial
from typing import Any

from assignors import TopicPartition
from groupkit.errors import ApiKey, GroupkitError, NoOffsetForPartitionError
from groupkit.hooks import PartitionProgress, PartitionsProgressed, emit
from groupkit.protocol.messages.fetch import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
)
from groupkit.protocol.primitives import NULL_UUID
from groupkit.runtime.cluster import FETCH
from groupkit.runtime.fetch_answers import AnswerHandling
from groupkit.runtime.fetch_state import TOPIC_IDS, SentFetch, log
from groupkit.runtime.partition_state import PartitionEvent, PartitionState

S = PartitionState
E = PartitionEvent

#: How often, at most, the fetcher thread tells the hooks where changed partitions stand: a
#: lag gauge is never further behind than this, whether or not the application polls.
REPORT_S = 0.1


class FetchLoop(AnswerHandling):
    """The fetcher thread's loop and the Fetches it sends (``Fetcher`` builds on it)."""

    __slots__ = ()

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
                    if answers or init or plan or self._report_due():
                        break
                    self._cond.wait(self._next_wake())
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
                if self._report_due():
                    self._report()
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

    def _next_wake(self) -> float | None:
        """Seconds until a partition's back-off ends or changes are due to be told (None:
        only a notify can help); an idle consumer has neither."""
        wait = self._next_retry()
        if self.hooks and self._changed:
            due = max(0.0, self._report_at - time.monotonic())
            if wait is None or due < wait:
                wait = due
        return wait

    def _report_due(self) -> bool:
        # Read without the lock after the work: a change it misses is seen at the next wait.
        return bool(self.hooks) and bool(self._changed) \
            and time.monotonic() >= self._report_at

    def _report(self) -> None:
        """Tell the hooks where the partitions that changed stand (``PartitionsProgressed``),
        at most every ``REPORT_S``: from this thread, so the application's polls do not pay
        for it, the reports go out in order, and they go on when the polls stop."""
        committed = self.config.isolation_level == "read_committed"
        out = []
        with self._lock:
            self._report_at = time.monotonic() + REPORT_S
            changed, self._changed = self._changed, set()
            for tp in changed:
                part = self._parts.get(tp)
                if part is None or part.position is None:
                    continue
                end = part.log_end
                if end < 0 and not committed:
                    end = part.high_watermark
                out.append(PartitionProgress(tp.topic, tp.partition, 0, 0, part.position, end,
                                             part.last_timestamp))
        if out:
            emit(self.hooks, PartitionsProgressed(self.config.group_id, tuple(out)))

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
                found.update({tp: o.offset for tp, o in committed.items() if o is not None})
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
        if version >= TOPIC_IDS and any(i == NULL_UUID for i in ids.values()):
            version = TOPIC_IDS - 1
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
        names: dict[Any, str] = {ids[t] if version >= TOPIC_IDS else t: t for t in by_topic}
        sent = SentFetch(node, version, offsets, names, time.monotonic(), request, conn)
        future = conn.send(request, version, timeout_ms=self._fetch_timeout_ms)
        future.add_done_callback(partial(self._answered, sent))

    def _backoff(self, tps: list[TopicPartition], delay_ms: int | None = None) -> None:
        wait = self.config.retry_backoff_ms if delay_ms is None else delay_ms
        retry = time.monotonic() + wait / 1000
        with self._cond:
            for tp in tps:
                part = self._parts.get(tp)
                if part is not None:
                    part.retry_at = retry
