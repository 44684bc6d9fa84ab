"""An idle fetcher's long poll standing on its connection (``connection.Standing``), against a
fake one-node cluster whose Fetch answers wait for the test: once an unchanged answer to an
unchanged Fetch is known, the connection sends the Fetch again by itself; every change to
what the fetcher would send (a seek, a pause, a new assignment, a close, stale metadata) ends
that, so the fetcher thread sends what it now wants, and with hooks every round trip is
still told."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from assignors import TopicPartition
from groupkit.config import ConsumerConfig
from groupkit.errors import ApiKey
from groupkit.hooks import Event, FetchCompleted, Hook
from groupkit.protocol.headers import decode_request_frame
from groupkit.protocol.messages.fetch import (
    FetchRequest,
    FetchResponse,
    FetchResponsePartition,
    FetchResponseTopic,
)
from groupkit.protocol.records import encode_batch
from groupkit.runtime.cluster import FETCH, Cluster
from groupkit.runtime.fetcher import Fetcher
from tests.runtime.test_fetcher import EarliestIsThree
from tests.support.fake_broker import FakeCluster
from tests.support.waits import wait_for

TP = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


class GatedFetches:
    """Answers each Fetch once the test lets it go (``release``): with the records queued
    for a partition (``records``), else with nothing past the offset asked."""

    def __init__(self) -> None:
        self.gate = threading.Semaphore(0)
        self.cond = threading.Condition()
        self.fetches: list[FetchRequest] = []
        self.records: dict[int, bytes] = {}
        self.broker = FakeCluster(self._answer, {"t": 2})

    def _answer(self, header: Any, frame: bytes) -> bytes:
        assert header.api_key == ApiKey.FETCH
        _, request = decode_request_frame(frame)
        with self.cond:
            self.fetches.append(request)
            self.cond.notify_all()
        self.gate.acquire(timeout=30)
        return FetchResponse(responses=[FetchResponseTopic(
            topic=t.topic, topic_id=t.topic_id, partitions=[FetchResponsePartition(
                partition_index=p.partition, error_code=0, high_watermark=p.fetch_offset,
                records=self.records.pop(p.partition, b""))
                for p in t.partitions])
            for t in request.topics]).encode(header.api_version)

    def release(self, n: int = 1) -> None:
        for _ in range(n):
            self.gate.release()

    def wait_fetches(self, n: int) -> FetchRequest:
        """The ``n``-th Fetch, once it came."""
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.fetches) >= n, 10), \
                f"{len(self.fetches)} Fetches came, not {n}"
            return self.fetches[n - 1]

    def metadata_requests(self) -> int:
        return sum(1 for h in self.broker.received if h.api_key == ApiKey.METADATA)


class Setup:
    def __init__(self, hooks: list[Hook]) -> None:
        # Partitions assigned later start where the log does: offset 3.
        self.gated = GatedFetches()
        self.woken = threading.Event()
        config = ConsumerConfig(bootstrap_servers=self.gated.broker.bootstrap_servers)
        self.cluster = Cluster(config, hooks=hooks)
        self.fetcher = Fetcher(self.cluster, config, EarliestIsThree(),  # type: ignore[arg-type]
                               hooks, wakeup=self.woken.set)
        self.fetcher.assign([TP])
        self.fetcher.seek(TP, 0)
        self.fetcher.start()

    def in_flight(self) -> int:
        return self.cluster.connection(0, FETCH).in_flight()

    def standing(self) -> Any:
        """Answer the Fetches until the connection stands the idle one, and once more on its
        own: the first answer is handled by the fetcher thread, the second (the first to a
        repeated request) too, the third is known to change nothing."""
        gated = self.gated
        for n in range(1, 10):
            gated.wait_fetches(n)
            if 0 in self.fetcher._standing:
                break
            gated.release()
        standing = self.fetcher._standing[0]
        count = len(gated.fetches)
        gated.release()
        assert fetched(gated.wait_fetches(count + 1)) == {0: 0}
        # Sent again by the connection: no new repeat was asked for.
        assert self.fetcher._standing.get(0) is standing and standing.live
        return standing

    def close(self) -> None:
        self.fetcher.close(5)
        self.cluster.close()
        self.gated.release(50)
        self.gated.broker.close()


@pytest.fixture
def setup() -> Iterator[Setup]:
    made = Setup([])
    try:
        yield made
    finally:
        made.close()


def fetched(request: FetchRequest) -> dict[int, int]:
    return {p.partition: p.fetch_offset for t in request.topics for p in t.partitions}


def test_records_end_a_standing_fetch_and_reach_the_application(setup: Setup) -> None:
    standing = setup.standing()
    count = len(setup.gated.fetches)
    setup.gated.records[0] = encode_batch([(None, b"new")], base_offset=0)
    setup.gated.release()
    assert setup.woken.wait(10)
    assert [r.value for r in setup.fetcher.take(10)] == [b"new"]
    assert fetched(setup.gated.wait_fetches(count + 1)) == {0: 1}
    assert setup.fetcher._standing.get(0) is not standing


def test_a_seek_ends_a_standing_fetch(setup: Setup) -> None:
    setup.standing()
    count = len(setup.gated.fetches)
    setup.fetcher.seek(TP, 5)
    setup.gated.release()  # the Fetch in flight, from offset 0: answered, then dropped
    assert fetched(setup.gated.wait_fetches(count + 1)) == {0: 5}


def test_a_pause_ends_a_standing_fetch(setup: Setup) -> None:
    setup.standing()
    count = len(setup.gated.fetches)
    setup.fetcher.pause([TP])
    setup.gated.release()
    # The Fetch in flight is answered and nothing is sent after it.
    wait_for(lambda: setup.in_flight() == 0, 10, "the last Fetch to be answered")
    assert len(setup.gated.fetches) == count
    setup.fetcher.resume([TP])
    assert fetched(setup.gated.wait_fetches(count + 1)) == {0: 0}


def test_a_new_assignment_ends_a_standing_fetch(setup: Setup) -> None:
    setup.standing()
    count = len(setup.gated.fetches)
    setup.fetcher.assign([TP, TP1])
    # The new partition is asked for (in a Fetch of its own or with the other), and so is
    # the old one again once its answer in flight is handled.
    asked: dict[int, int] = {}
    for _ in range(3):
        setup.gated.release()
        count += 1
        asked.update(fetched(setup.gated.wait_fetches(count)))
        if asked == {0: 0, 1: 3}:
            break
    assert asked == {0: 0, 1: 3}


def test_closing_the_fetcher_ends_a_standing_fetch(setup: Setup) -> None:
    setup.standing()
    count = len(setup.gated.fetches)
    setup.fetcher.close(5)
    setup.gated.release()
    wait_for(lambda: setup.in_flight() == 0, 10, "the last Fetch to be answered")
    assert len(setup.gated.fetches) == count


def test_stale_metadata_ends_a_standing_fetch(setup: Setup) -> None:
    setup.standing()
    count = len(setup.gated.fetches)
    asked = setup.gated.metadata_requests()
    setup.cluster.request_refresh()
    setup.gated.release()
    # The fetcher thread refreshes the metadata before it fetches again.
    assert fetched(setup.gated.wait_fetches(count + 1)) == {0: 0}
    assert setup.gated.metadata_requests() > asked


def test_with_hooks_every_round_trip_of_a_standing_fetch_is_told() -> None:
    told: list[Event] = []
    setup = Setup([told.append])
    try:
        standing = setup.standing()
        count = len(setup.gated.fetches)
        setup.gated.release(3)
        setup.gated.wait_fetches(count + 3)
        # Every answered Fetch is told once, whichever thread handled it: all but the one
        # in flight (a round trip is told just after the next Fetch left).
        answered = count + 2
        wait_for(lambda: sum(1 for e in told if isinstance(e, FetchCompleted)) >= answered,
                 10, f"{answered} fetches told")
        fetches = [e for e in told if isinstance(e, FetchCompleted)]
        assert len(fetches) == answered
        assert [(e.node_id, e.partitions, e.records, e.size) for e in fetches[-4:]] == \
            [(0, 1, 0, 0)] * 4
        assert all(e.latency_s >= 0 for e in fetches)
        assert setup.fetcher._standing.get(0) is standing and standing.live
    finally:
        setup.close()
