"""``PrometheusMetrics``: a hook that turns groupkit's events into Prometheus metrics.

Pass it in ``hooks=[...]`` to a Consumer or GroupConsumer. It keeps the metrics of
``groupkit.metrics.definitions`` in its own ``CollectorRegistry`` (never the global one) unless
given one. Events arrive at most once per poll, fetch, heartbeat, commit or rebalance step, so
the cost per record is nil; label children are cached so a busy poll loop does no label lookups.

Under prometheus-client's multiprocess mode (``PROMETHEUS_MULTIPROC_DIR`` set before
``prometheus_client`` is first imported) every instance in one process shares one set of
metric objects: two objects with the same name would write the same slot of the process's
value file and overwrite each other's counts.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import attrs
from prometheus_client import CollectorRegistry

from groupkit.group.kip848.states import MemberState as ConsumerMemberState
from groupkit.group.states import MemberState
from groupkit.hooks import (
    BrokerUnreachable,
    CommitDone,
    CommitFailed,
    Event,
    FetchCompleted,
    GroupRequestDone,
    Joined,
    MemberStateChanged,
    PartitionProgress,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsProgressed,
    PartitionsRevoked,
    Polled,
    Processed,
    RebalanceFinished,
    ShareLocksExpired,
    ShareRecordsAcknowledged,
    ShareRecordsAcquired,
    TransactionEnded,
)
from groupkit.metrics.definitions import METRICS, MetricSet
from groupkit.metrics.multiprocess import multiprocess_dir

__all__ = ["PrometheusMetrics"]

#: Join/Sync answers that are steps of the protocol, not failed rebalances: a new member of a
#: v4+ group is always asked to rejoin with its id (KIP-394). The Java client counts every
#: failed join future; groupkit leaves this one out so a healthy group shows no failures.
_NOT_FAILURES = frozenset({"", "MEMBER_ID_REQUIRED"})
#: Every state a member can report: the classic protocol's, then those only the consumer
#: protocol (KIP-848) has (STABLE, LEAVING, CLOSED and FATAL are both's).
_STATES = tuple(dict.fromkeys([*(s.name for s in MemberState),
                               *(s.name for s in ConsumerMemberState)]))
#: The requests whose answers feed the heartbeat metrics, one per group protocol.
_HEARTBEATS = frozenset({"Heartbeat", "ConsumerGroupHeartbeat", "ShareGroupHeartbeat"})
_CALLBACKS = {PartitionsAssigned: "on_assigned", PartitionsRevoked: "on_revoked",
              PartitionsLost: "on_lost"}

#: How often the lag in seconds of partitions that are behind is brought up to date.
_SWEEP_S = 1.0

_shared_lock = threading.Lock()
_shared: MetricSet | None = None
_shared_in: list[CollectorRegistry] = []


def _shared_metrics(registry: CollectorRegistry | None) -> MetricSet:
    """The process-wide MetricSet of multiprocess mode, also registered in ``registry``."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = MetricSet(registry if registry is not None else CollectorRegistry())
            _shared_in.append(_shared.registry)
        elif registry is not None and not any(r is registry for r in _shared_in):
            for spec in METRICS:
                registry.register(getattr(_shared, spec.attribute))
            _shared_in.append(registry)
        return _shared


@attrs.define(eq=False)
class _Lag:
    """One held partition's lag as last written, with its gauge children."""

    records_child: Any
    records: int | None = None
    timestamp_ms: int = -1
    seconds: float | None = None
    seconds_child: Any = None

    def update_seconds(self, metrics: MetricSet, key: tuple[str, str, int], now: float) -> None:
        """0 when caught up, else the age of the last record consumed (no sample while nothing
        was consumed: the backlog's age is unknown)."""
        if self.records == 0:
            seconds = 0.0
        elif self.timestamp_ms >= 0:
            seconds = max(0.0, now - self.timestamp_ms / 1000)
        else:
            return
        if seconds != self.seconds:
            self.seconds = seconds
            if self.seconds_child is None:
                group, topic, partition = key
                self.seconds_child = metrics.consumer_lag_seconds.labels(group, topic,
                                                                         str(partition))
            self.seconds_child.set(seconds)


class PrometheusMetrics:
    """A hook (``Callable[[Event], None]``) feeding the groupkit metrics in ``registry``.

    ``registry`` defaults to a new private ``CollectorRegistry``; serve it with
    ``groupkit.metrics.serve(metrics.registry, port)``. Safe to call from any thread. Share one
    instance between consumers of different groups if you like; two members of the same group
    in one process should each have their own (their member state and lag would mix).
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        if multiprocess_dir() is not None:
            self.metrics = _shared_metrics(registry)
        else:
            self.metrics = MetricSet(registry if registry is not None else CollectorRegistry())
        self.registry: CollectorRegistry = registry if registry is not None \
            else self.metrics.registry
        self._multiprocess = multiprocess_dir() is not None
        self._lock = threading.Lock()
        self._states: dict[str, str] = {}
        self._children: dict[tuple[Any, ...], Any] = {}
        #: (group, topic) -> the records and bytes counters' children, for every poll.
        self._consumed: dict[tuple[str, str], tuple[Any, Any]] = {}
        #: The lag of each held partition, and the partitions given up (revoked or lost) and
        #: not assigned again, with the last report about them that came after (see
        #: ``_progressed``). Guarded by ``_lag_lock``: reports come from the fetcher thread,
        #: polls and rebalances from the application thread.
        self._lag: dict[tuple[str, str, int], _Lag] = {}
        self._given: dict[tuple[str, str, int], PartitionProgress | None] = {}
        self._lag_lock = threading.Lock()
        self._next_sweep = 0.0
        self._handlers: dict[type, Callable[[Any], None]] = {
            GroupRequestDone: self._group_request,
            RebalanceFinished: self._rebalance_finished,
            Joined: self._joined,
            MemberStateChanged: self._state_changed,
            PartitionsAssigned: self._assigned,
            PartitionsRevoked: self._revoked,
            PartitionsLost: self._lost,
            Polled: self._polled,
            PartitionsProgressed: self._progressed,
            Processed: self._processed,
            CommitDone: self._commit_done,
            CommitFailed: self._commit_failed,
            FetchCompleted: self._fetched,
            BrokerUnreachable: self._unreachable,
            TransactionEnded: self._transaction_ended,
            ShareRecordsAcquired: self._share_acquired,
            ShareRecordsAcknowledged: self._share_acknowledged,
            ShareLocksExpired: self._share_expired,
        }

    def __call__(self, event: Event) -> None:
        handler = self._handlers.get(type(event))
        if handler is not None:
            handler(event)

    def _child(self, attribute: str, *labels: Any) -> Any:
        """The cached label child of metric ``attribute`` (``labels()`` takes a lock)."""
        key = (attribute, *labels)
        child = self._children.get(key)
        if child is None:
            child = getattr(self.metrics, attribute).labels(*labels)
            self._children[key] = child
        return child

    # --- membership ----------------------------------------------------------------------------

    def _group_request(self, e: GroupRequestDone) -> None:
        if e.api in _HEARTBEATS:
            self._child("heartbeat_duration_seconds", e.group_id).observe(e.latency_s)
            if e.error:
                self._child("heartbeat_errors_total", e.group_id, e.error).inc()
            else:
                self._child("last_heartbeat_timestamp_seconds", e.group_id).set(time.time())
        elif e.api in ("JoinGroup", "SyncGroup"):
            if not e.error:
                name = "join_duration_seconds" if e.api == "JoinGroup" else "sync_duration_seconds"
                self._child(name, e.group_id).observe(e.latency_s)
            elif e.error not in _NOT_FAILURES:
                self._child("rebalances_total", e.group_id, "failed").inc()

    def _rebalance_finished(self, e: RebalanceFinished) -> None:
        self._child("rebalances_total", e.group_id, "ok").inc()
        self._child("rebalance_duration_seconds", e.group_id).observe(e.duration_s)
        self._child("last_rebalance_timestamp_seconds", e.group_id).set(time.time())
        self._child("generation", e.group_id).set(e.generation_id)

    def _joined(self, e: Joined) -> None:
        self._child("generation", e.group_id).set(e.generation_id)

    def _state_changed(self, e: MemberStateChanged) -> None:
        with self._lock:
            before = self._states.get(e.group_id)
            self._states[e.group_id] = e.state
        if before is None:
            for state in _STATES:
                self._child("member_state", e.group_id, state).set(0)
        elif before != e.state:
            self._child("member_state", e.group_id, before).set(0)
        self._child("member_state", e.group_id, e.state).set(1)
        if e.state == "CLOSED" and not self._multiprocess:
            # A member that left in order heartbeats and polls no more, and that is no alarm.
            # (In multiprocess mode the worker exits and is marked dead instead.)
            for attribute in ("last_heartbeat_timestamp_seconds", "last_poll_timestamp_seconds"):
                if self._children.pop((attribute, e.group_id), None) is not None:
                    getattr(self.metrics, attribute).remove(e.group_id)

    def _assigned(self, e: PartitionsAssigned) -> None:
        for topic, n in _per_topic(e.partitions).items():
            self._child("assigned_partitions", e.group_id, topic).inc(n)
        with self._lag_lock:
            for topic, partition in e.partitions:
                since = self._given.pop((e.group_id, topic, partition), None)
                if since is not None:
                    self._set_lag(e.group_id, since, time.time())
        self._callback(e)

    def _revoked(self, e: PartitionsRevoked) -> None:
        self._given_up(e.group_id, e.partitions)
        if e.partitions:
            self._child("partitions_revoked_total", e.group_id).inc(len(e.partitions))
        self._callback(e)

    def _lost(self, e: PartitionsLost) -> None:
        self._given_up(e.group_id, e.partitions)
        if e.partitions:
            self._child("partitions_lost_total", e.group_id).inc(len(e.partitions))
        self._callback(e)

    def _callback(self, e: PartitionsAssigned | PartitionsRevoked | PartitionsLost) -> None:
        self._child("rebalance_callback_duration_seconds", e.group_id,
                    _CALLBACKS[type(e)]).observe(e.callback_s)

    def _given_up(self, group: str, partitions: frozenset[tuple[str, int]]) -> None:
        """Partitions no longer held: their count drops and their lag is no longer ours."""
        for topic, n in _per_topic(partitions).items():
            self._child("assigned_partitions", group, topic).dec(n)
        with self._lag_lock:
            for topic, partition in partitions:
                self._drop_lag(group, topic, partition)

    def _drop_lag(self, group: str, topic: str, partition: int) -> None:
        self._given[(group, topic, partition)] = None
        lag = self._lag.pop((group, topic, partition), None)
        if lag is not None:
            labels = (group, topic, str(partition))
            for metric, child in ((self.metrics.consumer_lag_records, lag.records_child),
                                  (self.metrics.consumer_lag_seconds, lag.seconds_child)):
                if child is None:
                    continue
                if self._multiprocess:
                    # Labels cannot be removed in multiprocess mode; 0 adds nothing to the
                    # new owner's value under livesum/livemax.
                    child.set(0)
                else:
                    metric.remove(*labels)

    # --- share groups --------------------------------------------------------------------------

    def _share_acquired(self, e: ShareRecordsAcquired) -> None:
        self._child("share_records_acquired_total", e.group_id, e.topic).inc(e.records)
        histogram = self._child("share_delivery_count", e.group_id, e.topic)
        for count, records in e.delivery_counts:
            for _ in range(records):
                histogram.observe(count)
            if count > 1:
                self._child("share_records_redelivered_total", e.group_id, e.topic).inc(records)

    def _share_acknowledged(self, e: ShareRecordsAcknowledged) -> None:
        result = e.error or "ok"
        for kind, records in e.counts:
            self._child("share_records_acknowledged_total", e.group_id, e.topic, kind,
                        result).inc(records)

    def _share_expired(self, e: ShareLocksExpired) -> None:
        self._child("share_lock_expirations_total", e.group_id, e.topic).inc(e.records)

    # --- consuming -----------------------------------------------------------------------------

    def _polled(self, e: Polled) -> None:
        group = e.group_id or ""
        now = time.time()
        self._child("last_poll_timestamp_seconds", group).set(now)
        # Every poll's counts, as handed over: the counters are exact at every scrape.
        for p in e.partitions:
            counters = self._consumed.get((group, p.topic))
            if counters is None:
                counters = self._consumed[(group, p.topic)] = (
                    self._child("records_consumed_total", group, p.topic),
                    self._child("bytes_consumed_total", group, p.topic))
            if p.records:
                counters[0].inc(p.records)
            if p.size:
                counters[1].inc(p.size)
        if now >= self._next_sweep:
            self._sweep(group, now)

    def _progressed(self, e: PartitionsProgressed) -> None:
        """Where changed partitions stand, from the fetcher thread (in order, within 0.1 s of
        a change): the lag gauges."""
        group = e.group_id or ""
        now = time.time()
        with self._lag_lock:
            for p in e.partitions:
                key = (group, p.topic, p.partition)
                if key in self._given:
                    # Given up while this report was on its way (the fetcher thread tells
                    # after the fact): kept, and shown only if the partition comes back.
                    self._given[key] = p
                else:
                    self._set_lag(group, p, now)
        if now >= self._next_sweep:
            self._sweep(group, now)

    def _set_lag(self, group: str, p: PartitionProgress, now: float) -> None:
        """Bring one partition's lag gauges to ``p`` (the caller holds ``_lag_lock``)."""
        if p.log_end < 0:
            return
        key = (group, p.topic, p.partition)
        lag = self._lag.get(key)
        if lag is None:
            lag = self._lag[key] = _Lag(self.metrics.consumer_lag_records.labels(
                group, p.topic, str(p.partition)))
        if p.last_timestamp_ms >= 0:
            lag.timestamp_ms = p.last_timestamp_ms
        behind = max(0, p.log_end - p.position)
        if behind != lag.records:
            lag.records = behind
            lag.records_child.set(behind)
        lag.update_seconds(self.metrics, key, now)

    def _sweep(self, group: str, now: float) -> None:
        """Only partitions that changed are reported; the age of a backlog grows anyway."""
        self._next_sweep = now + _SWEEP_S
        with self._lag_lock:
            for key, lag in self._lag.items():
                if key[0] == group and lag.records:
                    lag.update_seconds(self.metrics, key, now)

    def _processed(self, e: Processed) -> None:
        self._child("process_duration_seconds", e.group_id).observe(e.duration_s)
        if e.failed:
            self._child("process_errors_total", e.group_id).inc(e.failed)

    def _transaction_ended(self, e: TransactionEnded) -> None:
        result = "committed" if e.committed else "aborted"
        self._child("transactions_total", e.group_id, result).inc()
        self._child("transaction_duration_seconds", e.group_id).observe(e.duration_s)

    def _commit_done(self, e: CommitDone) -> None:
        self._child("commit_duration_seconds", e.group_id).observe(e.latency_s)
        for topic, partition, offset in e.offsets:
            self._child("committed_offset", e.group_id, topic, str(partition)).set(offset)

    def _commit_failed(self, e: CommitFailed) -> None:
        self._child("commit_errors_total", e.group_id, e.error_type).inc()

    def _fetched(self, e: FetchCompleted) -> None:
        self._child("fetch_duration_seconds", str(e.node_id)).observe(e.latency_s)

    def _unreachable(self, e: BrokerUnreachable) -> None:
        self._child("connection_errors_total", e.broker).inc()


def _per_topic(partitions: Iterable[tuple[str, int]]) -> dict[str, int]:
    return collections.Counter(topic for topic, _ in partitions)
