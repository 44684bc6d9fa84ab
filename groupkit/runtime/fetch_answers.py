"""The fetcher's answers: each Fetch answer is sized, buffered raw, and told to the hooks.

An answer arrives on the connection's reader thread (``_answered``). One that changes nothing
for an idle consumer is sent again from there at once, and from then on the connection sends
it again by itself while its answer stays the same (``connection.Standing``), until any change
to the fetcher's state ends that (``_end_repeats``); any other goes to the fetcher thread,
which reads each partition's part outside the lock (``_read``) and stores it under the lock
(``_fill``): records into the partition's buffer, an error owed to the application, or an
offset out of range to reset.
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from functools import partial
from typing import Any

from assignors import TopicPartition
from groupkit.errors import ErrorCode, GroupkitError, NoOffsetForPartitionError, error_for_code
from groupkit.hooks import FetchCompleted, emit
from groupkit.protocol.messages.fetch import FetchResponse
from groupkit.runtime.fetch_state import TOPIC_IDS, FetcherState, SentFetch, log
from groupkit.runtime.fetched import Chunk, FetchedPartition, read_chunk
from groupkit.runtime.partition_state import FAILED_STATES, PartitionEvent, PartitionState
from groupkit.runtime.standing import Standing

S = PartitionState
E = PartitionEvent


class AnswerHandling(FetcherState):
    """The fetcher's handling of Fetch answers (``FetchLoop`` builds on it)."""

    __slots__ = ()

    def _answered(self, sent: SentFetch, future: Future[Any]) -> None:
        with self._lock:
            if not self._idle_again(sent, future):
                self._queue_answer(sent, future)
                return
            # The connection sends it again by itself while the answer stays the same, until
            # anything that changes what this fetcher would send ends it (``_end_repeats``):
            # registered under the lock ``_idle_again`` looked under, so no such change is
            # missed.
            standing = self._standing[sent.node] = Standing(
                partial(self._round_trip, sent) if self.hooks else None)
        # On the connection's reader thread, outside the lock, as the fetcher thread would,
        # on the connection the fetcher thread would take (``SentFetch.conn``); a connection that
        # is not up is left to the fetcher thread (a reader thread never connects). ``sent``
        # itself serves the repeat, with a new start time (nothing else holds it now): one
        # object less to make on every idle long poll's answer.
        conn = sent.conn
        started, sent.started = sent.started, time.monotonic()
        if not conn.send_connected(sent.request, sent.version, self._fetch_timeout_ms,
                                   partial(self._answered, sent), standing=standing):
            sent.started = started
            with self._lock:
                self._queue_answer(sent, future)
            return
        if self.hooks:
            self._round_trip(sent, started, sent.started)

    def _round_trip(self, sent: SentFetch, started: float, again: float) -> None:
        """An idle Fetch sent again at ``again`` (``started`` the one before): every round
        trip is told, idle ones too (as the fetcher thread would), on the reader thread, after
        the next Fetch left, so a hook never delays it."""
        sent.started = again
        emit(self.hooks, FetchCompleted(sent.node, len(sent.offsets), 0, 0, again - started))

    def _queue_answer(self, sent: SentFetch, future: Future[Any]) -> None:
        """Hand an answer to the fetcher thread (the caller holds ``_cond``); a repeat that
        stood on the connection for it is over."""
        self._standing.pop(sent.node, None)
        self._answers.append((sent, future))
        self._cond.notify_all()

    def _idle_again(self, sent: SentFetch, future: Future[Any]) -> bool:
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

    def _handle(self, sent: SentFetch, future: Future[Any]) -> None:
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
            name = sent.names.get(topic.topic_id if sent.version >= TOPIC_IDS else topic.topic)
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

    def _release(self, sent: SentFetch, backoff: bool) -> None:
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
