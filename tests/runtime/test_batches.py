"""Producer batches without a network: their encoding and the per-record futures."""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import threading

import pytest

from groupkit.errors import IllegalStateError, NotLeaderOrFollowerError
from groupkit.protocol.records import decode_batches, decode_records
from groupkit.runtime.batches import Batch, RecordFuture, RecordMetadata


def test_a_batch_encodes_its_rows_once_and_keeps_the_bytes_for_retries() -> None:
    batch = Batch("t", 0, created=0.0, deadline=10.0)
    batch.records = [(None, b"v%d" % i, None, 100 + i) for i in range(3)]
    data = batch.encode("gzip")
    assert [(r.offset, r.value, r.timestamp) for r in decode_records(data)] == [
        (0, b"v0", 100), (1, b"v1", 101), (2, b"v2", 102)]
    assert decode_batches(data)[0].compression == "gzip"
    batch.records.append((None, b"late", None, 200))
    assert batch.encode(None) is data


def _batch(n: int) -> tuple[Batch, list[RecordFuture]]:
    batch = Batch("t", 3, created=0.0, deadline=10.0)
    return batch, [batch.append((None, b"v", None, 100 + i), 10) for i in range(n)]


def test_record_futures_read_their_batch_result() -> None:
    batch, futures = _batch(3)
    assert not any(f.done() for f in futures)
    with pytest.raises(cf.TimeoutError):
        futures[0].result(timeout=0.01)
    batch.complete((40, -1))
    assert [f.result(0) for f in futures] == [RecordMetadata("t", 3, 40 + i, 100 + i)
                                             for i in range(3)]
    topic, partition, offset, _ = futures[2].result(0)
    assert (partition, offset) == (3, 42)


def test_record_futures_first_used_after_the_batch_is_done_have_its_outcome() -> None:
    batch, futures = _batch(2)
    batch.complete((5, -1))
    assert futures[1].done() and futures[1].result(0) == RecordMetadata("t", 3, 6, 101)
    batch, futures = _batch(1)
    batch.fail(NotLeaderOrFollowerError())
    assert isinstance(futures[0].exception(0), NotLeaderOrFollowerError)


def test_a_thread_blocked_on_a_record_is_woken_when_its_batch_completes() -> None:
    batch, futures = _batch(2)
    assert not futures[1].done()
    results: list[RecordMetadata] = []
    waiter = threading.Thread(target=lambda: results.append(futures[1].result(timeout=10)))
    waiter.start()
    batch.complete((0, -1))
    waiter.join(10)
    assert results == [RecordMetadata("t", 3, 1, 101)]


def test_records_used_from_many_threads_at_once_all_get_their_own_result() -> None:
    batch, futures = _batch(50)
    start = threading.Barrier(5)
    seen: list[list[int]] = []

    def read() -> None:
        start.wait(10)
        seen.append([f.result(timeout=10).offset for f in futures])
    readers = [threading.Thread(target=read) for _ in range(4)]
    for reader in readers:
        reader.start()
    start.wait(10)
    batch.complete((100, -1))
    for reader in readers:
        reader.join(10)
    assert seen == [list(range(100, 150))] * 4


def test_the_batch_future_is_done_only_after_every_record_future() -> None:
    batch, futures = _batch(3)
    assert not any(f.done() for f in futures)
    seen: list[list[bool]] = []
    batch.future.add_done_callback(lambda _: seen.append([f.done() for f in futures]))
    batch.complete((0, -1))
    assert seen == [[True, True, True]]


def test_log_append_time_and_acks_zero_outcomes() -> None:
    batch, futures = _batch(2)
    batch.complete((7, 555))
    assert futures[1].result(0).timestamp == 555
    batch, futures = _batch(2)
    batch.complete((-1, -1))
    assert futures[1].result(0).offset == -1


def test_record_futures_share_the_batch_error_and_callbacks() -> None:
    batch, futures = _batch(2)
    seen: list[object] = []
    futures[0].add_done_callback(seen.append)
    batch.fail(NotLeaderOrFollowerError())
    assert seen == [futures[0]]
    assert isinstance(futures[1].exception(0), NotLeaderOrFollowerError)
    with pytest.raises(NotLeaderOrFollowerError):
        futures[1].result(0)
    late: list[object] = []
    futures[1].add_done_callback(late.append)
    assert late == [futures[1]]


def test_record_futures_work_with_wait_and_as_completed() -> None:
    batch, futures = _batch(4)
    other = cf.Future()
    done, pending = cf.wait(futures + [other], timeout=0.01)
    assert not done and len(pending) == 5
    threading.Timer(0.05, batch.complete, [(0, -1)]).start()
    done, pending = cf.wait(futures + [other], timeout=10, return_when=cf.FIRST_COMPLETED)
    assert done == set(futures) and pending == {other}
    assert set(cf.as_completed(futures, timeout=1)) == set(futures)


def test_record_futures_cannot_be_cancelled_or_completed_by_callers() -> None:
    _, futures = _batch(1)
    assert futures[0].cancel() is False
    for call in (lambda: futures[0].set_result(None), lambda: futures[0].set_exception(None),
                 futures[0].set_running_or_notify_cancel):
        with pytest.raises(IllegalStateError):
            call()


def test_record_futures_can_be_awaited_through_asyncio() -> None:
    batch, futures = _batch(2)

    async def main() -> RecordMetadata:
        awaitable = asyncio.wrap_future(futures[1])
        asyncio.get_running_loop().call_soon_threadsafe(batch.complete, (9, -1))
        return await asyncio.wait_for(awaitable, 10)
    assert asyncio.run(main()) == RecordMetadata("t", 3, 10, 101)
