"""ShareWorker on confluent-kafka's mock cluster: what ``process`` does to each record (return:
accept, raise: release, RejectRecord: reject), its metrics, a record that fails every time
stopping at the delivery limit, and ``groupkit run`` with more share workers than partitions."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest

from groupkit import RejectRecord, ShareWorker
from groupkit.metrics import PrometheusMetrics
from groupkit.share_consumer import ShareConsumerRecord
from tests.support.mock_cluster import MockCluster
from tests.support.pool_process import PoolProcess, pools  # noqa: F401
from tests.support.waits import wait_for

pytestmark = pytest.mark.xdist_group("share-mock")


@pytest.fixture(scope="module")
def mock() -> Iterator[MockCluster]:
    with MockCluster(share_auto_offset_reset="earliest", share_heartbeat_interval_ms=300,
                     share_session_timeout_ms=3000, share_max_delivery_attempts=3) as cluster:
        cluster.warm_producer()  # before any member: see tests/support/mock_cluster.py
        yield cluster


class Picky(ShareWorker):
    """Accepts most records; rejects the ones whose value ends in "!"; fails the first time it
    sees one ending in "?" (so it is released and comes back)."""

    fetch_max_wait_ms = 100

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.seen: list[tuple[bytes, int]] = []

    def process(self, record: ShareConsumerRecord) -> None:
        assert record.value is not None
        self.seen.append((record.value, record.delivery_count))
        if record.value.endswith(b"!"):
            raise RejectRecord("malformed")
        if record.value.endswith(b"?") and record.delivery_count == 1:
            raise ValueError("the database is busy")


def _metric(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_process_outcomes_accept_release_and_reject(mock: MockCluster) -> None:
    topic = "share-worker-outcomes"
    mock.create_topic(topic)
    metrics = PrometheusMetrics()
    worker = Picky(bootstrap_servers=mock.bootstrap_servers, group_id="share-worker-outcomes",
                   topics=[topic], hooks=[metrics])
    ran: list[Any] = []
    thread = threading.Thread(target=lambda: ran.append(worker.run()), daemon=True)
    thread.start()
    try:
        wait_for(lambda: worker._consumer is not None and bool(worker._consumer.assignment()),
                 20, "the worker to join")
        values = [b"ok%d" % i for i in range(30)] + [b"bad%d!" % i for i in range(5)] \
            + [b"later%d?" % i for i in range(5)]
        mock.produce(topic, values)
        wait_for(lambda: len(worker.seen) >= len(values) + 5, 20,
                 "every record, and the released ones again")
    finally:
        worker.stop()
        thread.join(15)
    assert not thread.is_alive()
    [summary] = ran
    assert (summary.records_accepted, summary.records_released, summary.records_rejected) \
        == (35, 5, 5)
    counts: dict[bytes, list[int]] = {}
    for value, count in worker.seen:
        counts.setdefault(value, []).append(count)
    assert all(c == [1] for v, c in counts.items() if not v.endswith(b"?"))  # rejected: once
    assert all(c == [1, 2] for v, c in counts.items() if v.endswith(b"?"))
    text = generate_latest(metrics.registry).decode()
    group = {"group": "share-worker-outcomes", "topic": topic}
    assert _metric(text, "groupkit_share_records_acquired_total", **group) == 45
    assert _metric(text, "groupkit_share_records_redelivered_total", **group) == 5
    assert _metric(text, "groupkit_share_delivery_count_count", **group) == 45
    assert _metric(text, "groupkit_share_delivery_count_bucket", le="1.0", **group) == 40
    for kind, n in (("ACCEPT", 35), ("RELEASE", 5), ("REJECT", 5)):
        assert _metric(text, "groupkit_share_records_acknowledged_total", type=kind,
                       result="ok", **group) == n
    assert _metric(text, "groupkit_process_errors_total", group="share-worker-outcomes") == 10


class Poison(ShareWorker):
    """Fails every time on the record b"poison"; processes the others."""

    fetch_max_wait_ms = 100

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.seen: list[tuple[bytes, int]] = []

    def process(self, record: ShareConsumerRecord) -> None:
        assert record.value is not None
        self.seen.append((record.value, record.delivery_count))
        if record.value == b"poison":
            raise ValueError("this record can never be processed")


def test_a_record_that_always_fails_stops_at_the_delivery_limit(mock: MockCluster) -> None:
    """Released at every delivery, the poison record is archived at the broker's limit
    (3 here; Kafka's group.share.delivery.count.limit, 5 by default) and the records behind
    it go on."""
    topic = "share-worker-poison"
    mock.create_topic(topic)
    worker = Poison(bootstrap_servers=mock.bootstrap_servers, group_id="share-worker-poison",
                    topics=[topic])
    ran: list[Any] = []
    thread = threading.Thread(target=lambda: ran.append(worker.run()), daemon=True)
    thread.start()
    try:
        mock.produce(topic, [b"poison"], partitions=1)
        wait_for(lambda: [c for v, c in worker.seen if v == b"poison"] == [1, 2, 3], 30,
                 "three deliveries of the poison record")
        # Two more records behind it, one after the other: a poison record made available
        # again would be acquired (from its lower offset) no later than the second of them.
        for marker in (b"after-1", b"after-2"):
            mock.produce(topic, [marker], partitions=1)
            wait_for(lambda m=marker: (m, 1) in worker.seen, 20, f"{marker!r} processed")
    finally:
        worker.stop()
        thread.join(15)
    assert not thread.is_alive()
    assert [c for v, c in worker.seen if v == b"poison"] == [1, 2, 3]
    [summary] = ran
    assert (summary.records_accepted, summary.records_released) == (2, 3)


def test_a_pool_of_more_share_workers_than_partitions(
        mock: MockCluster, pools: Any, tmp_path: Path) -> None:  # noqa: F811
    topic, group = "share-pool", "share-pool-group"
    mock.create_topic(topic)
    pool: PoolProcess = pools("ShareRecordingWorker", 5, mock.bootstrap_servers, group, topic)
    wait_for(lambda: len(mock.share_members(group)) == 5, 60,
             "five share workers in the group")
    # The mock's assignor gives each of the four partitions to one member (one worker idle);
    # Kafka's shares them among members that outnumber them: share them by hand.
    members = mock.share_members(group)
    mock.share_assign(group, {m: [(topic, p) for p in range(4)] for m in members})

    def records() -> list[dict[str, Any]]:
        return [json.loads(line) for path in pool.dir.glob("*.jsonl")
                for line in path.read_text().splitlines() if line.endswith("}")]

    sent = 0
    deadline = time.monotonic() + 40
    while len({r["pid"] for r in records()}) < 5:
        assert time.monotonic() < deadline, "not every worker got records"
        sent += mock.produce(topic, (b"p%d" % i for i in range(sent, sent + 200)))
        wait_for(lambda want=sent: len({(r["p"], r["o"]) for r in records()}) >= want, 30,
                 f"{sent} records processed")
    done = [(r["p"], r["o"]) for r in records()]
    assert len(done) == len(set(done)) == sent, "a record was processed twice"
    assert all(r["c"] == 1 for r in records())
    assert pool.stop() == 0
