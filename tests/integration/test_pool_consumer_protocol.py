"""``groupkit run`` with ``group_protocol="consumer"`` (KIP-848) on confluent-kafka's mock cluster:
a real supervisor, real worker processes, a real SIGKILL and a real scrape of the pool's
metrics endpoint. The pool and its metrics are the classic protocol's, unchanged: every worker
becomes a member, each record is processed once and committed, the generation gauge shows the
member epoch and reconciliations count as rebalances, /healthz follows the slots, and a killed
worker's slot is filled again while the group settles with nothing lost and no partition held
by two workers at once.

The mock's member session is set to a few seconds (tests/support/mock_cluster.py). Kafka would
keep the killed worker's partitions from everyone until that session runs out; the mock forgets
what a member holds when its connection closes, so they may go to the replacement at once
(docs/test-brokers.md). The test asserts neither: only that nothing is lost or processed twice
and that no two live workers hold a partition at once (the killed one holds nothing after its
kill).
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections import defaultdict
from collections.abc import Iterator

import pytest

from tests.support.broker_data import committed
from tests.support.metrics_scrape import healthz, scrape, value
from tests.support.mock_cluster import MockCluster
from tests.support.pool_process import PoolProcess, pools  # noqa: F401
from tests.support.waits import eventually
from tests.support.worker_log import Line

PARTITIONS = 6
WORKERS = 3
SESSION_MS = 6_000
WAIT = 30.0


@pytest.fixture
def mock() -> Iterator[MockCluster]:
    with MockCluster(session_timeout_ms=SESSION_MS, heartbeat_interval_ms=300) as cluster:
        yield cluster


def _produce(mock: MockCluster, topic: str, per_partition: int, ends: dict[int, int],
             partitions: int = PARTITIONS) -> None:
    """``per_partition`` more records on every partition (``produce`` goes round-robin);
    ``ends`` moves on to the new log ends."""
    mock.produce(topic, (b"r" for _ in range(per_partition * partitions)), partitions)
    for p in range(partitions):
        ends[p] = ends.get(p, 0) + per_partition


def _spans(lines: list[Line], ended: dict[int, float], now: float
           ) -> dict[int, list[tuple[float, float, int]]]:
    """Each partition's (from, until, pid) holdings, from every worker's ``held`` lines; a
    killed worker holds nothing after ``ended[pid]``, a live one holds on until ``now``."""
    out: dict[int, list[tuple[float, float, int]]] = defaultdict(list)
    since: dict[tuple[int, int], float] = {}
    for line in sorted((x for x in lines if x["kind"] == "held"), key=lambda x: x["t"]):
        pid, held = line["pid"], set(line["held"])
        for p in held:
            since.setdefault((pid, p), line["t"])
        for (who, p), start in list(since.items()):
            if who == pid and p not in held:
                out[p].append((start, line["t"], pid))
                del since[(who, p)]
    for (pid, p), start in since.items():
        out[p].append((start, ended.get(pid, now), pid))
    return out


def _overlaps(spans: dict[int, list[tuple[float, float, int]]]) -> list[str]:
    found = []
    for p, held in spans.items():
        held = sorted(held)
        for (_, end, a), (start, _, b) in zip(held, held[1:], strict=False):
            if start < end:
                found.append(f"partition {p}: pid {a} held it until {end:.3f}, pid {b} from"
                             f" {start:.3f}")
    return found


def test_a_pool_of_consumer_protocol_workers_survives_a_sigkill(
        mock: MockCluster, pools) -> None:  # noqa: F811
    bootstrap, topic, group = mock.bootstrap_servers, "pool-events", "pool-kip848"
    mock.create_topic(topic, PARTITIONS)
    ends: dict[int, int] = {}
    _produce(mock, topic, 30, ends)
    pool: PoolProcess = pools("ConsumerProtocolWorker", WORKERS, bootstrap, group, topic,
                              "group_protocol='consumer'", "metrics_host='127.0.0.1'",
                              "metrics_port=0")
    dead: dict[int, float] = {}

    def port() -> int:
        found = re.search(r"serving metrics on [\d.]+:(\d+)", pool.log())
        assert found, pool.log()
        return int(found.group(1))

    metrics_port = eventually(port, WAIT, "the pool to serve its metrics", step=0.2)

    def settled() -> dict[int, set[int]]:
        """Every live worker a member holding its share, every record processed once and
        committed, and one scrape that says so."""
        lines = pool.lines()
        held = {pid: h for pid, h in pool.holders().items() if h and pid not in dead}
        assert len(held) == WORKERS, held
        assert sorted(p for h in held.values() for p in h) == list(range(PARTITIONS)), held
        processed = pool.processed()
        assert set(processed) == {(p, o) for p, end in ends.items() for o in range(end)}
        assert committed(bootstrap, group, topic, PARTITIONS) == ends
        epochs = {line["pid"]: line["epoch"] for line in lines if line["kind"] == "member"}
        live_epochs = [epochs[pid] for pid in held]
        rebalances = sum(1 for line in lines if line["kind"] == "rebalanced")
        s = scrape(metrics_port)
        # Settled, every member has reconciled to the group's epoch; the gauge is livemax over
        # the live workers, each setting it to its member epoch.
        assert len(set(live_epochs)) == 1, epochs
        assert value(s, "groupkit_generation", group=group) == live_epochs[0] > 0, epochs
        assert value(s, "groupkit_rebalances_total", group=group, result="ok") == rebalances
        assert value(s, "groupkit_member_state", group=group, state="STABLE") == WORKERS
        assert value(s, "groupkit_assigned_partitions", group=group, topic=topic) == PARTITIONS
        assert value(s, "groupkit_records_consumed_total", group=group,
                     topic=topic) == len(processed)
        for p, end in ends.items():
            assert value(s, "groupkit_committed_offset", group=group, topic=topic,
                         partition=str(p)) == end
        status, body = healthz(metrics_port)
        assert status == 200 and body["running"] == WORKERS, body
        return held

    before = eventually(settled, WAIT, "three members to settle with every record", step=0.2)
    lines = pool.lines()
    members = {line["pid"]: line["member_id"] for line in lines if line["kind"] == "member"}
    assert set(members) == set(before) and len(set(members.values())) == WORKERS, members
    assert sum(1 for line in lines if line["kind"] == "rebalanced") >= WORKERS

    victim = next(iter(before))
    dead[victim] = time.monotonic()
    os.kill(victim, signal.SIGKILL)
    _produce(mock, topic, 20, ends)
    after = eventually(settled, WAIT, "a replacement member and every record", step=0.2)
    assert len(set(after) - set(before)) == 1, (before, after)
    s = scrape(metrics_port)
    assert value(s, "groupkit_pool_worker_restarts_total", reason="crashed") == 1
    assert pool.stop() == 0, pool.log()
    log = pool.log()
    assert f"(pid {victim}) was killed by SIGKILL (crashed); restarting it" in log
    processed = pool.processed()
    assert len(processed) == len(set(processed)), "a record was processed twice"
    assert not _overlaps(_spans(pool.lines(), dead, time.monotonic()))
    assert committed(bootstrap, group, topic, PARTITIONS) == ends
    members = {line["member_id"] for line in pool.lines() if line["kind"] == "member"}
    assert len(members) == WORKERS + 1, members


def test_a_static_slot_refused_its_instance_id_waits_without_a_crash_loop(
        mock: MockCluster, pools) -> None:  # noqa: F811
    """Under the consumer protocol Kafka refuses a static member whose instance id the slot's
    killed worker still holds (until its session ends), which is fatal for the member, as in
    Java. The pool starts the slot again after a back-off and does not count it as a crash:
    two refusals with crash_loop_count=2 would stop it otherwise. (The refusal is injected:
    tests/support/pool_workers.py, UnreleasedTwice.)"""
    bootstrap, topic, group = mock.bootstrap_servers, "pool-unreleased", "pool-unreleased"
    mock.create_topic(topic, 2)
    ends: dict[int, int] = {}
    pool: PoolProcess = pools("UnreleasedTwice", 1, bootstrap, group, topic,
                              "group_protocol='consumer'", f"group_instance_id='{group}'",
                              "crash_loop_count=2")

    def holds_both() -> None:
        if pool.proc.poll() is not None:
            pytest.fail(f"the pool stopped:\n{pool.log()}")
        held = [h for h in pool.holders().values() if h]
        assert held == [{0, 1}], held

    eventually(holds_both, WAIT, "the third start to join and hold both partitions", step=0.2)
    _produce(mock, topic, 10, ends, partitions=2)
    eventually(lambda: _assert(set(pool.processed()) == {(p, o) for p in range(2)
                                                          for o in range(10)}),
               WAIT, "the records processed", step=0.2)
    assert pool.stop() == 0, pool.log()
    log = pool.log()
    assert log.count("its group instance id is still held by the slot's previous member") == 2
    assert "Crash loop" not in log


def _assert(condition: bool) -> None:
    assert condition


def test_a_rolling_restart_of_static_slots_keeps_each_slots_partitions(
        mock: MockCluster, pools) -> None:  # noqa: F811
    """SIGHUP replaces the workers one at a time; a static member closes with epoch -2 (its
    place kept), so each slot's replacement gets back what the slot held."""
    bootstrap, topic, group = mock.bootstrap_servers, "pool-roll", "pool-roll"
    mock.create_topic(topic, 4)
    pool: PoolProcess = pools("ConsumerProtocolWorker", 2, bootstrap, group, topic,
                              "group_protocol='consumer'", f"group_instance_id='{group}'")

    def by_slot() -> dict[int, tuple[int, set[int]]]:
        """Each slot's latest worker (pid) and what it holds, once both hold their share."""
        newest = {int(slot): int(pid) for slot, pid in
                  re.findall(r"worker (\d+) started \(pid (\d+)\)", pool.log())}
        holders = pool.holders()
        now = {slot: (pid, holders.get(pid, set())) for slot, pid in newest.items()}
        assert len(now) == 2 and all(held for _, held in now.values()), now
        assert sorted(p for _, held in now.values() for p in held) == [0, 1, 2, 3], now
        return now

    before = eventually(by_slot, WAIT, "two static members to share four partitions", step=0.2)
    pool.proc.send_signal(signal.SIGHUP)
    eventually(lambda: _assert("rolling restart: worker 1 replaced" in pool.log()), WAIT,
               "both workers to be replaced one at a time", step=0.2)
    after = eventually(by_slot, WAIT, "the replacements to hold partitions", step=0.2)
    assert all(after[slot][0] != before[slot][0] for slot in (0, 1)), (before, after)
    assert {slot: held for slot, (_, held) in after.items()} == {
        slot: held for slot, (_, held) in before.items()}
    assert pool.stop() == 0, pool.log()
