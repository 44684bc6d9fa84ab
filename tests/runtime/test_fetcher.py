"""The fetcher's buffering rules, driven through a scripted connection (no broker).

Tansu 0.6 does not report aborted transactions in Fetch answers (its ``aborted_transactions``
is always empty) and answers a fetch past the log end with no error instead of
OFFSET_OUT_OF_RANGE, so read_committed filtering and the out-of-range reset cannot be shown
against it: they are shown here with answers built as a Kafka broker writes them. The broker tests in tests/test_consumer.py
cover fetching itself.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

import pytest

from assignors import TopicPartition
from groupkit.config import ConsumerConfig
from groupkit.errors import NoOffsetForPartitionError
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
)
from groupkit.runtime.fetcher import Fetcher
from groupkit.runtime.metadata import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo

TP = TopicPartition("t", 0)
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
            topics={"t": TopicInfo("t", {0: PartitionInfo(0, leader=0)})})

    def connection(self, node: int, purpose: str) -> ScriptedConnection:
        return self.conn

    def add_topics(self, topics: Any) -> None:
        pass

    def request_refresh(self) -> None:
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


def answer(records: bytes, aborted: list[tuple[int, int]] = ()) -> FetchResponse:
    return FetchResponse(responses=[FetchResponseTopic(topic="t", partitions=[
        FetchResponsePartition(
            partition_index=0, error_code=0, high_watermark=7, records=records,
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


def start(isolation: str, reset: str = "latest", offsets: Any = None
          ) -> tuple[Fetcher, FakeCluster, threading.Event]:
    cluster = FakeCluster()
    woken = threading.Event()
    config = ConsumerConfig(bootstrap_servers="h:1", isolation_level=isolation,
                            auto_offset_reset=reset)
    fetcher = Fetcher(cluster, config, offsets, wakeup=woken.set)  # type: ignore[arg-type]
    fetcher.assign([TP])
    fetcher.seek(TP, 0)
    fetcher.start()
    return fetcher, cluster, woken


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


def test_pause_holds_records_back_and_a_drained_partition_is_fetched_again() -> None:
    fetcher, cluster, woken = start("read_uncommitted")
    try:
        _, first = cluster.conn.next_request(1)
        first.set_result(answer(transactional_log()))
        assert woken.wait(10)
        assert len(fetcher.take(2)) == 2
        with cluster.conn.cond:
            # Records are still buffered, so no second Fetch goes out yet.
            assert len(cluster.conn.sent) == 1
        fetcher.pause([TP])
        assert fetcher.take(100) == []
        assert fetcher.positions() == {TP: 2}
        fetcher.resume([TP])
        request, _ = cluster.conn.next_request(2)
        assert request.topics[0].partitions[0].fetch_offset == 2
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
