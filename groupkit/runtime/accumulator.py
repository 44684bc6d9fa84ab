"""Producer.send()'s common case in one call: append a record to its partition's open batch.

``Accumulator.append(topic, value, key, partition, headers, timestamp_ms)`` takes the record
whose topic's partitions are known, whose partition is given, keyed or the topic's sticky one,
whose batch is open with room to spare and for which ``buffer_memory`` has room; it appends it
under the producer's lock and returns its RecordFuture. For every other record (a new topic or
batch, a full batch or buffer, arguments of the wrong type, a closing producer) it returns None
and Producer takes its general Python path, which names the error or does the rest. It also
keeps what that path shares with it: ``buffered`` (bytes queued, against buffer_memory),
``closing``, ``refusing`` (set under the lock while the producer's transaction refuses sends:
an error state, or no transaction open; the Python path then raises that error), and the open
batches (one per partition at most), which the producer changes only
through its methods, so the C one can remember the batch it last appended to. The C one also
has ``send``, with Producer.send's signature: append, and for what append declines the
producer's Python path, in one call from the application.

The C twin (``groupkit.protocol._native.Accumulator``) runs when the extension is built; this
one is the reference the tests hold it to, and what runs without the extension.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, ClassVar, Protocol, cast

from groupkit.partitioner import partition_for_key
from groupkit.protocol import native
from groupkit.runtime.batches import Batch, RecordFuture

_RECORD_OVERHEAD = 16


class AccumulatorLike(Protocol):
    """What Producer uses of an accumulator, C or Python."""

    buffered: int
    closing: bool
    refusing: bool

    def append(self, topic: str, value: Any, key: Any, partition: Any, headers: Any,
               timestamp_ms: Any, /) -> RecordFuture | None: ...

    def get_open(self, tp: tuple[str, int], /) -> Batch | None: ...

    def set_open(self, tp: tuple[str, int], batch: Batch, /) -> None: ...

    def seal_open(self, tp: tuple[str, int], batch: Batch, /) -> bool: ...

    def open_batches(self) -> list[tuple[tuple[str, int], Batch]]: ...

    def clear_open(self) -> None: ...

    @property
    def send(self) -> Callable[..., Any] | None:
        """Producer.send in one call (append, else the fallback), or None where there is none."""


class Accumulator:
    """The pure-Python accumulator; see the module docstring."""

    __slots__ = ("_lock", "_partitions", "_sticky", "_open", "_batch_size", "_buffer_memory",
                 "buffered", "closing", "refusing")
    #: No send(): in Python it would save nothing over Producer.send calling append.
    send: ClassVar[None] = None

    def __init__(self, lock: threading.Lock, partitions: dict[str, tuple[int, list[int]]],
                 sticky: dict[str, int], batch_size: int, buffer_memory: int) -> None:
        self._lock = lock
        self._partitions = partitions
        self._sticky = sticky
        self._open: dict[tuple[str, int], Batch] = {}
        self._batch_size = batch_size
        self._buffer_memory = buffer_memory
        self.buffered = 0
        self.closing = False
        self.refusing = False

    def append(self, topic: str, value: Any, key: Any, partition: Any, headers: Any,
               timestamp_ms: Any, /) -> RecordFuture | None:
        """The record's future, or None when Producer's general path must take the record."""
        if self.closing or topic.__class__ is not str:
            return None
        size = _RECORD_OVERHEAD
        if value is not None:
            if value.__class__ is not bytes:
                return None
            size += len(value)
        if key is not None:
            if key.__class__ is not bytes:
                return None
            size += len(key)
        if headers is not None:
            if headers.__class__ is not list:
                return None
            for pair in headers:
                if pair.__class__ is not tuple or len(pair) != 2 or pair[0].__class__ is not str:
                    return None
                size += len(pair[0]) + 4
                if pair[1].__class__ is bytes:
                    size += len(pair[1])
                elif pair[1] is not None:
                    return None
        if timestamp_ms is None:
            timestamp_ms = time.time_ns() // 1_000_000
        elif timestamp_ms.__class__ is not int or not -2**63 <= timestamp_ms < 2**63:
            return None
        known = self._partitions.get(topic)
        if known is None:
            return None
        count = known[0]
        if count.__class__ is not int or count <= 0:
            return None
        if partition is not None and (partition.__class__ is not int
                                      or not 0 <= partition < count):
            return None
        if self.buffered + size > self._buffer_memory:
            return None
        row = (key, value, headers, timestamp_ms)
        with self._lock:
            if self.refusing:
                return None
            if partition is None:
                if key is not None:
                    partition = partition_for_key(key, count)
                else:
                    partition = self._sticky.get(topic)
                    if partition is None:
                        return None
            batch = self._open.get((topic, partition))
            # A record that fills the batch is left to the Python path, which seals the batch.
            if batch is None or batch.size + size >= self._batch_size \
                    or self.buffered + size > self._buffer_memory:
                return None
            future = batch.append(row, size)
            self.buffered += size
            return future

    # The open batches, one per (topic, partition) at most, changed with the producer's lock
    # held. They are the accumulator's so that the C one can remember the last it used.

    def get_open(self, tp: tuple[str, int], /) -> Batch | None:
        """The open batch of (topic, partition), or None."""
        return self._open.get(tp)

    def set_open(self, tp: tuple[str, int], batch: Batch, /) -> None:
        """Make ``batch`` the open batch of (topic, partition)."""
        self._open[tp] = batch

    def seal_open(self, tp: tuple[str, int], batch: Batch, /) -> bool:
        """Stop appending to ``batch`` if it is the open batch of (topic, partition)."""
        if tp not in self._open or self._open[tp] is not batch:
            return False
        del self._open[tp]
        return True

    def open_batches(self) -> list[tuple[tuple[str, int], Batch]]:
        """The ((topic, partition), batch) pairs open now."""
        return list(self._open.items())

    def clear_open(self) -> None:
        """Forget every open batch (close())."""
        self._open.clear()


#: The C accumulator's class, or None without the extension (tests set it to None).
NativeAccumulator: Any = None if native.module is None else native.module.Accumulator


def make_lock() -> threading.Lock:
    """The producer's lock: the extension's Lock with the C accumulator (which then takes it
    without a method call), else a threading.Lock. Both behave the same to Python code."""
    if NativeAccumulator is not None and native.module is not None:
        # Not a threading.Lock, but the same methods, and threading.Condition takes it.
        return cast(threading.Lock, native.module.Lock())
    return threading.Lock()


def make_accumulator(lock: threading.Lock, partitions: dict[str, tuple[int, list[int]]],
                     sticky: dict[str, int], batch_size: int, buffer_memory: int,
                     fallback: Callable[..., Any]) -> AccumulatorLike:
    """The C accumulator when the extension is built (its send() hands what append declines
    to ``fallback``), else the Python one."""
    if NativeAccumulator is not None:
        made: AccumulatorLike = NativeAccumulator(lock, partitions, sticky, Batch, RecordFuture,
                                                  batch_size, buffer_memory, fallback)
        return made
    return Accumulator(lock, partitions, sticky, batch_size, buffer_memory)
