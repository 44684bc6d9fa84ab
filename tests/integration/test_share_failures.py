"""Share groups when things go wrong, on confluent-kafka's mock cluster set (through
librdkafka's C API) to Kafka-like but short timing: a 1.5 s acquisition lock, a 2 s member
session, heartbeats every 0.3 s.

- A member killed (SIGKILL) while it holds records loses nothing: the group hands its
  partitions on when its session times out, and its records come back to the others.
- A member whose locks run out: the records go to another member (the partitions are shared by
  hand, as Kafka's assignor shares them when members outnumber partitions), its late
  acknowledgements are refused (INVALID_RECORD_STATE, reported per partition) and the lock
  expiry is reported.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupkit import AcknowledgeType, ShareConsumer, ShareLocksExpired, TopicPartition
from groupkit.errors import InvalidRecordStateError
from groupkit.metrics import PrometheusMetrics
from tests.support.mock_cluster import MockCluster
from tests.support.waits import wait_for

pytestmark = pytest.mark.xdist_group("share-mock")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def mock() -> Iterator[MockCluster]:
    with MockCluster(share_auto_offset_reset="earliest", share_heartbeat_interval_ms=300,
                     share_session_timeout_ms=2000,
                     share_record_lock_duration_ms=1500) as cluster:
        cluster.warm_producer()  # before any member: see tests/support/mock_cluster.py
        yield cluster


def _member(mock: MockCluster, group: str, name: str, **settings: Any) -> ShareConsumer:
    return ShareConsumer(bootstrap_servers=mock.bootstrap_servers, group_id=group,
                         client_id=name, fetch_max_wait_ms=100, **settings)


def test_a_member_killed_holding_records_loses_nothing(mock: MockCluster) -> None:
    topic, group = "share-killed", "share-killed-group"
    mock.create_topic(topic)
    holder = subprocess.Popen(
        [sys.executable, "-m", "tests.support.share_holder", mock.bootstrap_servers, group,
         topic], cwd=ROOT, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(holder.stdout.readline, "")),
                              daemon=True)  # type: ignore[union-attr]
    reader.start()
    survivor = _member(mock, group, "survivor")
    try:
        survivor.subscribe([topic])
        got: list[tuple[int, int, bytes, int]] = []

        def step() -> None:
            got.extend((r.partition, r.offset, r.value, r.delivery_count)
                       for r in survivor.poll(0.05))

        wait_for(lambda: "joined\n" in lines and 0 < len(survivor.assignment()) < 4, 20,
                 "the holder and the survivor to split the partitions", step=step)
        sent = mock.produce(topic, (b"k%d" % i for i in range(80)))
        wait_for(lambda: any(line.startswith("held") for line in lines), 20,
                 "the holder to hold records", step=step)
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        held = {(int(p), int(o)) for _, p, o in
                (line.split() for line in lines if line.startswith("held"))}
        wait_for(lambda: {v for *_, v, _ in got} >= {b"k%d" % i for i in range(sent)}, 30,
                 "every record at the survivor", step=step)
        survivor.commit_sync(5)
        again = {(p, o): c for p, o, _, c in got if (p, o) in held}
        assert set(again) == held and all(c >= 2 for c in again.values())
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(5)
        survivor.close(5)


def test_locks_that_run_out_hand_the_records_on_and_late_acknowledgements_fail(
        mock: MockCluster) -> None:
    topic, group = "share-locks", "share-locks-group"
    mock.create_topic(topic)
    events: list[Any] = []
    metrics = PrometheusMetrics()
    slow = _member(mock, group, "slow", share_acknowledgement_mode="explicit",
                   hooks=[events.append, metrics])
    quick = _member(mock, group, "quick", share_acknowledgement_mode="explicit")
    results: list[tuple[dict[Any, set[int]], Exception | None]] = []
    slow.set_acknowledgement_commit_callback(lambda o, e: results.append((o, e)))
    try:
        slow.subscribe([topic])
        quick.subscribe([topic])
        wait_for(lambda: bool(slow.assignment() and quick.assignment()), 20, "both members in",
                 step=lambda: (slow.poll(0.05), quick.poll(0.05)))
        # Partition 0 is the slow member's alone while it takes the records, so no fetch of
        # the quick one (it fetches once more after each poll) can take them first.
        assert slow.member_id is not None and quick.member_id is not None
        mock.share_assign(group, {slow.member_id: [(topic, 0)], quick.member_id: [(topic, 1)]})
        wait_for(lambda: [tp.partition for tp in slow.assignment()] == [0]
                 and [tp.partition for tp in quick.assignment()] == [1], 10,
                 "the slow member to hold partition 0 alone",
                 step=lambda: (slow.poll(0.05), quick.poll(0.05)))
        mock.produce(topic, (b"l%d" % i for i in range(40)), partitions=1)
        taken: list[Any] = []
        wait_for(lambda: bool(taken), 10, "the slow member to take records",
                 step=lambda: taken.extend(slow.poll(0.05)))
        # Kafka's assignor gives a partition to several members when they outnumber the
        # partitions; the mock's gives each to one, so share partition 0 by hand.
        mock.share_assign(group, {slow.member_id: [(topic, 0)], quick.member_id: [(topic, 0)]})
        mine = {r.offset for r in taken}
        # The slow member does not acknowledge in time: its records go to the quick one,
        # which holds them (unacknowledged) while the slow one tries.
        later: list[Any] = []
        wait_for(lambda: bool(later), 15, "the slow member's records at the other",
                 step=lambda: later.extend(quick.poll(0.05)))
        assert {r.offset for r in later} == mine
        assert all(r.delivery_count == 2 for r in later)
        assert any(isinstance(e, ShareLocksExpired) for e in events)
        for r in taken:
            slow.acknowledge(r, AcknowledgeType.ACCEPT)
        answer = slow.commit_sync(5)
        assert list(answer) == [TopicPartition(topic, 0)]
        assert isinstance(answer[TopicPartition(topic, 0)], InvalidRecordStateError)
        assert [(offsets, type(e)) for offsets, e in results] == [
            ({TopicPartition(topic, 0): mine}, InvalidRecordStateError)]
        # What an operator sees: the expired locks, and the late acceptances refused.
        labels = {"group": group, "topic": topic}
        registry = metrics.registry
        assert registry.get_sample_value("groupkit_share_lock_expirations_total",
                                         labels) == len(mine)
        assert registry.get_sample_value(
            "groupkit_share_records_acknowledged_total",
            {**labels, "type": "ACCEPT", "result": "INVALID_RECORD_STATE"}) == len(mine)
        for r in later:
            quick.acknowledge(r, AcknowledgeType.ACCEPT)
        assert quick.commit_sync(5) == {TopicPartition(topic, 0): None}
    finally:
        slow.close(5)
        quick.close(5)
