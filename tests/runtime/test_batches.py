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
    batch.records = [(None, b"v", None, 100 + i) for i in range(n)]
    return batch, [RecordFuture(batch, i) for i in range(n)]


def test_record_futures_read_their_batch_result() -> None:
    batch, futures = _batch(3)
    assert not any(f.done() for f in futures)
    with pytest.raises(cf.TimeoutError):
        futures[0].result(timeout=0.01)
    batch.future.set_result((40, -1))
    assert [f.result() for f in futures] == [RecordMetadata("t", 3, 40 + i, 100 + i)
                                             for i in range(3)]
    topic, partition, offset, _ = futures[2].result()
    assert (partition, offset) == (3, 42)


def test_log_append_time_and_acks_zero_outcomes() -> None:
    batch, futures = _batch(2)
    batch.future.set_result((7, 555))
    assert futures[1].result().timestamp == 555
    batch, futures = _batch(2)
    batch.future.set_result((-1, -1))
    assert futures[1].result().offset == -1


def test_record_futures_share_the_batch_error_and_callbacks() -> None:
    batch, futures = _batch(2)
    seen: list[object] = []
    futures[0].add_done_callback(seen.append)
    batch.future.set_exception(NotLeaderOrFollowerError())
    assert seen == [futures[0]]
    assert isinstance(futures[1].exception(), NotLeaderOrFollowerError)
    with pytest.raises(NotLeaderOrFollowerError):
        futures[1].result()
    late: list[object] = []
    futures[1].add_done_callback(late.append)
    assert late == [futures[1]]


def test_record_futures_work_with_wait_and_as_completed() -> None:
    batch, futures = _batch(4)
    other = cf.Future()
    done, pending = cf.wait(futures + [other], timeout=0.01)
    assert not done and len(pending) == 5
    threading.Timer(0.05, batch.future.set_result, [(0, -1)]).start()
    done, pending = cf.wait(futures + [other], timeout=10, return_when=cf.FIRST_COMPLETED)
    assert done == set(futures) and pending == {other}
    assert set(cf.as_completed(futures, timeout=1)) == set(futures)
    assert batch.future._waiters == []


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
        asyncio.get_running_loop().call_soon_threadsafe(batch.future.set_result, (9, -1))
        return await asyncio.wait_for(awaitable, 10)
    assert asyncio.run(main()) == RecordMetadata("t", 3, 10, 101)
