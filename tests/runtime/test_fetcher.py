"""The fetcher's buffering rules, driven through a scripted connection (no broker).

Tansu 0.6 does not report aborted transactions in Fetch answers (its ``aborted_transactions``
is always empty) and answers a fetch past the log end with no error instead of
OFFSET_OUT_OF_RANGE, so read_committed filtering and the out-of-range reset cannot be shown
against it: they are shown here with answers built as a Kafka broker writes them. The broker tests in tests/test_consumer.py
cover fetching itself.
"""

from __future__ import annotations

import gc
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pytest

from assignors import TopicPartition
from groupkit.config import ConsumerConfig
from groupkit.errors import (
    CorruptRecordError,
    NoOffsetForPartitionError,
    TopicAuthorizationFailedError,
)
from groupkit.protocol.messages.fetch import (
    FetchRequest,
    FetchResponse,
    FetchResponseAbortedTransaction,
    FetchResponsePartition,
    FetchResponseTopic,
)
from groupkit.protocol.records import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    encode_batch,
    encode_control_batch,
    encode_message_set,
)
from groupkit.runtime.fetched import ConsumerRecord
from groupkit.runtime.fetcher import Fetcher
from groupkit.runtime.metadata import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo

TP = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)
PID = 7
OFFSET_OUT_OF_RANGE = 1


class ScriptedConnection:
    """Holds every Fetch until the test answers it."""

    versions = {1: 12}

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.sent: list[tuple[FetchRequest, Future[Any]]] = []

    def connect(self) -> None:
        pass

    def send(self, request: FetchRequest, version: int, timeout_ms: int | None = None
             ) -> Future[Any]:
        future: Future[Any] = Future()
        with self.cond:
            self.sent.append((request, future))
            self.cond.notify_all()
        return future

    def send_connected(self, request: FetchRequest, version: int, timeout_ms: int,
                       callback: Callable[[Future[Any]], object], *, standing: Any = None
                       ) -> bool:
        # No standing repeat: each answer is the test's to give (a real connection's repeat
        # is tested in test_fetcher_standing.py).
        self.send(request, version, timeout_ms).add_done_callback(callback)
        return True

    def next_request(self, count: int) -> tuple[FetchRequest, Future[Any]]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.sent) >= count, 10), "no Fetch was sent"
            return self.sent[count - 1]


class FakeCluster:
    stale = False

    def __init__(self) -> None:
        self.conn = ScriptedConnection()
        self.metadata = ClusterMetadata(
            brokers={0: BrokerInfo(0, "h", 1)},
            topics={"t": TopicInfo("t", {0: PartitionInfo(0, leader=0),
                                         1: PartitionInfo(1, leader=0)})})

    def connection(self, node: int, purpose: str) -> ScriptedConnection:
        return self.conn

    def add_topics(self, topics: Any) -> None:
        pass

    def request_refresh(self) -> None:
        pass

    def when_stale(self, listener: Callable[[], object]) -> None:
        pass

    def maybe_refresh(self) -> ClusterMetadata:
        return self.metadata

    def observe(self, exc: Any) -> None:
        pass

    def observe_code(self, code: int) -> None:
        pass


def transactional_log() -> bytes:
    """Offsets 0-1 committed, 3-4 aborted (markers at 2 and 5), 6 not transactional."""
    txn = {"producer_id": PID, "producer_epoch": 0, "transactional": True}
    return b"".join([
        encode_batch([(None, b"c1"), (None, b"c2")], base_offset=0, **txn),
        encode_control_batch(CONTROL_COMMIT, producer_id=PID, producer_epoch=0, base_offset=2),
        encode_batch([(None, b"a1"), (None, b"a2")], base_offset=3, **txn),
        encode_control_batch(CONTROL_ABORT, producer_id=PID, producer_epoch=0, base_offset=5),
        encode_batch([(None, b"plain")], base_offset=6),
    ])


def answer(records: bytes, aborted: list[tuple[int, int]] = (), partition: int = 0,
           high_watermark: int = 7) -> FetchResponse:
    return FetchResponse(responses=[FetchResponseTopic(topic="t", partitions=[
        FetchResponsePartition(
            partition_index=partition, error_code=0, high_watermark=high_watermark,
            records=records,
            aborted_transactions=[FetchResponseAbortedTransaction(producer_id=p, first_offset=o)
                                  for p, o in aborted])])])


class EarliestIsThree:
    """The offsets lookup: the log starts at offset 3."""

    def __init__(self) -> None:
        self.asked: list[tuple[list[TopicPartition], str]] = []

    def list_offsets(self, tps: list[TopicPartition], strategy: str,
                     timeout: float) -> dict[TopicPartition, int]:
        self.asked.append((tps, strategy))
        return dict.fromkeys(tps, 3)


def start(isolation: str, reset: str = "latest", offsets: Any = None,
          partitions: tuple[TopicPartition, ...] = (TP,), **settings: Any,
          ) -> tuple[Fetcher, FakeCluster, threading.Event]:
    cluster = FakeCluster()
    woken = threading.Event()
    config = ConsumerConfig(bootstrap_servers="h:1", isolation_level=isolation,
                            auto_offset_reset=reset, **settings)
    fetcher = Fetcher(cluster, config, offsets, wakeup=woken.set)  # type: ignore[arg-type]
    fetcher.assign(partitions)
    for tp in partitions:
        fetcher.seek(tp, 0)
    fetcher.start()
    return fetcher, cluster, woken


def fetched(request: FetchRequest) -> dict[int, int]:
    """The partitions a Fetch asks for, with their fetch offsets."""
    return {p.partition: p.fetch_offset for t in request.topics for p in t.partitions}


@pytest.mark.parametrize(("isolation", "expected"), [
    ("read_committed", [b"c1", b"c2", b"plain"]),
    ("read_uncommitted", [b"c1", b"c2", b"a1", b"a2", b"plain"]),
])
def test_read_committed_skips_aborted_records_and_markers(isolation: str,
                                                          expected: list[bytes]) -> None:
    fetcher, cluster, woken = start(isolation)
    try:
        request, future = cluster.conn.next_request(1)
        assert request.isolation_level == (1 if isolation == "read_committed" else 0)
        future.set_result(answer(transactional_log(), [(PID, 3)]))
        assert woken.wait(10)
        records = fetcher.take(100)
        assert [r.value for r in records] == expected
        assert {(r.topic, r.partition) for r in records} == {TP}
        assert fetcher.positions() == {TP: 7}
    finally:
        fetcher.close(5)


def test_a_seek_drops_the_answer_of_a_fetch_sent_before_it() -> None:
    fetcher, cluster, woken = start("read_uncommitted")
    try:
        request, stale = cluster.conn.next_request(1)
        assert request.topics[0].partitions[0].fetch_offset == 0
        fetcher.seek(TP, 6)
        stale.set_result(answer(transactional_log()))
        request, fresh = cluster.conn.next_request(2)
        assert request.topics[0].partitions[0].fetch_offset == 6
        assert fetcher.take(100) == []
        fresh.set_result(answer(encode_batch([(None, b"plain")], base_offset=6)))
        assert woken.wait(10)
        assert [r.offset for r in fetcher.take(100)] == [6]
    finally:
        fetcher.close(5)


def test_a_partition_is_fetched_again_only_once_its_buffer_is_below_the_mark() -> None:
    log = transactional_log()
    # The mark (max_partition_fetch_bytes) is half the answer; each of its five data records
    # stands for a fifth of it.
    fetcher, cluster, woken = start("read_uncommitted", max_partition_fetch_bytes=len(log) // 2)
    try:
        _, first = cluster.conn.next_request(1)
        first.set_result(answer(log))
        assert woken.wait(10)
        assert len(fetcher.take(1)) == 1
        with cluster.conn.cond:
            # Four fifths of the answer are still buffered, above the mark: no Fetch yet.
            assert len(cluster.conn.sent) == 1
        assert len(fetcher.take(2)) == 2
        request, _ = cluster.conn.next_request(2)
        assert fetched(request) == {0: 7}
        assert [r.value for r in fetcher.take(100)] == [b"a2", b"plain"]
    finally:
        fetcher.close(5)


def test_the_next_fetch_leaves_while_records_are_still_buffered() -> None:
    fetcher, cluster, woken = start("read_uncommitted")
    try:
        _, first = cluster.conn.next_request(1)
        first.set_result(answer(encode_batch([(None, b"0"), (None, b"1")], base_offset=0),
                                high_watermark=4))
        assert woken.wait(10)
        request, second = cluster.conn.next_request(2)
        assert fetched(request) == {0: 2}
        woken.clear()
        second.set_result(answer(encode_batch([(None, b"2"), (None, b"3")], base_offset=2),
                                 high_watermark=4))
        assert woken.wait(10)
        assert [(r.topic, r.partition, r.offset) for r in fetcher.take(100)] == [
            ("t", 0, 0), ("t", 0, 1), ("t", 0, 2), ("t", 0, 3)]
        assert fetcher.positions() == {TP: 4}
    finally:
        fetcher.close(5)


def test_an_answer_without_data_records_moves_the_position_once_reached() -> None:
    fetcher, cluster, woken = start("read_uncommitted")
    try:
        _, first = cluster.conn.next_request(1)
        first.set_result(answer(encode_batch([(None, b"0"), (None, b"1")], base_offset=0),
                                high_watermark=3))
        assert woken.wait(10)
        _, second = cluster.conn.next_request(2)
        second.set_result(answer(encode_control_batch(
            CONTROL_COMMIT, producer_id=PID, producer_epoch=0, base_offset=2), high_watermark=3))
        request, _ = cluster.conn.next_request(3)
        assert fetched(request) == {0: 3}
        assert fetcher.positions() == {TP: 0}
        assert [r.offset for r in fetcher.take(100)] == [0, 1]
        assert fetcher.take(100) == []
        assert fetcher.positions() == {TP: 3}
    finally:
        fetcher.close(5)


def test_caught_up_partitions_wait_for_a_draining_one_instead_of_a_long_poll() -> None:
    batch = encode_batch([(None, b"x" * 100) for _ in range(10)], base_offset=0)
    fetcher, cluster, woken = start("read_uncommitted", partitions=(TP, TP1),
                                    max_partition_fetch_bytes=len(batch) // 2)
    try:
        request, first = cluster.conn.next_request(1)
        assert fetched(request) == {0: 0, 1: 0}
        both = answer(batch, high_watermark=10)
        both.responses[0].partitions.append(answer(b"", partition=1, high_watermark=0)
                                            .responses[0].partitions[0])
        first.set_result(both)
        assert woken.wait(10)
        assert len(fetcher.take(3)) == 3
        with cluster.conn.cond:
            # Partition 1 is caught up and partition 0 is above the mark: a Fetch for 1 alone
            # would sit at the broker for fetch_max_wait_ms, so none goes out.
            assert len(cluster.conn.sent) == 1
        assert len(fetcher.take(3)) == 3
        request, _ = cluster.conn.next_request(2)
        assert fetched(request) == {0: 10, 1: 0}
    finally:
        fetcher.close(5)


def test_pausing_the_draining_partition_lets_the_caught_up_one_be_fetched() -> None:
    batch = encode_batch([(None, b"x" * 100) for _ in range(10)], base_offset=0)
    fetcher, cluster, woken = start("read_uncommitted", partitions=(TP, TP1),
                                    max_partition_fetch_bytes=len(batch) // 2)
    try:
        _, first = cluster.conn.next_request(1)
        both = answer(batch, high_watermark=10)
        both.responses[0].partitions.append(answer(b"", partition=1, high_watermark=0)
                                            .responses[0].partitions[0])
        first.set_result(both)
        assert woken.wait(10)
        fetcher.pause([TP])
        request, _ = cluster.conn.next_request(2)
        assert fetched(request) == {1: 0}
    finally:
        fetcher.close(5)


def test_answers_are_drained_one_at_a_time_in_the_order_they_arrived() -> None:
    # The Java client's FetchCollector drains its next-in-line CompletedFetch before the next
    # one: a poll takes from one partition's answer until it is used up, not a share of each.
    fetcher, cluster, woken = start("read_uncommitted", partitions=(TP, TP1))
    try:
        request, first = cluster.conn.next_request(1)
        assert fetched(request) == {0: 0, 1: 0}
        both = answer(encode_batch([(None, b"one")] * 10, base_offset=0), partition=1,
                      high_watermark=10)
        both.responses[0].partitions.append(answer(
            encode_batch([(None, b"zero")] * 10, base_offset=0), high_watermark=10)
            .responses[0].partitions[0])
        first.set_result(both)
        assert woken.wait(10)
        assert [(r.partition, r.offset) for r in fetcher.take(4)] == [(1, i) for i in range(4)]
        assert [(r.partition, r.offset) for r in fetcher.take(100)] == [
            (1, i) for i in range(4, 10)] + [(0, i) for i in range(10)]
    finally:
        fetcher.close(5)


def test_legacy_message_sets_decode_to_consumer_records() -> None:
    fetcher, cluster, woken = start("read_uncommitted")
    try:
        _, first = cluster.conn.next_request(1)
        first.set_result(answer(encode_message_set([(b"k", b"v0"), (None, b"v1")], magic=1)
                                + encode_message_set([(None, b"v2")], magic=0,
                                                     compression="gzip", base_offset=2)))
        assert woken.wait(10)
        records = fetcher.take(100)
        assert all(isinstance(r, ConsumerRecord) for r in records)
        assert [(r.topic, r.partition, r.offset, r.key, r.value) for r in records] == [
            ("t", 0, 0, b"k", b"v0"), ("t", 0, 1, None, b"v1"), ("t", 0, 2, None, b"v2")]
    finally:
        fetcher.close(5)


def test_pause_holds_records_back_and_resume_fetches_from_the_position() -> None:
    fetcher, cluster, woken = start("read_uncommitted")
    try:
        _, first = cluster.conn.next_request(1)
        first.set_result(answer(transactional_log()))
        assert woken.wait(10)
        request, ahead = cluster.conn.next_request(2)
        assert fetched(request) == {0: 7}
        assert len(fetcher.take(2)) == 2
        fetcher.pause([TP])
        assert fetcher.take(100) == []
        assert fetcher.positions() == {TP: 2}
        fetcher.resume([TP])
        # The Fetch sent ahead while records were buffered is stale now; its answer is dropped.
        ahead.set_result(answer(encode_batch([(None, b"late")], base_offset=7)))
        request, _ = cluster.conn.next_request(3)
        assert fetched(request) == {0: 2}
        assert fetcher.take(100) == []
    finally:
        fetcher.close(5)


def out_of_range() -> FetchResponse:
    return FetchResponse(responses=[FetchResponseTopic(topic="t", partitions=[
        FetchResponsePartition(partition_index=0, error_code=OFFSET_OUT_OF_RANGE,
                               high_watermark=7, records=None)])])


def test_out_of_range_resets_by_auto_offset_reset() -> None:
    lookup = EarliestIsThree()
    fetcher, cluster, _ = start("read_uncommitted", reset="earliest", offsets=lookup)
    try:
        _, future = cluster.conn.next_request(1)
        future.set_result(out_of_range())
        request, _ = cluster.conn.next_request(2)
        assert request.topics[0].partitions[0].fetch_offset == 3
        assert lookup.asked == [([TP], "earliest")]
    finally:
        fetcher.close(5)


def test_out_of_range_with_reset_none_raises_a_clear_error() -> None:
    fetcher, cluster, woken = start("read_uncommitted", reset="none")
    try:
        _, future = cluster.conn.next_request(1)
        future.set_result(out_of_range())
        assert woken.wait(10)
        with pytest.raises(NoOffsetForPartitionError, match="seek"):
            fetcher.take(100)
    finally:
        fetcher.close(5)


class NoOffset:
    """The offsets lookup: no committed offset and auto_offset_reset 'none'."""

    def list_offsets(self, tps: list[TopicPartition], strategy: str,
                     timeout: float) -> dict[TopicPartition, int]:
        raise NoOffsetForPartitionError("no committed offset and auto_offset_reset is 'none'")


def _out_of_range_with_reset_none(fetcher: Fetcher, cluster: FakeCluster) -> None:
    cluster.conn.next_request(1)[1].set_result(out_of_range())


def _unauthorized(fetcher: Fetcher, cluster: FakeCluster) -> None:
    cluster.conn.next_request(1)[1].set_result(FetchResponse(responses=[FetchResponseTopic(
        topic="t", partitions=[FetchResponsePartition(
            partition_index=0, error_code=29, high_watermark=-1, records=None)])]))


def _no_offset_found(fetcher: Fetcher, cluster: FakeCluster) -> None:
    fetcher.seek(TP, None)


@pytest.mark.parametrize(("cause", "error"), [
    (_out_of_range_with_reset_none, NoOffsetForPartitionError),
    (_unauthorized, TopicAuthorizationFailedError),
    (_no_offset_found, NoOffsetForPartitionError),
])
def test_an_error_owed_after_a_take_found_nothing_is_raised_by_the_next_take(
        cause: Callable[[Fetcher, FakeCluster], None], error: type[Exception]) -> None:
    # An idle consumer's take returns without the lock once one found nothing buffered or
    # owed: each way an error comes to be owed must end that.
    fetcher, cluster, woken = start("read_uncommitted", reset="none", offsets=NoOffset())
    try:
        assert fetcher.take(100) == []
        cause(fetcher, cluster)
        assert woken.wait(10)
        with pytest.raises(error):
            fetcher.take(100)
    finally:
        fetcher.close(5)


def test_out_of_range_ahead_of_buffered_records_resets_only_once_they_are_taken() -> None:
    lookup = EarliestIsThree()
    fetcher, cluster, woken = start("read_uncommitted", reset="earliest", offsets=lookup)
    try:
        _, first = cluster.conn.next_request(1)
        first.set_result(answer(encode_batch([(None, b"0"), (None, b"1")], base_offset=0),
                                high_watermark=2))
        _, ahead = cluster.conn.next_request(2)
        ahead.set_result(out_of_range())
        request, retry = cluster.conn.next_request(3)
        # The buffered records still stand, so the fetcher asks again instead of resetting.
        assert fetched(request) == {0: 2}
        assert lookup.asked == []
        assert [r.offset for r in fetcher.take(100)] == [0, 1]
        retry.set_result(out_of_range())
        request, _ = cluster.conn.next_request(4)
        assert fetched(request) == {0: 3}
        assert lookup.asked == [([TP], "earliest")]
    finally:
        fetcher.close(5)


def test_an_error_in_an_answer_fetched_ahead_comes_after_the_records_before_it() -> None:
    fetcher, cluster, woken = start("read_uncommitted")
    try:
        _, first = cluster.conn.next_request(1)
        first.set_result(answer(encode_batch([(None, b"0"), (None, b"1")], base_offset=0),
                                high_watermark=4))
        assert woken.wait(10)
        woken.clear()
        _, ahead = cluster.conn.next_request(2)
        corrupt = bytearray(encode_batch([(None, b"2"), (None, b"3")], base_offset=2))
        corrupt[-1] ^= 0xFF
        ahead.set_result(answer(bytes(corrupt), high_watermark=4))
        assert woken.wait(10)
        assert [r.offset for r in fetcher.take(100)] == [0, 1]
        with pytest.raises(CorruptRecordError):
            fetcher.take(100)
    finally:
        fetcher.close(5)


class HeldLookup:
    """An offsets lookup whose first answer (offset 100) is held until released; later lookups
    answer offset 3 at once."""

    def __init__(self) -> None:
        self.calls = 0
        self.entered = threading.Event()
        self.release = threading.Event()

    def list_offsets(self, tps: list[TopicPartition], strategy: str,
                     timeout: float) -> dict[TopicPartition, int]:
        self.calls += 1
        if self.calls == 1:
            self.entered.set()
            assert self.release.wait(10), "the test never released the first lookup"
            return dict.fromkeys(tps, 100)
        return dict.fromkeys(tps, 3)


def test_a_lookup_that_outlived_a_revoke_does_not_position_the_partition_assigned_again() -> None:
    # The first answer predates the revoke (and the commit an application makes on revoke):
    # the partition assigned again is looked up afresh.
    lookup = HeldLookup()
    config = ConsumerConfig(bootstrap_servers="h:1", auto_offset_reset="earliest")
    fetcher = Fetcher(FakeCluster(), config, lookup)  # type: ignore[arg-type]
    fetcher.assign([TP])
    fetcher.start()
    try:
        assert lookup.entered.wait(10)
        fetcher.assign([])
        fetcher.assign([TP])
        lookup.release.set()
        assert fetcher.position(TP, 10) == 3
        assert lookup.calls == 2
    finally:
        fetcher.close(5)


def live_records() -> int:
    """A count that grows by one with each ConsumerRecord alive: every instance holds a
    reference to its class (the decoder leaves them untracked by the garbage collector, so
    gc.get_objects() would not see them)."""
    return sys.getrefcount(ConsumerRecord)


def test_an_answer_is_held_raw_and_decoded_only_as_its_records_are_taken() -> None:
    # 100 batches of 50 records: decoding the answer whole would build 5,000 records.
    log = b"".join(encode_batch([(None, b"%d" % (i * 50 + j)) for j in range(50)],
                                base_offset=i * 50) for i in range(100))
    fetcher, cluster, woken = start("read_uncommitted")
    # Records of earlier tests held in cyclic garbage would be freed by a collection in the
    # middle of the count (seen in CI: the count fell by four): collect them first, and let no
    # collection run until the count is read.
    gc.collect()
    gc.disable()
    try:
        before = live_records()
        _, first = cluster.conn.next_request(1)
        first.set_result(answer(log, high_watermark=5000))
        assert woken.wait(10)
        assert live_records() - before < 5
        taken = fetcher.take(10)
        assert [r.offset for r in taken] == list(range(10))
        # The batch the ten came from (50 records), not a second one.
        assert 50 <= live_records() - before < 100
        gc.enable()
        rest: list[ConsumerRecord] = []
        while len(taken) + len(rest) < 5000:
            piece = fetcher.take(7)
            assert piece, "the buffered answer ran dry early"
            rest.extend(piece)
        assert [r.offset for r in taken + rest] == list(range(5000))
        assert fetcher.positions() == {TP: 5000}
    finally:
        gc.enable()
        fetcher.close(5)


def test_the_next_fetch_asks_past_the_last_complete_batch_before_anything_is_taken() -> None:
    fetcher, cluster, woken = start("read_uncommitted")
    try:
        _, first = cluster.conn.next_request(1)
        whole = encode_batch([(None, b"x")] * 5, base_offset=0)
        cut = encode_batch([(None, b"y")] * 5, base_offset=5)[:-10]
        first.set_result(answer(whole + cut, high_watermark=10))
        request, _ = cluster.conn.next_request(2)
        assert fetched(request) == {0: 5}
        assert [r.offset for r in fetcher.take(100)] == [0, 1, 2, 3, 4]
    finally:
        fetcher.close(5)


def test_read_committed_filtering_holds_across_records_taken_one_at_a_time() -> None:
    fetcher, cluster, woken = start("read_committed")
    try:
        _, future = cluster.conn.next_request(1)
        future.set_result(answer(transactional_log(), [(PID, 3)]))
        assert woken.wait(10)
        values = []
        while piece := fetcher.take(1):
            assert len(piece) == 1
            values.append(piece[0].value)
        assert values == [b"c1", b"c2", b"plain"]
        assert fetcher.positions() == {TP: 7}
    finally:
        fetcher.close(5)


def test_a_corrupt_batch_behind_good_ones_in_one_answer_is_raised_after_them_then_refetched(
        caplog: pytest.LogCaptureFixture) -> None:
    fetcher, cluster, woken = start("read_uncommitted")
    try:
        _, first = cluster.conn.next_request(1)
        corrupt = bytearray(encode_batch([(None, b"2"), (None, b"3")], base_offset=2))
        corrupt[-1] ^= 0xFF
        good = encode_batch([(None, b"0"), (None, b"1")], base_offset=0)
        first.set_result(answer(good + bytes(corrupt), high_watermark=4))
        assert woken.wait(10)
        # The headers say the answer ends at 4, so the next Fetch is already out.
        request, ahead = cluster.conn.next_request(2)
        assert fetched(request) == {0: 4}
        assert [r.offset for r in fetcher.take(100)] == [0, 1]
        with pytest.raises(CorruptRecordError):
            fetcher.take(100)
        assert "offset 2 cannot be decoded" in caplog.text
        assert fetcher.positions() == {TP: 2}
        # The Fetch sent ahead is forgotten; the corrupt batch is asked for again.
        ahead.set_result(answer(b"", high_watermark=4))
        request, again = cluster.conn.next_request(3)
        assert fetched(request) == {0: 2}
        again.set_result(answer(bytes(corrupt), high_watermark=4))
        with pytest.raises(CorruptRecordError):
            wait_for_take(fetcher)
    finally:
        fetcher.close(5)


def wait_for_take(fetcher: Fetcher) -> list[ConsumerRecord]:
    """Take until records (or an error) come, for up to 10 s."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if records := fetcher.take(100):
            return records
        time.sleep(0.01)
    raise AssertionError("no records and no error within 10 s")
