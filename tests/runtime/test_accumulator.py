"""The producer's accumulator: the C one against the Python one, and both against send()'s rules.

Both take the same random sequences of records and of changes the producer's general path
makes between them (new batches, sticky partitions, topics, a full buffer, closing, refusing); they must
take and decline the same records and leave the same batches, sizes and byte counts.
"""

from __future__ import annotations

import gc
import itertools
import sys
import threading
import time
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from groupkit.partitioner import murmur2, partition_for_key
from groupkit.protocol import native
from groupkit.runtime import accumulator
from groupkit.runtime.accumulator import (
    Accumulator,
    AccumulatorLike,
    make_accumulator,
    make_lock,
)
from groupkit.runtime.batches import Batch, RecordFuture, RecordMetadata

needs_native = pytest.mark.skipif(not native.available, reason="the C extension is not built")
KINDS = ["python", pytest.param("c", marks=needs_native)]
BATCH_SIZE = 600
BUFFER = 5000


class Twin:
    """One accumulator with the producer state it shares (as Producer builds them)."""

    def __init__(self, kind: str, batch_size: int = BATCH_SIZE, buffer: int = BUFFER,
                 lock: Any = None) -> None:
        # As Producer: the C accumulator with the extension's Lock, the Python one otherwise.
        if lock is None:
            lock = threading.Lock() if kind == "python" else _native_lock()
        self.lock = lock
        self.partitions: dict[str, tuple[int, list[int]]] = {}
        self.sticky: dict[str, int] = {}
        self.batches: list[Batch] = []
        self.acc: AccumulatorLike
        if kind == "c":
            assert native.module is not None
            self.acc = native.module.Accumulator(self.lock, self.partitions, self.sticky, Batch,
                                                 RecordFuture, batch_size, buffer)
        else:
            self.acc = Accumulator(self.lock, self.partitions, self.sticky, batch_size, buffer)

    def open_batch(self, topic: str, partition: int) -> Batch:
        batch = Batch(topic, partition, 0.0, 10.0)
        self.acc.set_open((topic, partition), batch)
        self.batches.append(batch)
        return batch

    def open(self, topic: str, partition: int) -> Batch:
        batch = self.acc.get_open((topic, partition))
        assert batch is not None
        return batch

    def state(self) -> tuple[Any, ...]:
        return (self.acc.buffered, dict(self.sticky),
                sorted((tp, self.batches.index(b)) for tp, b in self.acc.open_batches()),
                [(b.topic, b.partition, b.size, b.records) for b in self.batches])


def _native_lock() -> Any:
    assert native.module is not None
    return native.module.Lock()


def _ready(kind: str, batch_size: int = BATCH_SIZE, buffer: int = BUFFER,
           lock: Any = None) -> Twin:
    twin = Twin(kind, batch_size, buffer, lock)
    twin.partitions["t"] = (3, [0, 1, 2])
    twin.sticky["t"] = 1
    for p in range(3):
        twin.open_batch("t", p)
    return twin


@pytest.mark.parametrize("kind", KINDS)
def test_a_common_record_lands_in_its_open_batch(kind: str) -> None:
    twin = _ready(kind)
    before = time.time_ns() // 1_000_000
    future = twin.acc.append("t", b"value", None, None, None, None)
    after = time.time_ns() // 1_000_000
    batch = twin.open("t", 1)
    assert isinstance(future, RecordFuture) and not future.done()
    ((key, value, headers, ts),) = batch.records
    assert (key, value, headers) == (None, b"value", None) and before <= ts <= after
    assert batch.size == twin.acc.buffered == 16 + 5
    home = twin.open("t", partition_for_key(b"key", 3))
    held = home.size
    keyed = twin.acc.append("t", b"v", b"key", None, [("h", b"x"), ("n", None)], 7)
    assert home.records[-1] == (b"key", b"v", [("h", b"x"), ("n", None)], 7)
    assert home.size - held == 16 + 1 + 3 + (1 + 1 + 4) + (1 + 4)
    chosen = twin.acc.append("t", None, None, 2, [], 8)
    assert twin.open("t", 2).records[-1] == (None, None, [], 8)
    assert twin.acc.buffered == sum(b.size for b in twin.batches)
    for b in twin.batches:
        b.complete((100, -1))
    assert future.result(0) == RecordMetadata("t", 1, 100, ts)
    assert keyed is not None and keyed.result(0).timestamp == 7
    assert chosen is not None and chosen.result(0) == RecordMetadata("t", 2, 100 + 0, 8)


DECLINED = [
    ("unknown topic", lambda t: t.acc.append("other", b"v", None, None, None, None)),
    ("str value", lambda t: t.acc.append("t", "v", None, None, None, None)),
    ("bytearray value", lambda t: t.acc.append("t", bytearray(b"v"), None, None, None, None)),
    ("int key", lambda t: t.acc.append("t", b"v", 5, None, None, None)),
    ("str topic subclass", lambda t: t.acc.append(type("S", (str,), {})("t"), b"v", None,
                                                  None, None, None)),
    ("partition out of range", lambda t: t.acc.append("t", b"v", None, 3, None, None)),
    ("negative partition", lambda t: t.acc.append("t", b"v", None, -1, None, None)),
    ("bool partition", lambda t: t.acc.append("t", b"v", None, True, None, None)),
    ("headers tuple", lambda t: t.acc.append("t", b"v", None, None, (("h", b"x"),), None)),
    ("header of str", lambda t: t.acc.append("t", b"v", None, None, [("h", "x")], None)),
    ("header triple", lambda t: t.acc.append("t", b"v", None, None, [("h", b"x", 1)], None)),
    ("header bytes name", lambda t: t.acc.append("t", b"v", None, None, [(b"h", b"x")], None)),
    ("float timestamp", lambda t: t.acc.append("t", b"v", None, None, None, 1.5)),
    ("bool timestamp", lambda t: t.acc.append("t", b"v", None, None, None, True)),
    ("huge timestamp", lambda t: t.acc.append("t", b"v", None, None, None, 2**63)),
    ("record filling the batch", lambda t: t.acc.append("t", b"v" * (BATCH_SIZE - 16), None,
                                                       None, None, None)),
    ("full buffer", lambda t: t.acc.append("t", b"v" * (BUFFER - 10), None, None, None, None)),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", [c[1] for c in DECLINED], ids=[c[0] for c in DECLINED])
def test_records_for_the_general_path_are_declined_untouched(kind: str, case: Any) -> None:
    twin = _ready(kind)
    before = twin.state()
    assert case(twin) is None
    assert twin.state() == before


@pytest.mark.parametrize("kind", KINDS)
def test_declined_without_a_batch_a_sticky_partition_or_when_closing_or_refusing(kind: str) -> None:
    twin = _ready(kind)
    del twin.sticky["t"]
    assert twin.acc.append("t", b"v", None, None, None, None) is None
    twin.sticky["t"] = 1
    assert twin.acc.seal_open(("t", 1), twin.open("t", 1))
    assert twin.acc.append("t", b"v", None, None, None, None) is None
    twin.open_batch("t", 1)
    twin.acc.closing = True
    assert twin.acc.append("t", b"v", None, None, None, None) is None
    twin.acc.closing = False
    twin.acc.refusing = True
    assert twin.acc.append("t", b"v", None, None, None, None) is None
    assert twin.acc.append("t", b"v", None, 1, None, None) is None
    twin.acc.refusing = False
    assert twin.acc.append("t", b"v", None, None, None, None) is not None
    assert twin.batches[-1].size == twin.acc.buffered == 17


@pytest.mark.parametrize("kind", KINDS)
def test_it_waits_for_a_threading_lock(kind: str) -> None:
    twin = _ready(kind, lock=threading.Lock())
    appended: list[object] = []
    with twin.lock:
        worker = threading.Thread(
            target=lambda: appended.append(twin.acc.append("t", b"v", None, 0, None, 1)))
        worker.start()
        worker.join(0.2)
        assert worker.is_alive() and not twin.open("t", 0).records
    worker.join(10)
    assert isinstance(appended[0], RecordFuture) and len(twin.open("t", 0).records) == 1


VALUES = st.one_of(st.none(), st.binary(max_size=40))
HEADERS = st.one_of(st.none(), st.lists(st.tuples(st.sampled_from(["a", "bé"]), VALUES),
                                        max_size=2))
RECORDS = st.tuples(st.just("append"), st.sampled_from(["t", "u", "v"]), VALUES, VALUES,
                    st.one_of(st.none(), st.integers(-1, 4)), HEADERS,
                    st.one_of(st.integers(0, 2**40), st.integers(-2**63, 2**63 - 1)))
CHANGES = st.one_of(
    st.tuples(st.just("open"), st.sampled_from(["t", "u"]), st.integers(0, 3)),
    st.tuples(st.just("seal"), st.sampled_from(["t", "u"]), st.integers(0, 3)),
    st.tuples(st.just("sticky"), st.sampled_from(["t", "u"]), st.integers(0, 3)),
    st.tuples(st.just("unstick"), st.sampled_from(["t", "u"])),
    st.tuples(st.just("learn"), st.sampled_from(["t", "u"]), st.integers(1, 4)),
    st.tuples(st.just("release"), st.integers(0, 3000)),
    st.tuples(st.just("closing"), st.booleans()),
    st.tuples(st.just("refusing"), st.booleans()),
    st.tuples(st.just("clear")),
)


def _run(twin: Twin, ops: list[tuple[Any, ...]]) -> list[Any]:
    out: list[Any] = []
    for op in ops:
        if op[0] == "append":
            future = twin.acc.append(*op[1:])
            out.append(None if future is None else
                       (twin.batches.index(future._record_batch), future._record_index))
        elif op[0] == "open":
            twin.open_batch(op[1], op[2])
        elif op[0] == "seal":
            batch = twin.acc.get_open((op[1], op[2]))
            assert twin.acc.seal_open((op[1], op[2]), Batch("x", 0, 0.0, 0.0)) is False
            assert twin.acc.seal_open((op[1], op[2]), batch) is (batch is not None)
        elif op[0] == "clear":
            twin.acc.clear_open()
        elif op[0] == "sticky":
            twin.sticky[op[1]] = op[2]
        elif op[0] == "unstick":
            twin.sticky.pop(op[1], None)
        elif op[0] == "learn":
            twin.partitions[op[1]] = (op[2], list(range(op[2])))
        elif op[0] == "release":
            twin.acc.buffered = max(0, twin.acc.buffered - op[1])
        elif op[0] == "closing":
            twin.acc.closing = op[1]
        elif op[0] == "refusing":
            twin.acc.refusing = op[1]
    return out


@needs_native
@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(RECORDS, RECORDS, CHANGES), max_size=60))
def test_c_and_python_accumulators_agree(ops: list[tuple[Any, ...]]) -> None:
    python, c = Twin("python"), Twin("c")
    assert _run(python, ops) == _run(c, ops)
    assert python.state() == c.state()


@needs_native
@given(st.binary(max_size=64))
def test_murmur2_in_c_matches_python(data: bytes) -> None:
    assert native.module is not None
    assert native.module.murmur2(data) == murmur2(data)


@needs_native
def test_the_c_accumulator_leaks_no_references() -> None:
    twin = _ready("c", 10**9, 10**9)
    value, key, headers = b"v" * 10, b"k", [("h", b"x")]
    gc.collect()
    counts = [sys.getrefcount(o) for o in (value, key, headers, Batch, RecordFuture)]
    for i in range(2000):
        future = twin.acc.append("t", value, key if i % 2 else None, None,
                                 headers if i % 3 else None, i if i % 5 else None)
        assert future is not None
        twin.acc.append("t", value, None, 7, None, None)  # declined
        twin.acc.append("t", value, None, None, None, 2.5)  # declined
    for batch in twin.batches:
        batch.records.clear()
    del future
    gc.collect()
    assert [sys.getrefcount(o) for o in (value, key, headers, Batch, RecordFuture)] == counts


@needs_native
def test_the_c_accumulator_refuses_unfit_types() -> None:
    assert native.module is not None
    lock, d = threading.Lock(), dict

    class Plain:
        pass

    class Dicty:
        records: list[Any] = []
        size = 0

    with pytest.raises(TypeError, match="has no slot records"):
        native.module.Accumulator(lock, d(), d(), Plain, RecordFuture, 10, 10)
    with pytest.raises(TypeError, match="Dicty.records is not a slot"):
        native.module.Accumulator(lock, d(), d(), Dicty, RecordFuture, 10, 10)
    with pytest.raises(TypeError, match="has no slot _record_batch"):
        native.module.Accumulator(lock, d(), d(), Batch, Batch, 10, 10)
    with pytest.raises(TypeError):
        native.module.Accumulator(lock, [], d(), Batch, RecordFuture, 10, 10)
    unready = native.module.Accumulator.__new__(native.module.Accumulator)
    assert unready.append("t", b"v", None, None, None, None) is None


@needs_native
def test_the_c_send_takes_send_arguments_and_hands_declined_records_to_the_fallback() -> None:
    assert native.module is not None
    twin = _ready("c")
    handed: list[tuple[Any, ...]] = []

    def fallback(*args: Any) -> str:
        handed.append(args)
        return "fallback"

    acc = native.module.Accumulator(twin.lock, twin.partitions, twin.sticky, Batch,
                                    RecordFuture, BATCH_SIZE, BUFFER, fallback)
    for tp, batch in twin.acc.open_batches():
        acc.set_open(tp, batch)
    assert isinstance(acc.send("t", b"v"), RecordFuture)
    assert isinstance(acc.send(value=b"v", topic="t", timestamp_ms=5, key=b"k"), RecordFuture)
    assert isinstance(acc.send("t", b"v", None, 2, [("h", None)], 9), RecordFuture)
    assert twin.open("t", 2).records[-1] == (None, b"v", [("h", None)], 9)
    assert acc.send("t", "text", partition=1) == "fallback"
    assert acc.send("new", None, headers=[]) == "fallback"
    assert handed == [("t", "text", None, 1, None, None), ("new", None, None, None, [], None)]
    for call, message in [
            (lambda: acc.send("t"), "missing required argument 'value'"),
            (lambda: acc.send(value=b"v"), "missing required argument 'topic'"),
            (lambda: acc.send("t", b"v", keys=b"k"), "unexpected keyword argument 'keys'"),
            (lambda: acc.send("t", b"v", None, topic="t"), "multiple values for argument 'topic'"),
            (lambda: acc.send("t", b"v", None, None, None, None, None), "at most 6 arguments")]:
        with pytest.raises(TypeError, match=message):
            call()
    bare = native.module.Accumulator(twin.lock, {}, {}, Batch, RecordFuture, 10, 10)
    with pytest.raises(TypeError, match="no fallback"):
        bare.send("t", b"v")
    with pytest.raises(TypeError, match="fallback must be callable"):
        native.module.Accumulator(twin.lock, {}, {}, Batch, RecordFuture, 10, 10, 5)


def test_make_accumulator_takes_the_c_one_when_built(monkeypatch: pytest.MonkeyPatch) -> None:
    args = (threading.Lock(), {}, {}, 100, 100, print)
    built = make_accumulator(*args)
    assert isinstance(built, Accumulator) is (not native.available)
    assert (type(make_lock()) is type(threading.Lock())) is (not native.available)
    monkeypatch.setattr(accumulator, "NativeAccumulator", None)
    assert isinstance(make_accumulator(*args), Accumulator)
    assert type(make_lock()) is type(threading.Lock())


@needs_native
def test_with_its_lock_held_elsewhere_the_c_accumulator_declines() -> None:
    twin = _ready("c")
    got: list[object] = []
    with twin.lock:
        worker = threading.Thread(
            target=lambda: got.append(twin.acc.append("t", b"v", None, 0, None, 1)))
        worker.start()
        worker.join(10)
    assert got == [None] and not twin.open("t", 0).records and not twin.lock.locked()
    assert twin.acc.append("t", b"v", None, 0, None, 1) is not None


class Interrupted(Exception):
    pass


@needs_native
class TestLock:
    """The extension's Lock behaves as threading.Lock, Condition included."""

    def test_acquire_release_and_locked(self) -> None:
        lock = _native_lock()
        assert not lock.locked() and lock.acquire() is True and lock.locked()
        assert lock.acquire(False) is False and lock.acquire(blocking=False) is False
        started = time.monotonic()
        assert lock.acquire(timeout=0.05) is False
        assert time.monotonic() - started >= 0.04
        lock.release()
        assert not lock.locked()
        with pytest.raises(RuntimeError, match="release unlocked lock"):
            lock.release()
        with lock:
            assert lock.locked()
        assert not lock.locked() and "unlocked" in repr(lock)

    def test_arguments_are_checked_as_threading_lock_checks_them(self) -> None:
        lock = _native_lock()
        for call, error in [(lambda: lock.acquire(False, 1), ValueError),
                            (lambda: lock.acquire(timeout=-2), ValueError),
                            (lambda: lock.acquire(timeout=float("nan")), ValueError),
                            (lambda: lock.acquire(timeout="1"), TypeError),
                            (lambda: lock.acquire(wait=True), TypeError),
                            (lambda: lock.acquire(True, 1, 2), TypeError)]:
            with pytest.raises(error):
                call()
            assert not lock.locked()
        with pytest.raises(TypeError):
            type(lock)(1)

    def test_a_blocked_acquire_wakes_when_another_thread_releases(self) -> None:
        lock = _native_lock()
        lock.acquire()
        took: list[bool] = []
        waiter = threading.Thread(target=lambda: took.append(lock.acquire(timeout=10)))
        waiter.start()
        threading.Timer(0.05, lock.release).start()
        waiter.join(10)
        assert took == [True] and lock.locked()

    def test_conditions_work_on_it(self) -> None:
        lock = _native_lock()
        ready = threading.Condition(lock)
        box: list[int] = []
        with ready:
            assert ready.wait(0.02) is False and lock.locked()

        def put() -> None:
            with ready:
                box.append(1)
                ready.notify()
        with ready:
            threading.Thread(target=put).start()
            assert ready.wait_for(lambda: box, timeout=10)
        assert not lock.locked()

    def test_a_signal_handler_runs_during_a_blocked_acquire(self) -> None:
        signal = pytest.importorskip("signal")
        if not hasattr(signal, "setitimer"):
            pytest.skip("no setitimer here")
        lock = _native_lock()
        lock.acquire()

        def handler(signum: int, frame: object) -> None:
            raise Interrupted

        previous = signal.signal(signal.SIGALRM, handler)
        try:
            signal.setitimer(signal.ITIMER_REAL, 0.05)
            with pytest.raises(Interrupted):
                lock.acquire(timeout=10)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        assert lock.locked()
        lock.release()


@pytest.mark.parametrize("kind", KINDS)
def test_records_of_one_millisecond_share_their_timestamp(kind: str) -> None:
    twin = _ready(kind, 10**9, 10**9)
    for _ in range(50):
        twin.acc.append("t", b"v", None, None, None, None)
    stamps = [row[3] for row in twin.open("t", 1).records]
    assert stamps == sorted(stamps) and stamps[-1] - stamps[0] < 1000
    if kind == "c":
        # Equal stamps are one int (the C writer converts it once); Python makes each anew.
        assert all(a is b for a, b in itertools.pairwise(stamps) if a == b)


@pytest.mark.parametrize("kind", KINDS)
def test_a_sealed_batch_takes_no_more_records(kind: str) -> None:
    """The C accumulator remembers the batch it last appended to; sealing must end that."""
    twin = _ready(kind)
    first = twin.open("t", 1)
    assert twin.acc.append("t", b"a", None, None, None, 1) is not None
    assert twin.acc.seal_open(("t", 1), first) and twin.acc.get_open(("t", 1)) is None
    assert twin.acc.append("t", b"b", None, None, None, 2) is None
    second = twin.open_batch("t", 1)
    assert twin.acc.append("t", b"c", None, None, None, 3) is not None
    twin.acc.set_open(("t", 1), third := Batch("t", 1, 0.0, 10.0))
    assert twin.acc.append("t", b"d", None, None, None, 4) is not None
    twin.acc.clear_open()
    assert twin.acc.append("t", b"e", None, None, None, 5) is None
    assert [[r[1] for r in b.records] for b in (first, second, third)] == [[b"a"], [b"c"], [b"d"]]
    assert twin.acc.open_batches() == []
