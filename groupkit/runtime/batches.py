"""A producer's record batches and the per-record futures that carry their outcome.

Each ``send()`` returns a :class:`RecordFuture`, a ``concurrent.futures.Future`` that callers
may wait on (``result()``, callbacks, ``concurrent.futures.wait``, ``asyncio.wrap_future``) but
not cancel or complete. The batch completes its records' futures, then its own ``future``
(which ``flush()`` waits on); so once a batch's future is done, so are all of its records'.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any, NamedTuple

import attrs

from groupkit.errors import IllegalStateError
from groupkit.protocol.records import encode_rows
from groupkit.txn.sequences import ProducerIdAndEpoch


class RecordMetadata(NamedTuple):
    """Where a produced record landed. ``offset`` is -1 when acks=0 (no answer)."""

    topic: str
    partition: int
    offset: int
    timestamp: int


class RecordFuture(Future[RecordMetadata]):
    """The outcome of one ``Producer.send``: a ``RecordMetadata`` or the batch's error.

    A ``Future``'s state (a condition, a lock, a list) made for every record, and kept alive
    with thousands of others until its batch is answered, costs several times the rest of
    ``send()``, mostly in the garbage collector. So a record future starts as just its batch
    and index, and the first use of any other attribute runs ``Future.__init__`` and hands it
    to the batch, which completes it (at once if the batch is already done). Records cannot be
    taken back once sent, and only the producer completes them.
    """

    # Slots: no instance dict is made until Future.__init__ runs (on first use), which makes
    # the common future, never looked at, about a third cheaper to create.
    __slots__ = ("_record_batch", "_record_index")
    _record_ready = False

    def __init__(self, batch: Batch, index: int) -> None:
        # No super().__init__(): the Future's state is made on first use, in __getattr__.
        self._record_batch = batch
        self._record_index = index

    def __getattr__(self, name: str) -> Any:
        """Called only for attributes not there yet: make the Future's state, then look again."""
        if name.startswith("__") or name in ("_record_batch", "_record_index"):
            raise AttributeError(name)
        self._record_batch.attach(self)
        return object.__getattribute__(self, name)

    def cancel(self) -> bool:
        """Records cannot be taken back once sent; always False."""
        return False

    def set_running_or_notify_cancel(self) -> bool:
        raise IllegalStateError("a record future is completed by the producer, not by callers")

    def set_result(self, result: RecordMetadata) -> None:
        raise IllegalStateError("a record future is completed by the producer, not by callers")

    def set_exception(self, exception: BaseException | None) -> None:
        raise IllegalStateError("a record future is completed by the producer, not by callers")


@attrs.define(eq=False)
class Batch:
    """Records for one partition, sent together in one Produce request."""

    topic: str
    partition: int
    created: float
    deadline: float
    records: list[tuple[Any, ...]] = attrs.field(factory=list)
    size: int = 0
    future: Future[tuple[int, int]] = attrs.field(factory=Future)
    attempts: int = 0
    retry_at: float = 0.0
    encoded: bytes | None = None
    # The idempotent producer's stamp (groupkit/txn): -1 until the batch is first drained.
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    transactional: bool = False
    #: Renumbered after it was first sent (an epoch bump): Java's sequenceHasBeenReset.
    sequence_reset: bool = False
    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)
    _outcome: tuple[int, int] | BaseException | None = attrs.field(init=False, default=None)
    # Record futures in use (see RecordFuture) that wait for the outcome.
    _waiting: list[RecordFuture] = attrs.field(init=False, factory=list)

    def append(self, row: tuple[Any, ...], size: int) -> RecordFuture:
        """Add one record (key, value, headers, timestamp) of ``size`` bytes; its future."""
        self.records.append(row)
        self.size += size
        return RecordFuture(self, len(self.records) - 1)

    def encode(self, compression: str | None) -> bytes:
        """The v2 record batch of these records (encoded once, kept for retries)."""
        if self.encoded is None:
            self.encoded = encode_rows(
                self.records, compression=compression, producer_id=self.producer_id,
                producer_epoch=self.producer_epoch, base_sequence=self.base_sequence,
                transactional=self.transactional)
        return self.encoded

    @property
    def record_count(self) -> int:
        return len(self.records)

    def restamp(self, producer: ProducerIdAndEpoch, base_sequence: int) -> None:
        """Carry this producer id, epoch and first sequence (the bytes are made again)."""
        if self.base_sequence >= 0:
            self.sequence_reset = True
        self.producer_id, self.producer_epoch = producer.producer_id, producer.epoch
        self.base_sequence = base_sequence
        self.encoded = None

    def attach(self, record: RecordFuture) -> None:
        """Give a record future its Future state on first use, completed if the batch is."""
        with self._lock:
            if record._record_ready:
                return
            Future.__init__(record)
            if self._outcome is None:
                self._waiting.append(record)
            else:
                self._settle(record, self._outcome)
            record._record_ready = True

    def complete(self, result: tuple[int, int]) -> None:
        """Finish every record with the broker's (base offset, log-append time).

        -1 for either means unknown: acks=0 has no offsets, and without log-append time each
        record keeps the timestamp it was sent with.
        """
        self._finish(result)
        self.future.set_result(result)

    def fail(self, error: BaseException) -> None:
        """Fail every record of the batch with ``error``."""
        self._finish(error)
        self.future.set_exception(error)

    def _finish(self, outcome: tuple[int, int] | BaseException) -> None:
        with self._lock:
            self._outcome = outcome
            waiting, self._waiting = self._waiting, []
        # Outside the lock: done callbacks may use the batch's other record futures.
        for record in waiting:
            self._settle(record, outcome)

    def _settle(self, record: RecordFuture, outcome: tuple[int, int] | BaseException) -> None:
        if isinstance(outcome, BaseException):
            Future.set_exception(record, outcome)
            return
        base_offset, log_append_time = outcome
        index = record._record_index
        Future.set_result(record, RecordMetadata(
            self.topic, self.partition, base_offset + index if base_offset >= 0 else -1,
            log_append_time if log_append_time >= 0 else self.records[index][3]))
