"""``ShareConsumer``: consume as a member of a share group (KIP-932, "queues for Kafka").

Java's KafkaShareConsumer is the reference for names and semantics. Many members read the same
partitions; the broker hands each record to one member at a time, under an acquisition lock,
and every record is acknowledged on its own: ACCEPT (done), RELEASE (deliver it again, to any
member, with its delivery count one higher) or REJECT (never again). In "implicit"
acknowledgement mode the records of a poll are accepted by the next poll or commit; in
"explicit" mode the application acknowledges each record and must have acknowledged all of a
poll's records before it polls again.

Three threads work for one share consumer: the application's (the acknowledgement commit
callback runs on it, inside ``poll``, ``commit_sync`` and ``close``), the group runner's
(ShareGroupHeartbeat), and the share fetcher's (ShareFetch, ShareAcknowledge). Every call is
bounded by its timeout.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from types import TracebackType
from typing import Any

from assignors import TopicPartition
from groupkit.config import ShareConsumerConfig
from groupkit.errors import (
    ConfigError,
    GroupkitError,
    IllegalStateError,
    RequestTimeoutError,
    WakeupError,
)
from groupkit.group import Assigned, Coordinator, Fatal, GroupConfig, Left, Lost
from groupkit.group.outputs import Reported
from groupkit.group.share import ShareGroupMachine, ShareSubscription
from groupkit.hooks import Hook, PartitionProgress, Polled, emit
from groupkit.protocol.messages.share_fetch import ACQUIRE_BATCH_OPTIMIZED, ACQUIRE_RECORD_LIMIT
from groupkit.runtime.bell import Bell
from groupkit.runtime.cluster import Cluster
from groupkit.runtime.connection import BrokerConnection
from groupkit.runtime.group_runner import GroupRunner
from groupkit.runtime.share_fetcher import AckResult, ShareFetcher
from groupkit.runtime.share_records import ShareConsumerRecord
from groupkit.share import AcknowledgeType, FetchSettings, SharePartition

__all__ = ["AcknowledgementCommitCallback", "ShareConsumer", "ShareConsumerRecord"]

log = logging.getLogger(__name__)

#: ``callback(offsets, error)``: the broker's answer to acknowledgements of one partition,
#: ``offsets`` mapping the partition to the acknowledged offsets; ``error`` None when they were
#: applied (Java's AcknowledgementCommitCallback.onComplete).
AcknowledgementCommitCallback = Callable[[dict[TopicPartition, set[int]], Exception | None],
                                         None]

_GROUP_PURPOSE = "share-group"
#: Java's default close timeout.
_CLOSE_S = 30.0


class ShareConsumer:
    """A member of a share group: ``ShareConsumer(bootstrap_servers=..., group_id=...,
    share_acknowledgement_mode="implicit"|"explicit", **settings)``.

    Settings are the Java share consumer's, in snake_case (see
    ``groupkit.config.ShareConsumerConfig``); ``hooks`` receive runtime events
    (``groupkit.hooks``) for metrics. Not for use from several threads at once (``wakeup`` is
    the exception).
    """

    def __init__(self, *, hooks: Sequence[Hook] = (), **settings: Any) -> None:
        self.config = ShareConsumerConfig.from_kwargs(settings)
        self.hooks: list[Hook] = list(hooks)
        self._cluster = Cluster(self.config, hooks=self.hooks)
        self._bell = Bell()
        self._subscription = ShareSubscription()
        self._runner: GroupRunner | None = None
        self._machine: ShareGroupMachine | None = None
        self._fetcher: ShareFetcher | None = None
        self._callback: AcknowledgementCommitCallback | None = None
        #: The (topic id, partition) pairs the group assigned, and their names once known.
        self._units: frozenset[tuple[uuid.UUID, int]] = frozenset()
        self._named: frozenset[SharePartition] = frozenset()
        #: The units ``_named`` names all of (the assignment needs no naming until they change).
        self._named_units: frozenset[tuple[uuid.UUID, int]] = frozenset()
        #: The records the last poll handed over, by partition (implicit: accepted next time;
        #: explicit: must all be acknowledged before the next poll).
        self._delivered: dict[SharePartition, list[range]] = {}
        self._by_tp: dict[tuple[str, int], SharePartition] = {}
        #: Records acknowledged RENEW whose renewal the broker has not answered yet, and those
        #: it renewed, which the next poll hands back (Java's renewing and renewed records).
        self._renewing: dict[tuple[SharePartition, int], ShareConsumerRecord] = {}
        self._renewed: dict[tuple[SharePartition, int], ShareConsumerRecord] = {}
        self._reported: list[GroupkitError] = []
        self._fatal: GroupkitError | None = None
        self._woken = False
        self._closed = False
        self._user_lock = threading.RLock()

    # --- membership ----------------------------------------------------------------------------

    def subscribe(self, topics: Iterable[str]) -> None:
        """Join the share group and consume ``topics`` (replacing an earlier subscription)."""
        with self._entered("subscribe"):
            wanted = frozenset([topics] if isinstance(topics, str) else topics)
            if not wanted or not all(isinstance(t, str) and t for t in wanted):
                raise ConfigError(f"subscribe() needs topic names, not {sorted(wanted)!r}")
            self._cluster.add_topics(wanted)
            self._subscription.topics = wanted
            if self._runner is None:
                self._start(wanted)
            else:
                self._runner.request_rejoin("the subscription changed")

    def subscription(self) -> set[str]:
        """The topics subscribed to."""
        return set(self._subscription.topics)

    def assignment(self) -> set[TopicPartition]:
        """The partitions the share group assigned this member (groupkit's addition: Java's
        share consumer does not say). Other members may be given the same partitions."""
        return {TopicPartition(p.topic, p.partition) for p in self._named}

    @property
    def member_id(self) -> str | None:
        """The member id this consumer made up for the share group (None before subscribe);
        groupkit's addition, for logs and for telling members apart."""
        return None if self._machine is None else self._machine.member_id

    def unsubscribe(self) -> None:
        """Leave the share group; the records this member holds are released."""
        with self._entered("unsubscribe"):
            self._stop_member(self.config.default_api_timeout_ms / 1000)
            self._subscription.topics = frozenset()

    def _start(self, topics: frozenset[str]) -> None:
        c = self.config
        group = GroupConfig(
            group_id=c.group_id, max_poll_interval_ms=c.max_poll_interval_ms,
            retry_backoff_ms=max(1, c.retry_backoff_ms),
            retry_backoff_max_ms=max(1, c.retry_backoff_ms, c.retry_backoff_max_ms),
            client_rack=c.client_rack)
        machine = ShareGroupMachine(group, self._subscription)
        settings = FetchSettings(
            max_wait_ms=c.fetch_max_wait_ms, min_bytes=c.fetch_min_bytes,
            max_bytes=c.fetch_max_bytes, max_records=c.max_poll_records,
            batch_size=c.max_poll_records, partition_max_bytes=c.max_partition_fetch_bytes,
            acquire_mode=ACQUIRE_RECORD_LIMIT if c.share_acquire_mode == "record_limit"
            else ACQUIRE_BATCH_OPTIMIZED)
        self._fetcher = ShareFetcher(self._cluster, c.group_id, machine.member_id, settings,
                                     c.check_crcs, self.hooks, ready=self._bell.ring)
        self._machine = machine
        self._runner = GroupRunner(machine, self._any_broker, self._coordinator_connection,
                                   self.hooks, wakeup=self._bell.ring)
        self._fetcher.start()
        self._runner.start()

    def _any_broker(self) -> BrokerConnection:
        return self._cluster.connection(self._cluster.least_loaded_node(), _GROUP_PURPOSE)

    def _coordinator_connection(self, coordinator: Coordinator, purpose: str) -> BrokerConnection:
        self._cluster.remember_coordinator(self.config.group_id, coordinator.node_id,
                                           coordinator.host, coordinator.port)
        return self._cluster.connection(coordinator.node_id, purpose)

    # --- records -------------------------------------------------------------------------------

    def poll(self, timeout: float) -> list[ShareConsumerRecord]:
        """Records delivered to this member, at most ``max_poll_records``, waiting up to
        ``timeout`` seconds for some. Each carries ``delivery_count``.

        Implicit mode accepts the records of the previous poll first; explicit mode raises
        IllegalStateError if any of them is still unacknowledged. While records acknowledged
        RENEW wait for the broker's answer, a poll hands out nothing new; once renewed, they
        are what the poll returns (the same records, to be acknowledged again).
        """
        with self._entered("poll"):
            fetcher, runner = self._member()
            deadline = time.monotonic() + max(0.0, timeout)
            runner.application_polled()
            self._settle_last_poll()
            keepalive = self.config.max_poll_interval_ms / 2000
            noted = time.monotonic()
            if self._renewing:
                fetcher.wake()  # the renewals go now
            while True:
                self._look(fetcher, runner)
                if self._renewed:
                    return self._hand_back()
                delivered: dict[SharePartition, list[range]] = {}
                records = [] if self._renewing else \
                    fetcher.take(self.config.max_poll_records, delivered)
                if records:
                    self._delivered = delivered
                    for partition in delivered:
                        self._by_tp.setdefault((partition.topic, partition.partition),
                                               partition)
                    if self.hooks:
                        self._polled(records)
                    return records
                self._check_woken()
                now = time.monotonic()
                left = deadline - now
                if left <= 0:
                    if self.hooks:
                        self._polled(records)
                    return []
                if now - noted >= keepalive:
                    runner.application_polled()  # a long poll is a poll, for the interval
                    noted = now
                self._bell.wait(min(left, keepalive))

    def acknowledge(self, record: ShareConsumerRecord,
                    type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:  # noqa: A002
        """Acknowledge one delivered record (explicit mode); it is sent with the next poll,
        ``commit_sync`` or ``commit_async``. Java's name for the argument is ``type``.

        RENEW (Kafka 4.2+, KIP-1222) asks the broker to extend the record's acquisition lock:
        once renewed, a poll hands the record back, to be acknowledged again; until then it
        cannot be acknowledged. If the broker refuses, the callback and ``commit_sync`` say
        so and the record is not handed back. A leader older than Kafka 4.2 makes this raise
        FeatureUnsupportedError."""
        with self._entered("acknowledge"):
            if not self.config.explicit:
                raise IllegalStateError(
                    "acknowledge() needs share_acknowledgement_mode='explicit'; in implicit mode"
                    " every record of a poll is accepted by the next poll or commit")
            kind = AcknowledgeType(type)
            fetcher, _ = self._member()
            partition = self._by_tp.get((record.topic, record.partition))
            if partition is None:
                raise IllegalStateError(
                    f"record {record.topic}-{record.partition}@{record.offset} was not"
                    " delivered to this share consumer")
            key = (partition, record.offset)
            if key in self._renewed:
                raise IllegalStateError(
                    f"record {record.topic}-{record.partition}@{record.offset} was renewed and"
                    " is not handed back yet: acknowledge it once a poll returns it again")
            if kind is AcknowledgeType.RENEW:
                fetcher.check_renewal(partition)
                fetcher.acknowledge(partition, record.offset, kind, record.delivery_count)
                self._renewing[key] = record
                return
            fetcher.acknowledge(partition, record.offset, kind)
            self._renewing.pop(key, None)  # a RENEW taken back before it was sent

    def acquisition_lock_timeout_ms(self) -> int | None:
        """How long the broker locks a record it hands this member, in ms, as the last answer
        that said it named it (renewals included); None before any did (Java's
        acquisitionLockTimeoutMs(), an Optional there)."""
        return None if self._fetcher is None else self._fetcher.lock_timeout_ms

    def commit_sync(self, timeout: float | None = None
                    ) -> dict[TopicPartition, GroupkitError | None]:
        """Send every acknowledgement not yet sent and wait (up to ``timeout`` seconds, by
        default ``default_api_timeout_ms``) for the brokers' answers: each partition maps to
        None when applied, else the error (InvalidRecordStateError: the records were not this
        member's any more, their lock had run out). Partitions not answered in time map to
        RequestTimeoutError. Implicit mode accepts the last poll's records first."""
        with self._entered("commit_sync"):
            fetcher, _ = self._member()
            wait = self.config.default_api_timeout_ms / 1000 if timeout is None else timeout
            self._settle_last_poll(commit=True)
            ticket = fetcher.commit()
            done = ticket.done.wait(max(0.0, wait))
            out: dict[TopicPartition, GroupkitError | None] = {}
            for result in ticket.results:
                tp = TopicPartition(result.partition.topic, result.partition.partition)
                if out.get(tp) is None:
                    out[tp] = result.error
            if not done:
                late = RequestTimeoutError(
                    f"commit_sync: no answer within {wait:.1f} s; the acknowledgements are on"
                    " their way and their results go to the acknowledgement commit callback")
                for node in set(ticket.nodes):
                    for p in ticket.partitions.get(node, ()):
                        out.setdefault(TopicPartition(p.topic, p.partition), late)
            self._run_callbacks(fetcher)
            return out

    def commit_async(self) -> None:
        """Send every acknowledgement not yet sent, now; the results go to the callback."""
        with self._entered("commit_async"):
            fetcher, _ = self._member()
            self._settle_last_poll(commit=True)
            fetcher.commit()

    def set_acknowledgement_commit_callback(
            self, callback: AcknowledgementCommitCallback | None) -> None:
        """Call ``callback(offsets, error)`` (on the application thread, inside poll,
        commit_sync or close) for each partition's acknowledgements the broker answered."""
        self._callback = callback

    def wakeup(self) -> None:
        """End a blocked ``poll`` (or the next one) with WakeupError; safe from any thread."""
        self._woken = True
        self._bell.ring()

    def close(self, timeout: float | None = None) -> None:
        """Acknowledge what is left (implicit: accept the last poll's records; explicit:
        release the ones not acknowledged), release what was fetched but never handed over,
        close the share sessions, leave the group, and close the connections; within
        ``timeout`` seconds (30 by default). Closing twice does nothing."""
        if self._closed:
            return
        with self._entered("close", check=False):
            self._stop_member(_CLOSE_S if timeout is None else max(0.0, timeout))
            self._closed = True
            self._cluster.close()

    def __enter__(self) -> ShareConsumer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # --- internals -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _entered(self, name: str, *, check: bool = True) -> Iterator[None]:
        """One application thread at a time (Java's acquire()); a closed consumer refuses."""
        if not self._user_lock.acquire(False):
            raise IllegalStateError(
                f"ShareConsumer.{name}() was called while another thread is inside this share"
                " consumer: use one per thread (wakeup() is safe from any thread)")
        try:
            if check and self._closed:
                raise IllegalStateError(f"ShareConsumer.{name}(): the share consumer is closed")
            yield
        finally:
            self._user_lock.release()

    def _member(self) -> tuple[ShareFetcher, GroupRunner]:
        if self._fatal is not None:
            raise self._fatal
        if self._fetcher is None or self._runner is None:
            raise IllegalStateError("subscribe() to topics first")
        return self._fetcher, self._runner

    def _check_woken(self) -> None:
        if self._woken:
            self._woken = False
            raise WakeupError("ShareConsumer.wakeup() was called")

    def _look(self, fetcher: ShareFetcher, runner: GroupRunner) -> None:
        """Take the group's news, raise what stopped the member, and run the callbacks."""
        for out in runner.events():
            if isinstance(out, Assigned):
                self._units = frozenset(out.units)  # type: ignore[arg-type]
            elif isinstance(out, Lost):
                self._units = self._units - out.units
            elif isinstance(out, Left):
                self._units = frozenset()
            elif isinstance(out, Fatal):
                self._fatal = out.error
            elif isinstance(out, Reported):
                self._reported.append(out.error)
        self._name_assignment(fetcher)
        error = self._fatal or fetcher.error
        if error is not None:
            self._fatal = error
            raise error
        self._run_callbacks(fetcher)
        if self._reported:
            raise self._reported.pop(0)

    def _name_assignment(self, fetcher: ShareFetcher) -> None:
        """Give the fetcher the assignment by name; topics metadata does not name yet wait."""
        if self._units == self._named_units:
            return
        metadata = self._cluster.metadata
        unknown = [tid for tid, _ in self._units if metadata.topic_name(tid) is None]
        if unknown and not self._cluster.stale:
            self._cluster.request_refresh()  # the fetcher's thread refreshes
        named = frozenset(
            SharePartition(name, p, tid) for tid, p in self._units
            if (name := metadata.topic_name(tid)) is not None)
        if not unknown:
            self._named_units = self._units
        if named != self._named:
            self._named = named
            self._by_tp.update({(p.topic, p.partition): p for p in named})
            fetcher.assign(named)

    def _polled(self, records: list[ShareConsumerRecord]) -> None:
        """One Polled event: the records handed over by partition (a share member has no
        position or lag of its own: they are -1)."""
        counts: dict[tuple[str, int], list[int]] = {}
        for r in records:
            entry = counts.setdefault((r.topic, r.partition), [0, -1])
            entry[0] += 1
            entry[1] = r.timestamp
        emit(self.hooks, Polled(self.config.group_id, len(records), tuple(
            PartitionProgress(topic, partition, n, 0, -1, -1, ts)
            for (topic, partition), (n, ts) in counts.items())))

    def _settle_last_poll(self, commit: bool = False) -> None:
        """Before a poll or commit: implicit mode accepts the last poll's records; a poll in
        explicit mode refuses to go on while some are unacknowledged (Java's rule)."""
        if not self._delivered or self._fetcher is None:
            return
        if not self.config.explicit:
            self._fetcher.acknowledge_all(self._delivered, AcknowledgeType.ACCEPT)
            self._delivered = {}
        elif not commit:
            # Records renewed (or being renewed) since are acknowledged until handed back.
            left = self._fetcher.unacknowledged(self._delivered,
                                                {*self._renewing, *self._renewed})
            if left:
                raise IllegalStateError(
                    f"{left} record(s) of the last poll are not acknowledged: in explicit mode"
                    " acknowledge() every record (ACCEPT, RELEASE or REJECT) before polling"
                    " again")
            self._delivered = {}

    def _hand_back(self) -> list[ShareConsumerRecord]:
        """The renewed records, as a poll's records (Java hands them back alone)."""
        renewed, self._renewed = self._renewed, {}
        self._delivered = _runs(renewed)
        records = list(renewed.values())
        if self.hooks:
            self._polled(records)
        return records

    def _renewal_answered(self, result: AckResult) -> None:
        """The broker's answer to RENEWs of one partition: renewed records go back to the
        application; refused ones are gone (the callback has the error)."""
        for offset, kind in result.acks.items():
            if kind == AcknowledgeType.RENEW:
                record = self._renewing.pop((result.partition, offset), None)
                if record is not None and result.error is None:
                    self._renewed[(result.partition, offset)] = record

    def _run_callbacks(self, fetcher: ShareFetcher) -> None:
        results = fetcher.results()
        callback = self._callback
        for result in results:
            if self._renewing:
                self._renewal_answered(result)
            if result.error is not None and not isinstance(result.error, RequestTimeoutError):
                log.debug("share consumer of group %s: acknowledgements of %s-%d: %s",
                          self.config.group_id, result.partition.topic,
                          result.partition.partition, result.error)
            if callback is not None:
                callback(_offsets(result), result.error)

    def _stop_member(self, timeout: float) -> None:
        fetcher, runner = self._fetcher, self._runner
        if fetcher is None or runner is None:
            return
        deadline = time.monotonic() + timeout
        if self.config.explicit and self._delivered:
            # Only what is still held and unacknowledged is released.
            fetcher.acknowledge_all(self._delivered, AcknowledgeType.RELEASE)
        # Renewed, never handed back: released.
        fetcher.acknowledge_all(_runs(self._renewed), AcknowledgeType.RELEASE)
        self._renewing.clear()
        self._renewed.clear()
        self._settle_last_poll(commit=True)
        self._delivered = {}
        fetcher.release_buffered()
        if not fetcher.close(max(0.0, deadline - time.monotonic())):
            log.warning("share consumer of group %s: the share sessions did not all close"
                        " within the close timeout; the brokers release their records when the"
                        " sessions time out", self.config.group_id)
        self._run_callbacks(fetcher)
        if not runner.leave(max(0.0, deadline - time.monotonic()), "the share consumer is"
                            " closing"):
            log.warning("share consumer of group %s: leaving the share group did not finish"
                        " within the close timeout; the coordinator drops the member when its"
                        " session times out", self.config.group_id)
        self._fetcher = self._runner = self._machine = None
        self._units = frozenset()
        self._named = frozenset()
        self._named_units = frozenset()


def _runs(records: Iterable[tuple[SharePartition, int]]) -> dict[SharePartition, list[range]]:
    """Records by (partition, offset) as a poll's delivered runs, one offset each."""
    out: dict[SharePartition, list[range]] = {}
    for partition, offset in records:
        out.setdefault(partition, []).append(range(offset, offset + 1))
    return out


def _offsets(result: AckResult) -> dict[TopicPartition, set[int]]:
    return {TopicPartition(result.partition.topic, result.partition.partition):
            set(result.acks)}
