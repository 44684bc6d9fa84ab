"""Producer batches without a network: the fast encoder and the per-record futures."""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groupkit.errors import IllegalStateError, NotLeaderOrFollowerError
from groupkit.protocol.records import decode_records, encode_batch
from groupkit.runtime.batches import Batch, RecordFuture, RecordMetadata
from groupkit.runtime.record_encoder import encode_records

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]

maybe_bytes = st.none() | st.binary(max_size=300)
headers = st.none() | st.lists(st.tuples(st.text(max_size=8), maybe_bytes), max_size=3)
rows = st.lists(st.tuples(maybe_bytes, maybe_bytes, headers,
                          st.integers(min_value=0, max_value=2**45)), min_size=1, max_size=30)


@given(rows)
def test_fast_encoder_writes_the_same_bytes_as_encode_batch(items) -> None:
    reference = encode_batch([(k, v, h or [], ts) for k, v, h, ts in items],
                             timestamp=items[0][3])
    assert encode_records(items, None) == reference


def test_fast_encoder_handles_long_values_and_many_records() -> None:
    long = b"x" * 10000
    items = [(long if i % 1000 == 1 else None, long if i % 999 == 0 else b"v",
              [("h", long)] if i == 8500 else None, 5 + i * 3) for i in range(9000)]
    reference = encode_batch([(k, v, h or [], ts) for k, v, h, ts in items], timestamp=5)
    assert encode_records(items, None) == reference


@pytest.mark.parametrize("codec", CODECS)
def test_fast_encoder_batches_decode_under_every_codec(codec) -> None:
    items = [(b"key%d" % i, b"value-%d" % i * 5, [("n", b"%d" % i)], 1000 + i)
             for i in range(50)]
    decoded = decode_records(encode_records(items, codec))
    assert [(r.offset, r.key, r.value, r.headers, r.timestamp) for r in decoded] == [
        (i, k, v, h, ts) for i, (k, v, h, ts) in enumerate(items)]


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
