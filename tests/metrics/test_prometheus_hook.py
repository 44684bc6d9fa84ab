"""PrometheusMetrics fed hook events directly: what each event does to the registry."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import prometheus_client

from groupkit.hooks import (
    BrokerUnreachable,
    CommitDone,
    CommitFailed,
    GroupRequestDone,
    Joined,
    MemberStateChanged,
    PartitionProgress,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsProgressed,
    PartitionsRevoked,
    Polled,
    RebalanceFinished,
)
from groupkit.metrics import METRICS, PrometheusMetrics

ROOT = Path(__file__).resolve().parents[2]


def get(m: PrometheusMetrics, name: str, **labels: str) -> float | None:
    return m.registry.get_sample_value(name, labels)


def test_metrics_live_in_their_own_registry() -> None:
    m = PrometheusMetrics()
    m(BrokerUnreachable("b:9092", "refused", 1))
    assert get(m, "groupkit_connection_errors_total", broker="b:9092") == 1
    assert prometheus_client.REGISTRY.get_sample_value(
        "groupkit_connection_errors_total", {"broker": "b:9092"}) is None
    # A second instance has a registry of its own (no duplicate-name clash).
    assert PrometheusMetrics().registry is not m.registry


def test_member_state_is_one_hot() -> None:
    m = PrometheusMetrics()
    m(MemberStateChanged("g", "UNJOINED", "COORDINATOR_UNKNOWN"))
    states = {s.labels["state"]: s.value for metric in m.registry.collect()
              if metric.name == "groupkit_member_state" for s in metric.samples}
    # The classic protocol's 9 states and the 7 only the consumer protocol (KIP-848) has.
    assert len(states) == 16 and states["COORDINATOR_UNKNOWN"] == 1 and sum(states.values()) == 1
    m(MemberStateChanged("g", "COORDINATOR_UNKNOWN", "STABLE"))
    assert get(m, "groupkit_member_state", group="g", state="STABLE") == 1
    assert get(m, "groupkit_member_state", group="g", state="COORDINATOR_UNKNOWN") == 0


def test_a_closed_member_leaves_no_stale_timestamps_behind() -> None:
    m = PrometheusMetrics()
    m(MemberStateChanged("g", "COORDINATOR_UNKNOWN", "STABLE"))
    m(GroupRequestDone("g", "Heartbeat", "", 0.002))
    m(Polled("g", 0, ()))
    assert get(m, "groupkit_last_heartbeat_timestamp_seconds", group="g") > 0
    m(MemberStateChanged("g", "STABLE", "LEAVING"))
    m(MemberStateChanged("g", "LEAVING", "CLOSED"))
    assert get(m, "groupkit_last_heartbeat_timestamp_seconds", group="g") is None
    assert get(m, "groupkit_last_poll_timestamp_seconds", group="g") is None
    assert get(m, "groupkit_member_state", group="g", state="CLOSED") == 1


def test_rebalances_ok_and_failed() -> None:
    m = PrometheusMetrics()
    m(GroupRequestDone("g", "JoinGroup", "MEMBER_ID_REQUIRED", 0.01))
    m(GroupRequestDone("g", "JoinGroup", "", 3.0))
    m(GroupRequestDone("g", "SyncGroup", "REBALANCE_IN_PROGRESS", 0.02))
    m(GroupRequestDone("g", "SyncGroup", "", 0.05))
    m(RebalanceFinished("g", 7, 3.2))
    assert get(m, "groupkit_rebalances_total", group="g", result="ok") == 1
    # MEMBER_ID_REQUIRED is a step of joining (KIP-394), not a failure.
    assert get(m, "groupkit_rebalances_total", group="g", result="failed") == 1
    assert get(m, "groupkit_join_duration_seconds_count", group="g") == 1
    assert get(m, "groupkit_join_duration_seconds_sum", group="g") == 3.0
    assert get(m, "groupkit_sync_duration_seconds_count", group="g") == 1
    assert get(m, "groupkit_rebalance_duration_seconds_sum", group="g") == 3.2
    assert get(m, "groupkit_generation", group="g") == 7
    assert abs(get(m, "groupkit_last_rebalance_timestamp_seconds", group="g") - time.time()) < 5


def test_heartbeats() -> None:
    m = PrometheusMetrics()
    m(GroupRequestDone("g", "Heartbeat", "", 0.002))
    m(GroupRequestDone("g", "Heartbeat", "REBALANCE_IN_PROGRESS", 0.003))
    m(GroupRequestDone("g", "Heartbeat", "RequestTimeoutError", 5.0))
    assert get(m, "groupkit_heartbeat_duration_seconds_count", group="g") == 3
    assert get(m, "groupkit_heartbeat_errors_total", group="g",
               error="REBALANCE_IN_PROGRESS") == 1
    assert get(m, "groupkit_heartbeat_errors_total", group="g", error="RequestTimeoutError") == 1
    assert get(m, "groupkit_last_heartbeat_timestamp_seconds", group="g") > 0


def test_a_consumer_protocol_member_reports_its_states_heartbeats_epoch_and_reconciliations(
        ) -> None:
    m = PrometheusMetrics()
    m(MemberStateChanged("g", "UNSUBSCRIBED", "JOINING"))
    m(MemberStateChanged("g", "JOINING", "RECONCILING"))
    assert get(m, "groupkit_member_state", group="g", state="RECONCILING") == 1
    assert get(m, "groupkit_member_state", group="g", state="JOINING") == 0
    m(GroupRequestDone("g", "ConsumerGroupHeartbeat", "", 0.002))
    m(GroupRequestDone("g", "ConsumerGroupHeartbeat", "FENCED_MEMBER_EPOCH", 0.002))
    assert get(m, "groupkit_heartbeat_duration_seconds_count", group="g") == 2
    assert get(m, "groupkit_heartbeat_errors_total", group="g",
               error="FENCED_MEMBER_EPOCH") == 1
    # A reconciliation is a rebalance; the member epoch is the generation.
    m(Joined("g", "m", 12, "uniform", False))
    assert get(m, "groupkit_generation", group="g") == 12
    m(RebalanceFinished("g", 13, 0.05))
    assert get(m, "groupkit_rebalances_total", group="g", result="ok") == 1
    assert get(m, "groupkit_generation", group="g") == 13


def test_partitions_and_their_lag_follow_the_assignment() -> None:
    m = PrometheusMetrics()
    m(PartitionsAssigned("g", frozenset({("t", 0), ("t", 1), ("u", 0)}), 0.001))
    assert get(m, "groupkit_assigned_partitions", group="g", topic="t") == 2
    now_ms = int(time.time() * 1000)
    m(Polled("g", 5, (PartitionProgress("t", 0, 5, 500, 105, 150, now_ms - 10_000),)))
    assert get(m, "groupkit_records_consumed_total", group="g", topic="t") == 5
    assert get(m, "groupkit_bytes_consumed_total", group="g", topic="t") == 500
    # A poll counts; the lag comes from the fetcher thread's reports.
    assert get(m, "groupkit_consumer_lag_records", group="g", topic="t", partition="0") is None
    m(PartitionsProgressed("g", (PartitionProgress("t", 0, 0, 0, 105, 150, now_ms - 10_000),
                                 PartitionProgress("t", 1, 0, 0, 40, 40, -1),
                                 PartitionProgress("u", 0, 0, 0, 0, 9, -1))))
    assert get(m, "groupkit_records_consumed_total", group="g", topic="t") == 5
    assert get(m, "groupkit_consumer_lag_records", group="g", topic="t", partition="0") == 45
    assert 9.5 < get(m, "groupkit_consumer_lag_seconds", group="g", topic="t",
                     partition="0") < 60
    assert get(m, "groupkit_consumer_lag_records", group="g", topic="t", partition="1") == 0
    assert get(m, "groupkit_consumer_lag_seconds", group="g", topic="t", partition="1") == 0
    # Behind, but nothing consumed yet: the age of the backlog is unknown, so no sample.
    assert get(m, "groupkit_consumer_lag_records", group="g", topic="u", partition="0") == 9
    assert get(m, "groupkit_consumer_lag_seconds", group="g", topic="u", partition="0") is None

    m(PartitionsRevoked("g", frozenset({("t", 0)}), 0.002))
    m(PartitionsLost("g", frozenset({("u", 0)}), 0.003))
    assert get(m, "groupkit_assigned_partitions", group="g", topic="t") == 1
    assert get(m, "groupkit_assigned_partitions", group="g", topic="u") == 0
    assert get(m, "groupkit_partitions_revoked_total", group="g") == 1
    assert get(m, "groupkit_partitions_lost_total", group="g") == 1
    # A partition no longer held has no lag series.
    assert get(m, "groupkit_consumer_lag_records", group="g", topic="t", partition="0") is None
    assert get(m, "groupkit_consumer_lag_seconds", group="g", topic="t", partition="0") is None
    assert get(m, "groupkit_consumer_lag_records", group="g", topic="u", partition="0") is None
    assert get(m, "groupkit_consumer_lag_records", group="g", topic="t", partition="1") == 0
    for callback in ("on_assigned", "on_revoked", "on_lost"):
        assert get(m, "groupkit_rebalance_callback_duration_seconds_count", group="g",
                   callback=callback) == 1


def test_every_poll_counts_however_close_the_polls_come() -> None:
    m = PrometheusMetrics()
    for _ in range(10):
        m(Polled("g", 50, (PartitionProgress("t", 0, 30, 3000, 0, -1, -1),
                           PartitionProgress("t", 1, 20, 2000, 0, -1, -1))))
        m(Polled("g", 0, ()))
    assert get(m, "groupkit_records_consumed_total", group="g", topic="t") == 500
    assert get(m, "groupkit_bytes_consumed_total", group="g", topic="t") == 50_000


def test_a_report_that_comes_after_its_partition_was_given_up_waits_for_it() -> None:
    # The fetcher thread tells where a partition stood after the application revoked it: no
    # lag series for a partition this member does not hold, until it is assigned again.
    m = PrometheusMetrics()
    m(PartitionsAssigned("g", frozenset({("t", 0)}), 0.001))
    m(PartitionsProgressed("g", (PartitionProgress("t", 0, 0, 0, 10, 30, -1),)))
    m(PartitionsRevoked("g", frozenset({("t", 0)}), 0.001))
    m(PartitionsProgressed("g", (PartitionProgress("t", 0, 0, 0, 12, 30, -1),)))
    assert get(m, "groupkit_consumer_lag_records", group="g", topic="t", partition="0") is None
    m(PartitionsAssigned("g", frozenset({("t", 0)}), 0.001))
    assert get(m, "groupkit_consumer_lag_records", group="g", topic="t", partition="0") == 18
    m(PartitionsProgressed("g", (PartitionProgress("t", 0, 0, 0, 30, 30, -1),)))
    assert get(m, "groupkit_consumer_lag_records", group="g", topic="t", partition="0") == 0


def test_the_age_of_a_backlog_grows_between_polls_that_do_not_mention_it(monkeypatch) -> None:
    from groupkit.metrics import prometheus

    monkeypatch.setattr(prometheus, "_SWEEP_S", 0.0)
    m = PrometheusMetrics()
    then_ms = int(time.time() * 1000) - 5_000
    m(PartitionsProgressed("g", (PartitionProgress("t", 0, 0, 0, 11, 50, then_ms),
                                 PartitionProgress("t", 1, 0, 0, 8, 8, then_ms))))
    first = get(m, "groupkit_consumer_lag_seconds", group="g", topic="t", partition="0")
    time.sleep(0.05)
    m(Polled("g", 0, ()))
    later = get(m, "groupkit_consumer_lag_seconds", group="g", topic="t", partition="0")
    assert 5 <= first < later < 60
    assert get(m, "groupkit_consumer_lag_seconds", group="g", topic="t", partition="1") == 0


def test_commits() -> None:
    m = PrometheusMetrics()
    m(CommitDone("g", 2, 0.004, (("t", 0, 105), ("t", 1, 40))))
    m(CommitFailed("g", 1, "the group has rebalanced: ...", "CommitFailedError"))
    assert get(m, "groupkit_commit_duration_seconds_count", group="g") == 1
    assert get(m, "groupkit_committed_offset", group="g", topic="t", partition="0") == 105
    assert get(m, "groupkit_committed_offset", group="g", topic="t", partition="1") == 40
    assert get(m, "groupkit_commit_errors_total", group="g", error="CommitFailedError") == 1


def test_every_gauge_has_a_multiprocess_mode_and_nothing_forbidden_is_used() -> None:
    kinds = {spec.kind for spec in METRICS}
    assert kinds == {"counter", "gauge", "histogram"}
    for spec in METRICS:
        if spec.kind == "gauge":
            assert spec.multiprocess_mode in {"livesum", "livemax", "livemin", "max"}, spec.name


def test_instances_in_one_process_share_their_values_in_multiprocess_mode(
        tmp_path: Path) -> None:
    # A process of its own: prometheus-client picks its value store at import.
    script = textwrap.dedent(f"""
        from prometheus_client import CollectorRegistry
        from groupkit.hooks import BrokerUnreachable
        from groupkit.metrics import PrometheusMetrics, multiprocess_registry
        mine = CollectorRegistry()
        a, b, c = PrometheusMetrics(), PrometheusMetrics(mine), PrometheusMetrics(mine)
        a(BrokerUnreachable("b:1", "x", 1))
        b(BrokerUnreachable("b:1", "x", 2))
        c(BrokerUnreachable("b:1", "x", 3))
        assert mine.get_sample_value(
            "groupkit_connection_errors_total", {{"broker": "b:1"}}) == 3
        total = multiprocess_registry({str(tmp_path)!r}).get_sample_value(
            "groupkit_connection_errors_total", {{"broker": "b:1"}})
        print(total)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=ROOT,
                          env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3.0"
