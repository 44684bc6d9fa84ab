"""A producer's record batches and the per-record futures that read their outcome.

One ``concurrent.futures.Future`` per batch carries the broker's answer (base offset and
log-append time). Each ``send()`` returns a :class:`RecordFuture`: a real ``Future`` subclass
that holds no lock or state of its own but reads the batch's, so making one is a few attribute
stores and finishing a batch of thousands of records is one ``set_result``. It works with
``result()``, ``exception()``, ``done()``, ``add_done_callback``, ``concurrent.futures.wait``
and ``as_completed``, which read the standard ``_state``/``_condition``/``_waiters`` fields.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, NamedTuple

import attrs

from groupkit.errors import IllegalStateError
from groupkit.protocol.records import encode_rows


class RecordMetadata(NamedTuple):
    """Where a produced record landed. ``offset`` is -1 when acks=0 (no answer)."""

    topic: str
    partition: int
    offset: int
    timestamp: int


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

    def encode(self, compression: str | None) -> bytes:
        """The v2 record batch of these records (encoded once, kept for retries)."""
        if self.encoded is None:
            self.encoded = encode_rows(self.records, compression=compression)
        return self.encoded


class _Relay:
    """Forwards a ``wait()``/``as_completed`` waiter's notices from a batch to a record future."""

    __slots__ = ("record", "waiter")

    def __init__(self, waiter: Any, record: RecordFuture) -> None:
        self.waiter = waiter
        self.record = record

    def add_result(self, _: Future[Any]) -> None:
        self.waiter.add_result(self.record)

    def add_exception(self, _: Future[Any]) -> None:
        self.waiter.add_exception(self.record)

    def add_cancelled(self, _: Future[Any]) -> None:
        self.waiter.add_cancelled(self.record)


class _Waiters:
    """The ``_waiters`` list a record future shows: installs relays on its batch's future."""

    __slots__ = ("record",)

    def __init__(self, record: RecordFuture) -> None:
        self.record = record

    def append(self, waiter: Any) -> None:
        self.record._batch.future._waiters.append(_Relay(waiter, self.record))

    def remove(self, waiter: Any) -> None:
        waiters = self.record._batch.future._waiters
        for relay in waiters:
            if isinstance(relay, _Relay) and relay.waiter is waiter \
                    and relay.record is self.record:
                waiters.remove(relay)
                return


class RecordFuture(Future):  # type: ignore[type-arg]
    """The outcome of one ``Producer.send``: a ``RecordMetadata`` or the batch's error."""

    def __init__(self, batch: Batch, index: int) -> None:  # no super(): the batch holds state
        self._batch = batch
        self._index = index

    @property
    def _condition(self) -> Any:
        return self._batch.future._condition

    @property
    def _state(self) -> str:
        return self._batch.future._state  # type: ignore[attr-defined,no-any-return]

    @property
    def _exception(self) -> BaseException | None:
        return self._batch.future._exception  # type: ignore[attr-defined,no-any-return]

    @property
    def _waiters(self) -> _Waiters:
        return _Waiters(self)

    @property
    def _result(self) -> RecordMetadata | None:
        outcome = self._batch.future._result  # type: ignore[attr-defined]
        if outcome is None:
            return None
        base_offset, log_append_time = outcome
        batch = self._batch
        offset = base_offset + self._index if base_offset >= 0 else -1
        timestamp = log_append_time if log_append_time >= 0 else batch.records[self._index][3]
        return RecordMetadata(batch.topic, batch.partition, offset, timestamp)

    def add_done_callback(self, fn: Callable[[Future[Any]], object]) -> None:
        self._batch.future.add_done_callback(lambda _: fn(self))

    def cancel(self) -> bool:
        """Records cannot be taken back once sent; always False."""
        return False

    def set_running_or_notify_cancel(self) -> bool:
        raise IllegalStateError("a record future is completed by the producer, not by callers")

    def set_result(self, result: Any) -> None:
        raise IllegalStateError("a record future is completed by the producer, not by callers")

    def set_exception(self, exception: BaseException | None) -> None:
        raise IllegalStateError("a record future is completed by the producer, not by callers")
