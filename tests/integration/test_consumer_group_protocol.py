"""The consumer group protocol (KIP-848) live: groupkit members, alone and with confluent-kafka
members (``group.protocol=consumer``), on confluent-kafka's mock cluster, the one broker here
that has ConsumerGroupHeartbeat (Tansu does not: a member there fails with a named error).

Every member runs in a process of its own (tests/support/kip848_member.py), processes each
record, then commits what it processed, and reports its listener's calls, its records and its
commits with one clock. Members join, one leaves in order, one is SIGKILLed (its partitions
move once the mock's member session, set to a few seconds through librdkafka's C API, runs out)
and a static member restarts. Whatever happened: no record is lost; a record is processed twice
only if a SIGKILLed member processed it after its last commit; no partition is held by two
members at any moment; the static member's restart moves no partition of anyone else.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from typing import Any

import confluent_kafka
import pytest

from groupkit import Consumer
from groupkit.errors import UnsupportedVersionError
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support.kip848_member import Spawned, Timeline
from tests.support.mock_cluster import MockCluster

PARTITIONS = 4
SESSION_MS = 4_000
WAIT = 30.0


def _produce(bootstrap: str, topic: str, count: int, start: int) -> set[tuple[int, int]]:
    """``count`` records spread over the partitions; their (partition, offset) pairs."""
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    placed: list[tuple[int, int]] = []

    def delivered(err: Any, msg: Any) -> None:
        assert err is None, err
        placed.append((msg.partition(), msg.offset()))

    for i in range(count):
        producer.produce(topic, b"v%d" % (start + i), partition=i % PARTITIONS,
                         on_delivery=delivered)
    assert producer.flush(WAIT) == 0
    return set(placed)


def _intervals(timeline: Timeline, killed: dict[str, float],
               end: float) -> dict[int, list[tuple[float, float, str]]]:
    """Each partition's holders with the time each held it (a SIGKILLed member until its kill)."""
    since: dict[tuple[str, int], float] = {}
    out: dict[int, list[tuple[float, float, str]]] = defaultdict(list)
    for name, fact in timeline.facts:
        kind = fact.get("kind")
        if kind == "assigned":
            for p in fact["partitions"]:
                since.setdefault((name, p), fact["t"])
        elif kind in ("revoked", "lost", "stopped"):
            parts = fact["partitions"] if kind != "stopped" else [
                p for (n, p) in since if n == name]
            for p in parts:
                start = since.pop((name, p), None)
                if start is not None:
                    out[p].append((start, fact["t"], name))
    for (name, p), start in since.items():
        out[p].append((start, killed.get(name, end), name))
    return out


def _overlaps(intervals: dict[int, list[tuple[float, float, str]]]) -> list[str]:
    found = []
    for p, spans in intervals.items():
        spans = sorted(spans)
        for (_, e1, a), (s2, _, b) in zip(spans, spans[1:], strict=False):
            if s2 < e1:
                found.append(f"partition {p}: {a} held it until {e1:.3f}, {b} from {s2:.3f}")
    return found


@pytest.mark.parametrize("clients", [("groupkit", "groupkit"), ("groupkit", "confluent")],
                         ids=["groupkit-alone", "mixed-with-confluent-kafka"])
def test_members_join_leave_crash_and_restart_without_losing_or_sharing_a_partition(
        clients: tuple[str, str]) -> None:
    other = clients[1]
    with MockCluster(session_timeout_ms=SESSION_MS, heartbeat_interval_ms=500) as mock:
        bootstrap, topic, group = mock.bootstrap_servers, "events", "kip848-acceptance"
        mock.create_topic(topic, PARTITIONS)
        timeline = Timeline()
        members: dict[str, Spawned] = {}
        killed: dict[str, float] = {}
        produced: set[tuple[int, int]] = set()

        def start(client: str, name: str, **options: Any) -> None:
            members[name] = Spawned(timeline, client, name, bootstrap, group, topic, **options)

        def everything_processed() -> bool:
            return produced <= set(timeline.records())

        try:
            start("groupkit", "a")
            start(other, "b")
            timeline.wait(lambda: timeline.covered(["a", "b"], PARTITIONS), WAIT, "a and b")
            produced |= _produce(bootstrap, topic, 200, 0)
            start("groupkit", "s", instance="static-s")
            timeline.wait(lambda: timeline.covered(["a", "b", "s"], PARTITIONS), WAIT, "a, b, s")
            produced |= _produce(bootstrap, topic, 200, 200)
            timeline.wait(everything_processed, WAIT, "the first 400 records")

            assert members["a"].terminate(WAIT) == 0  # an orderly leave
            timeline.wait(lambda: timeline.covered(["b", "s"], PARTITIONS), WAIT, "a's leave")
            start(other, "c", delay=0.002)
            timeline.wait(lambda: timeline.covered(["b", "s", "c"], PARTITIONS), WAIT, "c")
            produced |= _produce(bootstrap, topic, 400, 400)
            timeline.wait(lambda: len(timeline.records("c")) >= 40, WAIT, "c to make progress")
            killed["c"] = members["c"].kill()
            timeline.wait(lambda: timeline.covered(["b", "s"], PARTITIONS), WAIT,
                          "c's partitions to move after its session")
            moved_after = max(f["t"] for _, f in timeline.facts
                              if f.get("kind") == "assigned") - killed["c"]
            start(other, "c-again")  # the crashed member's process comes back
            timeline.wait(lambda: timeline.covered(["b", "s", "c-again"], PARTITIONS), WAIT,
                          "the crashed member back")

            # A static member closes (epoch -2) and comes back under the same instance id.
            held = timeline.owners()["s"]
            assert members["s"].terminate(WAIT) == 0
            closed_at = time.monotonic()
            start("groupkit", "s2", instance="static-s")
            timeline.wait(lambda: timeline.owners().get("s2") == held
                          and timeline.covered(["b", "s2", "c-again"], PARTITIONS), WAIT,
                          "s back")
            back_at = time.monotonic()
            produced |= _produce(bootstrap, topic, 200, 800)
            timeline.wait(everything_processed, WAIT, "every record")
        finally:
            for name, member in members.items():
                if name not in killed and member.proc.poll() is None:
                    member.terminate(WAIT)
    end = time.monotonic()

    records = timeline.records()
    assert set(records) == produced, "a record was lost"
    # Twice only from a SIGKILLed member's uncommitted window.
    last_commit: dict[int, int] = {}
    for name, fact in timeline.facts:
        if name == "c" and "committed" in fact:
            last_commit.update({int(p): o for p, o in fact["committed"].items()})
    window = {(p, o) for p, o in timeline.records("c") if o >= last_commit.get(p, 0)}
    twice = {r for r, n in Counter(records).items() if n > 1}
    assert twice <= window, f"processed twice outside c's uncommitted window: {twice - window}"
    overlaps = _overlaps(_intervals(timeline, killed, end))
    assert not overlaps, overlaps
    # The mock hands a dead member's partitions over only once its session ran out.
    assert moved_after >= SESSION_MS / 1000 - 1.0, moved_after
    # The static restart: nobody but the static member saw a change after it closed.
    after = [(n, f["kind"]) for n, f in timeline.facts
             if f.get("kind") in ("assigned", "revoked", "lost")
             and closed_at < f["t"] <= back_at and n != "s2" and f["partitions"]]
    assert after == [], after


@pytest.mark.broker
def test_a_broker_without_the_consumer_protocol_fails_naming_it_within_the_api_timeout(
        kafka_broker: LocalBroker, unique_name) -> None:  # noqa: F811
    """Tansu has no ConsumerGroupHeartbeat: no hang, no fallback to the classic protocol."""
    consumer = Consumer(bootstrap_servers=kafka_broker.bootstrap_servers,
                        group_id=unique_name("g"), group_protocol="consumer",
                        default_api_timeout_ms=5_000)
    consumer.subscribe([unique_name("t")])
    started = time.monotonic()
    try:
        with pytest.raises(UnsupportedVersionError) as failed:
            while time.monotonic() - started < 10:
                consumer.poll(0.5)
        took = time.monotonic() - started
    finally:
        consumer.close(5)
    text = str(failed.value)
    assert kafka_broker.bootstrap_servers.split(":")[1] in text
    assert "ConsumerGroupHeartbeat (API 68)" in text and "group_protocol='classic'" in text
    assert took < 5.0
