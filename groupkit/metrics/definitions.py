"""Every metric groupkit exports, as one table, and the objects made from it.

The table (``METRICS``) is the single place a metric's name, type, labels, help text, buckets
and multiprocess mode are written; ``MetricSet`` builds the prometheus-client objects from it
in one registry, and the README's table and the example dashboard are checked against it.

Only plain Counters, Gauges and Histograms: prometheus-client's multiprocess mode
(``PROMETHEUS_MULTIPROC_DIR``) cannot run custom collectors, Info or Enum. Every gauge names how
the values of several processes combine: ``livesum`` where processes hold disjoint shares (the
partitions each holds, the lag of the partitions it owns, how many members are in a state),
``livemax``/``max`` where the newest or highest value is the answer (generation, committed
offset, last rebalance), and ``livemin`` for the staleness gauges an alert watches (last
heartbeat, last poll), so one stuck worker is not hidden behind a healthy one.
"""

from __future__ import annotations

from typing import Literal

import attrs
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["METRICS", "METRIC_NAMES", "MetricSet", "MetricSpec", "exported_names"]

Kind = Literal["counter", "gauge", "histogram"]

#: Rebalances and joins on a broker that holds JoinGroup (Tansu: half the session timeout;
#: Kafka: group.initial.rebalance.delay.ms) take seconds to minutes.
#: A share record's delivery count: Kafka archives it at group.share.delivery.count.limit (5).
_DELIVERY_BUCKETS = (1.0, 2.0, 3.0, 4.0, 5.0, 10.0)
_REBALANCE_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)


@attrs.frozen
class MetricSpec:
    """One exported metric: its full name as scraped (counters end in ``_total``)."""

    name: str
    kind: Kind
    labels: tuple[str, ...]
    help: str
    multiprocess_mode: str | None = None
    buckets: tuple[float, ...] | None = None

    @property
    def attribute(self) -> str:
        """The ``MetricSet`` attribute holding this metric: the name without the prefix."""
        return self.name.removeprefix("groupkit_")


def _counter(name: str, labels: tuple[str, ...], doc: str) -> MetricSpec:
    return MetricSpec(name, "counter", labels, doc)


def _gauge(name: str, labels: tuple[str, ...], doc: str, mode: str) -> MetricSpec:
    return MetricSpec(name, "gauge", labels, doc, multiprocess_mode=mode)


def _histogram(name: str, labels: tuple[str, ...], doc: str,
               buckets: tuple[float, ...] | None = None) -> MetricSpec:
    return MetricSpec(name, "histogram", labels, doc, buckets=buckets)


G = ("group",)
GT = ("group", "topic")
GTP = ("group", "topic", "partition")

METRICS: tuple[MetricSpec, ...] = (
    _counter("groupkit_rebalances_total", ("group", "result"),
             "Rebalances finished: result ok (the member holds an assignment again) or failed"
             " (a JoinGroup or SyncGroup attempt refused or unanswered)."),
    _histogram("groupkit_rebalance_duration_seconds", G,
               "From the first JoinGroup of a rebalance to the assignment being held.",
               _REBALANCE_BUCKETS),
    _gauge("groupkit_last_rebalance_timestamp_seconds", G,
           "Unix time the last rebalance finished.", "max"),
    _gauge("groupkit_generation", G, "The group generation this member is in.", "livemax"),
    _gauge("groupkit_member_state", ("group", "state"),
           "1 for the state the member is in, 0 for the others (summed over processes: members"
           " in that state).", "livesum"),
    _gauge("groupkit_assigned_partitions", GT, "Partitions held.", "livesum"),
    _counter("groupkit_partitions_revoked_total", G, "Partitions given up in order."),
    _counter("groupkit_partitions_lost_total", G,
             "Partitions taken away without a hand-over (the member left or was fenced)."),
    _histogram("groupkit_rebalance_callback_duration_seconds", ("group", "callback"),
               "Time in the application's on_assigned, on_revoked and on_lost callbacks."),
    _histogram("groupkit_join_duration_seconds", G,
               "JoinGroup round trips that were accepted (the broker may hold them).",
               _REBALANCE_BUCKETS),
    _histogram("groupkit_sync_duration_seconds", G, "SyncGroup round trips that were accepted.",
               _REBALANCE_BUCKETS),
    _histogram("groupkit_heartbeat_duration_seconds", G, "Heartbeat round trips."),
    _counter("groupkit_heartbeat_errors_total", ("group", "error"),
             "Heartbeats refused (by the broker's error name) or unanswered (by exception)."),
    _gauge("groupkit_last_heartbeat_timestamp_seconds", G,
           "Unix time of the last accepted heartbeat (the oldest over processes).", "livemin"),
    _histogram("groupkit_commit_duration_seconds", G, "Successful OffsetCommit round trips."),
    _counter("groupkit_commit_errors_total", ("group", "error"),
             "Failed commits, by exception name."),
    _gauge("groupkit_committed_offset", GTP,
           "The last offset this member committed (the next offset to read).", "livemax"),
    _counter("groupkit_records_consumed_total", GT, "Records handed to the application."),
    _counter("groupkit_bytes_consumed_total", GT,
             "Wire bytes of the records handed to the application."),
    _gauge("groupkit_consumer_lag_records", GTP,
           "High watermark of the last fetch (last stable offset under read_committed) minus"
           " the position, for the partitions held.", "livesum"),
    _gauge("groupkit_consumer_lag_seconds", GTP,
           "0 when caught up, else now minus the timestamp of the last record consumed.",
           "livemax"),
    _histogram("groupkit_fetch_duration_seconds", ("node",),
               "Fetch round trips, including the broker's long-poll wait."),
    _gauge("groupkit_last_poll_timestamp_seconds", G,
           "Unix time the application last returned from poll (the oldest over processes).",
           "livemin"),
    _histogram("groupkit_process_duration_seconds", G,
               "GroupConsumer: time to process one poll's records (process_batch, or the"
               " process calls for them)."),
    _counter("groupkit_process_errors_total", G,
             "GroupConsumer: records whose process (or process_batch) raised."),
    _counter("groupkit_connection_errors_total", ("broker",),
             "Failed connects and broken connections, by broker address."),
    # Exactly-once GroupConsumer (issue 28).
    _counter("groupkit_transactions_total", ("group", "result"),
             "Exactly-once GroupConsumer: transactions ended, result committed or aborted."),
    _histogram("groupkit_transaction_duration_seconds", G,
               "Exactly-once GroupConsumer: from a poll's transaction beginning to its end."),
    # Share groups (issue 30).
    _counter("groupkit_share_records_acquired_total", GT,
             "Share groups: records the broker delivered to this member (acquired for it)."),
    _counter("groupkit_share_records_redelivered_total", GT,
             "Share groups: acquired records with a delivery count above 1 (released,"
             " expired, or left behind by another member)."),
    _histogram("groupkit_share_delivery_count", GT,
               "Share groups: the delivery count of each record acquired.",
               _DELIVERY_BUCKETS),
    _counter("groupkit_share_records_acknowledged_total", ("group", "topic", "type", "result"),
             "Share groups: acknowledgements the broker answered, by type (ACCEPT, RELEASE,"
             " REJECT, GAP) and result (ok, or the error's name: INVALID_RECORD_STATE when"
             " the record was no longer this member's)."),
    _counter("groupkit_share_lock_expirations_total", GT,
             "Share groups: records whose acquisition lock ran out before they were"
             " acknowledged."),
)


def exported_names(spec: MetricSpec) -> tuple[str, ...]:
    """Every sample name ``spec`` appears as in a scrape (``_bucket``/``_sum``/``_count``...)."""
    if spec.kind == "histogram":
        return tuple(spec.name + s for s in ("_bucket", "_sum", "_count", "_created"))
    if spec.kind == "counter":
        return (spec.name, spec.name.removesuffix("_total") + "_created")
    return (spec.name,)


#: Every sample name groupkit exports (what a dashboard or an alert rule may use).
METRIC_NAMES: frozenset[str] = frozenset(n for spec in METRICS for n in exported_names(spec))


class MetricSet:
    """The prometheus-client objects of ``METRICS``, registered in ``registry``.

    Attributes are named after the metrics without the ``groupkit_`` prefix
    (``rebalances_total``, ``consumer_lag_records``, ...).
    """

    rebalances_total: Counter
    rebalance_duration_seconds: Histogram
    last_rebalance_timestamp_seconds: Gauge
    generation: Gauge
    member_state: Gauge
    assigned_partitions: Gauge
    partitions_revoked_total: Counter
    partitions_lost_total: Counter
    rebalance_callback_duration_seconds: Histogram
    join_duration_seconds: Histogram
    sync_duration_seconds: Histogram
    heartbeat_duration_seconds: Histogram
    heartbeat_errors_total: Counter
    last_heartbeat_timestamp_seconds: Gauge
    commit_duration_seconds: Histogram
    commit_errors_total: Counter
    committed_offset: Gauge
    records_consumed_total: Counter
    bytes_consumed_total: Counter
    consumer_lag_records: Gauge
    consumer_lag_seconds: Gauge
    fetch_duration_seconds: Histogram
    last_poll_timestamp_seconds: Gauge
    process_duration_seconds: Histogram
    process_errors_total: Counter
    connection_errors_total: Counter
    transactions_total: Counter
    transaction_duration_seconds: Histogram
    share_records_acquired_total: Counter
    share_records_redelivered_total: Counter
    share_delivery_count: Histogram
    share_records_acknowledged_total: Counter
    share_lock_expirations_total: Counter

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        for spec in METRICS:
            setattr(self, spec.attribute, _build(spec, registry))


def _build(spec: MetricSpec, registry: CollectorRegistry) -> Counter | Gauge | Histogram:
    if spec.kind == "counter":
        return Counter(spec.name, spec.help, spec.labels, registry=registry)
    if spec.kind == "gauge":
        assert spec.multiprocess_mode is not None, f"{spec.name} needs a multiprocess mode"
        return Gauge(spec.name, spec.help, spec.labels, registry=registry,
                     multiprocess_mode=spec.multiprocess_mode)  # type: ignore[arg-type]
    if spec.buckets is not None:
        return Histogram(spec.name, spec.help, spec.labels, registry=registry,
                         buckets=spec.buckets)
    return Histogram(spec.name, spec.help, spec.labels, registry=registry)
