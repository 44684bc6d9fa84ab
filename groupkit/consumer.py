"""``Consumer``: subscribe to topics as a member of a group (or assign partitions by hand) and
poll records.

Three threads work for one consumer: the application's (every listener callback and commit
callback runs on it, inside ``poll``/``close``), the group runner's (heartbeats, joins), and
the fetcher's (prefetching). The application never waits on a lock they hold across I/O.
One application thread at a time is inside the consumer (``_one_thread``, Java's acquire()).

Over 600 lines because it is the whole public surface of the Java client's KafkaConsumer that
groupkit offers, each method with the Java behaviour it follows; the work itself is delegated
to groupkit.runtime (fetcher, offsets, group runner), and splitting the class would only
scatter that surface.
"""

from __future__ import annotations

import functools
import logging
import re
import sys
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from types import TracebackType
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, cast

from assignors import ClusterView, RebalanceProtocol, TopicPartition
from groupkit.config import ConsumerConfig
from groupkit.errors import (
    CommitFailedError,
    ConfigError,
    GroupkitError,
    IllegalStateError,
    RequestTimeoutError,
    WakeupError,
)
from groupkit.group import (
    Assigned,
    Coordinator,
    Fatal,
    GroupConfig,
    GroupMachine,
    Left,
    Lost,
    Revoked,
)
from groupkit.group.consumer_protocol import ConsumerProtocol
from groupkit.group.member_machine import MemberMachine
from groupkit.runtime.bell import Bell
from groupkit.runtime.cluster import Cluster
from groupkit.runtime.connection import BrokerConnection
from groupkit.runtime.group_runner import GroupRunner
from groupkit.runtime.metadata import ClusterMetadata

if TYPE_CHECKING:
    from groupkit.group.kip848 import SubscriptionHolder
    from groupkit.hooks import Hook
    from groupkit.runtime.fetched import ConsumerRecord
    from groupkit.runtime.fetcher import Fetcher
    from groupkit.runtime.offsets import CommitCallback, OffsetStore
    from groupkit.runtime.pattern_watch import PatternWatch
    from groupkit.values import ConsumerGroupMetadata, OffsetAndMetadata

__all__ = ["Consumer", "ConsumerRebalanceListener", "ConsumerRecord"]

log = logging.getLogger(__name__)

#: The fetch side's entry module: loaded once a consumer first fetches (see ``_fetch_side``).
_FETCH_SIDE = "groupkit.runtime.fetcher"
#: How long after a join begins the fetch side's preload starts (see ``_preload_fetch_side``).
_PRELOAD_AFTER_S = 0.05
_P = ParamSpec("_P")
_R = TypeVar("_R")


def _one_thread(method: Callable[Concatenate[Consumer, _P], _R]
                ) -> Callable[Concatenate[Consumer, _P], _R]:
    """Java's ``KafkaConsumer.acquire()``/``release()`` around a public method: a call while
    another thread is inside one raises IllegalStateError (Java's
    ConcurrentModificationException) instead of racing it; the thread inside may call in again
    (a listener's commit). Only ``wakeup()`` and the read-only accessors skip it.

    ``_user_lock`` is an RLock taken without blocking: its owner's thread takes it again (the
    reentrant call), any other thread is refused at once, and neither needs a thread id."""

    @functools.wraps(method)
    def guarded(self: Consumer, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        lock = self._user_lock
        if not lock.acquire(False):
            raise IllegalStateError(
                f"Consumer.{method.__name__}() was called while another thread is inside this"
                " consumer: it is not safe for use from several threads at once; use one"
                " Consumer per thread, and call wakeup() (safe from any thread) to end another"
                " thread's poll")
        try:
            return method(self, *args, **kwargs)
        finally:
            lock.release()

    return guarded




def _fetch_side() -> tuple[type[Fetcher], type[OffsetStore]]:
    """The fetcher's and the offset store's classes, imported at their first use.

    They bring the Fetch, ListOffsets, OffsetFetch and OffsetCommit schemas and the record
    readers, about a quarter of what importing this module once cost, none of which a member
    needs before its first assignment: a fresh process sends its JoinGroup that much sooner.
    ``_preload_fetch_side`` loads them meanwhile, while the coordinator holds the join.
    """
    from groupkit.runtime.fetcher import Fetcher
    from groupkit.runtime.offsets import OffsetStore

    return Fetcher, OffsetStore


def _preload_fetch_side() -> None:
    """Import the fetch side on a thread that would otherwise wait for the broker (see
    ``Consumer._joining``), so the first assignment finds it loaded.

    It starts ``_PRELOAD_AFTER_S`` after the join began: importing holds the GIL for tens of
    milliseconds, and the runner thread, which connects to the coordinator and sends the
    JoinGroup right after it calls ``joining``, would wait for the GIL at each step of that
    (a fresh member's JoinGroup went out 20 ms later so). The coordinator holds a new group's
    JoinGroup for its initial rebalance delay (Kafka's group.initial.rebalance.delay.ms, 3 s
    by default) and any rebalance until the members rejoin, so the import still ends first.

    Python's per-module import locks let the application thread import the same modules at
    the same time (it then waits for this import to finish). A failure is not this thread's
    to report: the module is left unloaded, and the use imports it again and raises the error
    on the application's thread, as an eager import would have at construction."""
    if _FETCH_SIDE in sys.modules:
        return
    time.sleep(_PRELOAD_AFTER_S)
    try:
        _fetch_side()
    except Exception as exc:
        log.debug("preloading the fetch side failed (%r); it is imported again at its use", exc)


def __getattr__(name: str) -> Any:
    # ConsumerRecord is this module's (``__all__``), but it lives with the fetch side, which
    # loads at first use (``_fetch_side``): PEP 562 gives it on request.
    if name == "ConsumerRecord":
        from groupkit.runtime.fetched import ConsumerRecord

        return ConsumerRecord
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ConsumerRebalanceListener:
    """Override the methods you need; each runs on the application thread inside ``poll``.

    ``on_partitions_revoked`` runs before partitions are given up (commit what you processed);
    ``on_partitions_lost`` when they were taken without an orderly hand-over (do not commit).
    """

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        """These partitions are about to be given to someone else."""

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        """These partitions are newly this consumer's."""

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        """These partitions already belong to someone else; their commits would fail."""


def _call(listener: Any, name: str, partitions: set[TopicPartition]) -> None:
    method = getattr(listener, name, None) if listener is not None else None
    if method is not None:
        method(set(partitions))


class Consumer:
    """A Kafka consumer: ``Consumer(bootstrap_servers=..., group_id=..., **settings)``.

    Settings are the Java client's, in snake_case (see ``groupkit.config.ConsumerConfig``).
    ``hooks`` receive runtime events (``groupkit.hooks``) for metrics.
    """

    def __init__(self, *, hooks: Sequence[Hook] = (), **settings: Any) -> None:
        self.config = ConsumerConfig.from_kwargs(settings)
        self.hooks: list[Hook] = list(hooks)
        self._cluster = Cluster(self.config,
                                allow_auto_topic_creation=self.config.allow_auto_create_topics,
                                hooks=self.hooks)
        # What a waiting ``poll`` waits on, rung (on their threads) by the fetcher, the group
        # runner and finished async commits: cheaper than a Condition's wait, which makes a
        # new lock and runs ~15 Python lines on every wakeup of an idle poll.
        self._bell = Bell()
        self._runner: GroupRunner | None = None
        #: Set by the runner (on its thread) before it rings for an event it queued; a look
        #: clears it before taking the events, so an idle poll skips asking the runner.
        self._group_news = False
        #: Set by ``wakeup()`` (any thread or a signal handler); the next look of a poll clears
        #: it and raises WakeupError.
        self._woken = False
        #: The offset store and the fetcher (with its thread), built at their first use
        #: (``_build_fetch_side``): a subscribing member's first assignment, ``assign()``, or
        #: any method that needs them. Until then no partition is this consumer's.
        self._offsets_built: OffsetStore | None = None
        self._fetcher_built: Fetcher | None = None
        self._protocol: ConsumerProtocol | None = None
        #: A classic-protocol pattern subscription's matcher (``subscribe(pattern=...)``).
        self._pattern_watch: PatternWatch | None = None
        #: The subscription a consumer-protocol member sends (group_protocol="consumer").
        self._subscription: SubscriptionHolder | None = None
        self._listener: Any = None
        self._assigned: set[TopicPartition] = set()
        self._manual = False
        self._closed = False
        self._fatal: GroupkitError | None = None
        self._view_lock = threading.Lock()
        #: Held while a thread is inside a public method (see ``_one_thread``).
        self._user_lock = threading.RLock()
        self._view: Future[ClusterMetadata] | None = None
        self._next_auto_commit = time.monotonic() + self.config.auto_commit_interval_ms / 1000
        #: The longest a poll waits before it notes itself as a poll again (see ``poll``).
        self._keepalive_s = self.config.max_poll_interval_ms / 2000

    @property
    def _offsets(self) -> OffsetStore:
        offsets = self._offsets_built
        return offsets if offsets is not None else self._build_fetch_side()[1]

    @property
    def _fetcher(self) -> Fetcher:
        fetcher = self._fetcher_built
        return fetcher if fetcher is not None else self._build_fetch_side()[0]

    def _build_fetch_side(self) -> tuple[Fetcher, OffsetStore]:
        """Build the offset store and the fetcher, and start the fetcher's thread (the
        application's thread only: every caller is inside a public method)."""
        fetcher_class, store_class = _fetch_side()
        offsets = store_class(self._cluster, self.config, lambda: self._runner, self.hooks,
                              wakeup=self._bell.ring)
        fetcher = fetcher_class(self._cluster, self.config, offsets, self.hooks,
                                wakeup=self._bell.ring)
        fetcher.start()
        self._offsets_built, self._fetcher_built = offsets, fetcher
        return fetcher, offsets

    # --- membership ----------------------------------------------------------------------------

    @_one_thread
    def subscribe(self, topics: Iterable[str] = (), listener: Any = None, *,
                  pattern: str | None = None) -> None:
        """Join ``group_id`` and consume ``topics``, or the topics matching ``pattern``;
        ``listener`` hears about rebalances.

        ``pattern`` is a regular expression a topic's whole name must match. With
        ``group_protocol="consumer"`` it goes to the group coordinator as the member's
        SubscribedTopicRegex (ConsumerGroupHeartbeat v1, Kafka 4.0+; RE2/J syntax), as Java's
        ``subscribe(SubscriptionPattern)`` sends it, and the broker resolves it, also for
        topics created later. With the classic protocol the consumer matches it itself (Python
        ``re`` syntax), as Java's ``subscribe(Pattern)`` does: against every topic's name but
        Kafka's internal ones, now and every ``metadata_max_age_ms``, rejoining when the
        matching set changes (``groupkit.runtime.pattern_watch``).
        """
        self._check_open()
        if self._manual:
            raise IllegalStateError("assign() was used: a consumer either subscribes or assigns")
        if self.config.group_id is None:
            raise ConfigError("subscribe() needs a group_id; pass group_id=... or use assign()")
        wanted = sorted(set([topics] if isinstance(topics, str) else topics))
        compiled: re.Pattern[str] | None = None
        if pattern is not None:
            if wanted or not isinstance(pattern, str) or not pattern:
                raise ConfigError("subscribe() takes topic names or one non-empty pattern,"
                                  " not both")
            if self.config.group_protocol != "consumer":
                from groupkit.runtime.pattern_watch import compile_pattern  # only for one

                compiled = compile_pattern(pattern)
        elif not wanted:
            raise ConfigError("subscribe() needs at least one topic")
        self._listener = listener
        self._cluster.add_topics(wanted)
        if self._pattern_watch is not None:
            self._pattern_watch.stop()
            self._pattern_watch = None
        if self._runner is None:
            self._start_group(wanted, pattern, start=compiled is None)
        elif compiled is None:
            if self._subscription is not None:
                self._subscription.subscribe(wanted, pattern)
            else:
                assert self._protocol is not None
                self._protocol.subscribe(wanted)
            if self._runner.started:
                self._runner.request_rejoin("the subscription changed")
            else:  # a classic pattern subscription whose first match never came
                self._runner.start()
        if compiled is not None:
            self._watch_pattern(compiled)

    def _watch_pattern(self, pattern: re.Pattern[str]) -> None:
        """Classic protocol: subscribe to the topics ``pattern`` matches, now and as they
        change; the membership starts with the first match (Java joins once its first metadata
        with every topic is in)."""
        runner, protocol = self._runner, self._protocol
        assert runner is not None and protocol is not None

        def matched(names: list[str]) -> None:
            protocol.subscribe(names)
            self._cluster.add_topics(names)
            if not runner.started:
                runner.start()
            else:
                runner.request_rejoin(f"the topics matching pattern {pattern.pattern!r} changed")

        from groupkit.runtime.pattern_watch import PatternWatch

        self._pattern_watch = PatternWatch(self._cluster, pattern,
                                           self.config.metadata_max_age_ms / 1000, matched)
        self._pattern_watch.start()

    def _start_group(self, topics: list[str], pattern: str | None, start: bool = True) -> None:
        c = self.config
        assert c.group_id is not None
        group = GroupConfig(
            group_id=c.group_id, session_timeout_ms=c.session_timeout_ms,
            heartbeat_interval_ms=c.heartbeat_interval_ms,
            max_poll_interval_ms=c.max_poll_interval_ms,
            rebalance_timeout_ms=c.effective_rebalance_timeout_ms,
            retry_backoff_ms=max(1, c.retry_backoff_ms),
            retry_backoff_max_ms=max(1, c.retry_backoff_ms, c.retry_backoff_max_ms),
            group_instance_id=c.group_instance_id, client_rack=c.client_rack,
            leave_group_on_close=c.sends_leave_on_close)
        machine: MemberMachine
        joining: Callable[[], None] = _preload_in_background
        if c.group_protocol == "consumer":
            # KIP-848: the coordinator assigns; the member only says what it subscribes to.
            # Imported here: a classic member (the default) does not load that machine.
            from groupkit.group.kip848 import ConsumerGroupMachine, SubscriptionHolder

            subscription = SubscriptionHolder()
            subscription.subscribe(topics, pattern)
            machine = ConsumerGroupMachine(group, subscription, c.group_remote_assignor)
            self._subscription = subscription
        else:
            protocol = ConsumerProtocol(c.assignors, cluster_view=self._cluster_view,
                                        rack=c.client_rack)
            protocol.subscribe(topics)
            machine = GroupMachine(group, protocol)
            self._protocol = protocol
            joining = self._joining
        self._runner = GroupRunner(machine, self._any_broker, self._coordinator_connection,
                                   self.hooks, wakeup=self._on_group_news, joining=joining)
        if start:
            self._runner.start()

    @_one_thread
    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Consume exactly ``partitions``, with no group membership (commits still need a
        group_id)."""
        self._check_open()
        if self._runner is not None:
            raise IllegalStateError("subscribe() was used: a consumer either subscribes or assigns")
        self._manual = True
        self._assigned = {TopicPartition(*tp) for tp in partitions}
        self._fetcher.assign(self._assigned)

    def assignment(self) -> set[TopicPartition]:
        """The partitions this consumer holds now."""
        return set(self._assigned)

    @property
    def rebalance_protocol(self) -> RebalanceProtocol | None:
        """EAGER or COOPERATIVE once subscribed (fixed by the assignors; always COOPERATIVE
        with group_protocol="consumer", whose rebalances move only what changes owner),
        else None."""
        if self._subscription is not None:
            return RebalanceProtocol.COOPERATIVE
        return self._protocol.rebalance_protocol if self._protocol is not None else None

    @property
    def member_id(self) -> str | None:
        """The member id the coordinator gave, once joined."""
        return self._runner.machine.member_id if self._runner is not None else None

    def group_metadata(self, *, current: bool = False) -> ConsumerGroupMetadata:
        """This member's group, generation, member id and instance id, for
        ``Producer.send_offsets_to_transaction`` (KIP-447): the coordinator refuses a
        transaction's offsets from a member that is no longer the one it names. Generation -1
        and an empty member id before the member has joined (as Java's groupMetadata()).

        ``current=True`` (groupkit's addition) raises CommitFailedError instead when the member
        is not in a settled generation (rebalancing, or out of the group): what the coordinator
        would refuse, refused without the round trip, and on brokers that do not check."""
        from groupkit.values import ConsumerGroupMetadata  # for transactions only

        group_id = self.config.group_id
        if group_id is None:
            raise IllegalStateError("group_metadata() needs a consumer with a group_id")
        runner = self._runner
        if current and runner is None:
            raise CommitFailedError("group_metadata(current=True): the consumer is not"
                                    " subscribed, so it is in no group generation")
        if runner is not None:
            try:
                fence = runner.commit_fence()
            except CommitFailedError:
                if current:
                    raise
                # Rebalancing: the generation joined last, as Java's snapshot gives; the
                # coordinator refuses it if the group has moved on.
                machine = runner.machine
                return ConsumerGroupMetadata(group_id, machine.generation_id, machine.member_id,
                                             self.config.group_instance_id)
            return ConsumerGroupMetadata(group_id, fence.generation_id, fence.member_id,
                                         fence.group_instance_id)
        return ConsumerGroupMetadata(group_id, -1, "", self.config.group_instance_id)

    def brokers_answered(self) -> bool:
        """Whether any broker has answered this consumer yet (a connection's handshake done)."""
        return self._cluster.reachability.answered

    def unreachable_brokers(self) -> dict[str, str]:
        """Each broker address that does not answer now, with the last reason."""
        return self._cluster.reachability.failures()

    # --- polling -------------------------------------------------------------------------------

    @_one_thread
    def poll(self, timeout: float = 0.0) -> list[ConsumerRecord]:
        """Records ready within ``timeout`` seconds (possibly none); runs listener callbacks."""
        self._check_open()
        # The runner is set before the poll or never: an idle member's polls call nothing that
        # has nothing to do.
        runner = self._runner
        if not self._assigned and runner is None and not self._manual:
            raise IllegalStateError("poll() needs subscribe() or assign() first")
        deadline = time.monotonic() + max(0.0, timeout)
        if runner is not None:
            runner.application_polled()
        auto_commit = self.config.enable_auto_commit and runner is not None
        bell = self._bell
        while True:
            # Take any ring from before this look: the look sees whatever rang it.
            bell.wait(0)
            if self._woken:
                self._woken = False
                raise WakeupError("poll() was ended by wakeup(); the records it would have"
                                  " returned stay buffered for the next poll")
            if self._group_news or self._fatal is not None:
                self._handle_group_events()
            # Until the fetch side is built nothing is assigned and no commit was made.
            offsets, fetcher = self._offsets_built, self._fetcher_built
            if offsets is not None:
                offsets.run_callbacks()
            if auto_commit:
                self._maybe_auto_commit(deadline)
            records = fetcher.take(self.config.max_poll_records) if fetcher is not None else []
            if records:
                if self.hooks:
                    self._polled(len(records))
                return records
            now = time.monotonic()
            if now >= deadline:
                break
            wait = deadline - now
            short = False  # the wait ends before the deadline, for the look after it
            if auto_commit:
                commit_in = max(0.0, self._next_auto_commit - now)
                if commit_in < wait:
                    wait, short = commit_in, True
            if wait > self._keepalive_s and runner is not None:
                # A poll longer than max_poll_interval_ms is still polling: Java's poll calls
                # coordinator.poll (which restarts the poll timer) every time its wait ends.
                wait, short = self._keepalive_s, True
            if not bell.wait(wait) and not short:
                # The wait ran out at the poll's deadline and nothing woke it: records, errors,
                # group events and finished commits all wake it, so another look would find
                # nothing. Java's poll likewise returns when its timer expires.
                break
            if short and runner is not None:
                runner.application_polled()
        if self.hooks:
            self._polled(0)
        return []

    def wakeup(self) -> None:
        """End the ``poll`` that is waiting with ``WakeupError``, or the next one if none is;
        safe from any thread or a signal handler.

        As Java's ``KafkaConsumer.wakeup()`` does for ``poll``; only ``poll`` raises it here
        (commits and lookups keep their own timeouts), so a stop never fails a commit.
        """
        self._woken = True
        self._bell.ring()

    def _polled(self, count: int) -> None:
        """One Polled event per poll (never one per record), with what it handed over from
        each partition: counted as handed over, so counters are exact at every scrape.
        Positions and log ends reach the hooks from the fetcher thread. Only with hooks."""
        from groupkit.hooks import Polled, emit  # the events load with the first hook's

        fetcher = self._fetcher_built
        emit(self.hooks, Polled(self.config.group_id, count,
                                fetcher.handed() if fetcher is not None else ()))

    def _callback(self, name: str, partitions: set[TopicPartition]) -> None:
        """Call the listener's ``name`` and report it (with its duration) to the hooks."""
        started = time.perf_counter()
        try:
            _call(self._listener, name, partitions)
        finally:
            if self.hooks:
                from groupkit.hooks import (
                    PartitionsAssigned,
                    PartitionsLost,
                    PartitionsRevoked,
                    emit,
                )

                kinds: dict[str, type[PartitionsAssigned | PartitionsRevoked | PartitionsLost]] = {
                    "on_partitions_assigned": PartitionsAssigned,
                    "on_partitions_revoked": PartitionsRevoked,
                    "on_partitions_lost": PartitionsLost}
                emit(self.hooks, kinds[name](self.config.group_id or "", frozenset(partitions),
                                             time.perf_counter() - started))

    def _on_group_news(self) -> None:
        """The runner queued an event (on its thread): the next look takes it."""
        self._group_news = True
        self._bell.ring()

    def _handle_group_events(self) -> None:
        if self._fatal is not None:
            raise self._fatal
        if self._runner is None:
            return
        self._group_news = False  # before taking them: one queued meanwhile sets it again
        events = self._runner.events()
        for i, event in enumerate(events):
            try:
                self._handle(event)
            except BaseException:
                # A listener raised: the events after this one wait for the next poll.
                self._runner.requeue(events[i + 1:])
                self._group_news = True
                raise

    def _handle(self, event: Any) -> None:
        """Apply one membership fact to what this consumer holds, calling the listener."""
        if isinstance(event, Assigned):
            self._on_assigned(event)
        elif isinstance(event, Revoked):
            self._on_revoked(event)
        elif isinstance(event, Lost):
            lost = _partitions(event.units) & self._assigned
            self._assigned -= lost
            self._fetcher.assign(self._assigned)
            if lost:
                self._info("lost previously assigned partitions %s: %s", _names(lost),
                           event.reason)
            self._callback("on_partitions_lost", lost)
        elif isinstance(event, Left):
            self._info("left the group: %s", event.reason)
        elif isinstance(event, Fatal):
            self._fatal = event.error
            raise event.error

    def _on_assigned(self, event: Assigned) -> None:
        assert self._runner is not None
        units = _partitions(event.units)
        revoked = self._assigned - units
        if revoked:
            self._info("revoking previously assigned partitions %s", _names(revoked))
            try:
                self._commit_on_revoke(revoked)
                self._callback("on_partitions_revoked", revoked)
            finally:
                self._assigned -= revoked
                self._fetcher.assign(self._assigned)
                self._runner.request_rejoin("partitions were revoked; the second round hands"
                                            " them over")
        added = units - self._assigned
        self._assigned = units
        self._fetcher.assign(units)
        self._info("adding newly assigned partitions %s (now holding %d)", _names(added),
                   len(units))
        try:
            self._callback("on_partitions_assigned", added)
        finally:
            # The partitions are this consumer's (the fetcher has them) whatever the listener
            # did: a consumer-protocol member acknowledges them now (classic: nothing waits).
            self._runner.assignment_applied()

    def _on_revoked(self, event: Revoked) -> None:
        assert self._runner is not None
        revoked = _partitions(event.units) & self._assigned
        if revoked:
            self._info("revoking previously assigned partitions %s", _names(revoked))
        try:
            self._commit_on_revoke(revoked)
            self._callback("on_partitions_revoked", revoked)
        finally:
            self._assigned -= revoked
            self._fetcher.assign(self._assigned)
            self._runner.revocation_done()

    def _commit_on_revoke(self, partitions: set[TopicPartition]) -> None:
        if not self.config.enable_auto_commit or not partitions:
            return
        positions = self._fetcher.positions()
        offsets = {tp: positions[tp] for tp in partitions if tp in positions}
        try:
            self._offsets.commit(offsets, self.config.default_api_timeout_ms / 1000)
        except GroupkitError as exc:
            log.warning("commit before revoking %s failed: %s", _names(partitions), exc)
        else:
            if offsets:
                self._info("committed offsets of revoked partitions: %s", ", ".join(
                    f"{tp.topic}-{tp.partition}@{o}" for tp, o in sorted(offsets.items())))

    def _maybe_auto_commit(self, deadline: float) -> None:
        """Commit the positions if the auto-commit interval is up (auto commit on, subscribed)."""
        assert self._runner is not None
        now = time.monotonic()
        if now < self._next_auto_commit:
            return
        self._next_auto_commit = now + self.config.auto_commit_interval_ms / 1000
        try:
            self._runner.commit_fence()
        except CommitFailedError:
            return
        positions = self._fetcher.positions()
        offsets = {tp: o for tp, o in positions.items() if tp in self._assigned}
        if offsets:
            # Java's poll bounds the coordinator lookup of its auto-commit by the poll's timer.
            self._offsets.commit_async(offsets, None, deadline)

    # --- offsets -------------------------------------------------------------------------------

    @_one_thread
    def commit(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None,
               timeout: float | None = None) -> None:
        """Commit ``offsets`` (next offset to read, per partition, or an OffsetAndMetadata to
        store a metadata string too; default: the positions of every assigned partition) and
        wait. Raises CommitFailedError after a rebalance."""
        self._check_open()
        chosen = self._commit_offsets(offsets)
        self._offsets.commit(chosen, self._timeout(timeout))

    @_one_thread
    def commit_async(self,
                     offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None = None,
                     callback: CommitCallback | None = None) -> None:
        """Commit without waiting; ``callback(offsets, error)`` runs in a later poll()."""
        self._check_open()
        self._offsets.commit_async(self._commit_offsets(offsets), callback)

    def _commit_offsets(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata] | None
                        ) -> dict[TopicPartition, int | OffsetAndMetadata]:
        if offsets is not None:
            from groupkit.values import OffsetAndMetadata  # loaded with the fetch side

            chosen = {TopicPartition(*tp): o if isinstance(o, OffsetAndMetadata) else int(o)
                      for tp, o in offsets.items()}
            for tp, o in chosen.items():
                if isinstance(o, int) and o < 0:
                    raise ConfigError(f"the offset to commit for {tp.topic}-{tp.partition} must"
                                      f" be >= 0 (the next offset to read), not {o}")
            return chosen
        positions = self._fetcher.positions()
        return {tp: o for tp, o in positions.items() if tp in self._assigned}

    @_one_thread
    def committed(self, partitions: Iterable[TopicPartition],
                  timeout: float | None = None) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed ``OffsetAndMetadata`` of each partition (None where it has
        none), as Java's ``committed``: the offset, the commit's metadata and its leader epoch.

        It once returned plain offsets: ``.offset`` reads the number (README, "Migrating").
        """
        self._check_open()
        return self._offsets.committed([TopicPartition(*tp) for tp in partitions],
                                       self._timeout(timeout))

    @_one_thread
    def position(self, tp: TopicPartition, timeout: float | None = None) -> int:
        """The offset of the next record poll() returns for ``tp`` (looked up if needed)."""
        self._check_open()
        found = self._fetcher.position(TopicPartition(*tp), self._timeout(timeout))
        if found is None:
            raise RequestTimeoutError(
                f"the position of {tp[0]}-{tp[1]} was not found in time; check the broker, or"
                " pass a longer timeout")
        return found

    @_one_thread
    def seek(self, tp: TopicPartition, offset: int) -> None:
        """Read ``tp`` from ``offset`` on the next poll."""
        self._check_open()
        if offset < 0:
            raise ConfigError(f"seek offset must be >= 0, not {offset}")
        self._fetcher.seek(TopicPartition(*tp), offset)

    @_one_thread
    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Read from the earliest offset of ``partitions`` (default: all assigned)."""
        for tp in self._targets(partitions):
            self._fetcher.seek(tp, None, "earliest")

    @_one_thread
    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Read only records produced after now on ``partitions`` (default: all assigned)."""
        for tp in self._targets(partitions):
            self._fetcher.seek(tp, None, "latest")

    @_one_thread
    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        """Stop returning records of ``partitions`` (membership and heartbeats go on)."""
        self._fetcher.pause(self._targets(partitions))

    @_one_thread
    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        """Return records of ``partitions`` again."""
        self._fetcher.resume(self._targets(partitions))

    def paused(self) -> set[TopicPartition]:
        """The partitions held back by ``pause``."""
        return self._fetcher.paused()

    def _targets(self, partitions: Iterable[TopicPartition] | None) -> list[TopicPartition]:
        self._check_open()
        if partitions is None:
            return sorted(self._assigned)
        return [TopicPartition(*tp) for tp in partitions]

    # --- closing -------------------------------------------------------------------------------

    @_one_thread
    def close(self, timeout: float = 30.0) -> None:
        """Commit (with auto commit on), revoke, leave the group, close connections.

        Every step shares ``timeout`` seconds; what does not fit is skipped, never waited for.
        """
        if self._closed:
            return
        deadline = time.monotonic() + timeout
        if self._pattern_watch is not None:
            self._pattern_watch.stop(max(0.0, min(1.0, timeout)))
        try:
            if self._runner is not None:
                self._close_group(deadline)
        except BaseException as exc:
            if not isinstance(exc, Exception):
                # Interrupted (a second Ctrl-C): release the rest without waiting for threads.
                deadline = time.monotonic()
            raise
        finally:
            self._closed = True
            if self._runner is not None:
                self._runner.stop(max(0.0, min(1.0, deadline - time.monotonic())))
            fetcher, offsets = self._fetcher_built, self._offsets_built
            if fetcher is not None:
                fetcher.close(max(0.0, min(1.0, deadline - time.monotonic())))
            self._cluster.close()
            if offsets is not None:
                offsets.run_callbacks()

    def _close_group(self, deadline: float) -> None:
        assert self._runner is not None
        held = set(self._assigned)
        try:
            self._handle_group_events()
        except GroupkitError as exc:
            log.warning("closing after a group error: %s", exc)
        if held and self.config.enable_auto_commit:
            positions = self._fetcher.positions()
            offsets = {tp: o for tp, o in positions.items() if tp in self._assigned}
            left = deadline - time.monotonic()
            if offsets and left > 0:
                try:
                    self._offsets.commit(offsets, left)
                except GroupkitError as exc:
                    log.warning("commit on close failed: %s", exc)
                else:
                    self._info("committed offsets of revoked partitions: %s", ", ".join(
                        f"{tp.topic}-{tp.partition}@{o}" for tp, o in sorted(offsets.items())))
        if self._assigned:
            self._info("revoking previously assigned partitions %s (closing)",
                       _names(self._assigned))
        try:
            self._callback("on_partitions_revoked", self._assigned)
        finally:
            self._assigned = set()
            self._runner.leave(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # --- plumbing ------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise IllegalStateError("this consumer is closed; create a new one")

    def _info(self, message: str, *args: object) -> None:
        """An INFO line of the member's life, naming the group and the member id (as Java's
        ConsumerCoordinator prefixes its log lines)."""
        if log.isEnabledFor(logging.INFO):
            log.info("[group %s, member %s] " + message, self.config.group_id,
                     self.member_id or "(none)", *args)

    def _timeout(self, timeout: float | None) -> float:
        return self.config.default_api_timeout_ms / 1000 if timeout is None else timeout

    def _joining(self) -> None:
        """A JoinGroup went out: fetch metadata now, while the coordinator holds the join,
        then load the fetch side (``_preload_fetch_side``) if a first join.

        If this member is elected leader, its assignor then finds the metadata fresh without a
        round trip of its own, and every member waits for the leader's SyncGroup.
        """
        with self._view_lock:
            if self._view is not None and not self._view.done():
                return
            future: Future[ClusterMetadata] = Future()
            self._view = future
        threading.Thread(target=self._fetch_view, args=(future,), daemon=True,
                         name="groupkit-metadata").start()

    def _fetch_view(self, future: Future[ClusterMetadata]) -> None:
        try:
            future.set_result(self._cluster.refresh())
        except Exception as exc:
            future.set_exception(exc)
            return
        _preload_fetch_side()
        self._connect_ahead()

    def _connect_ahead(self) -> None:
        """While the coordinator holds the join, open the connection the member's first
        OffsetFetch goes over once it is synced: the committed offsets' to the coordinator.

        Java opens none then: its OffsetFetch goes over its one coordinator connection.
        groupkit pools a connection per purpose, so a handshake (a connect, ApiVersions and two
        threads) sat between the SyncGroup's answer and the first Fetch. The leaders' fetch
        connections are left to the assignment, as Java leaves them: which leaders a member
        fetches from is known only then, and a connection opened ahead to every leader of the
        subscribed topics would stay open, two threads each, to brokers it may never fetch
        from. Nothing fails here: a connection that cannot be made now is made again, and its
        failure reported, by the request that needs it."""
        from groupkit.runtime.offsets import COMMIT_PURPOSE  # loaded by the preload

        group_id = self.config.group_id
        assert group_id is not None
        timeout = self.config.socket_connection_setup_timeout_ms / 1000
        try:
            node = self._cluster.coordinator(group_id)
            self._cluster.connection(node, COMMIT_PURPOSE).connect(timeout)
        except Exception as exc:
            log.debug("connecting ahead of the first OffsetFetch failed (%s); it connects",
                      exc)

    def _cluster_view(self, topics: frozenset[str]) -> ClusterView:
        """Partition counts and replica racks for the leader's assignor, from metadata fetched
        since this rebalance's JoinGroup went out (or now)."""
        with self._view_lock:
            future, self._view = self._view, None
        metadata: ClusterMetadata | None = None
        if future is not None:
            try:
                metadata = future.result(self.config.request_timeout_ms / 1000)
            except Exception as exc:
                log.info("metadata fetched at the join failed (%s); fetching it again", exc)
        if metadata is None or any(metadata.topic(t) is None for t in topics):
            metadata = self._cluster.refresh(topics)
        counts: dict[str, int] = {}
        racks: dict[TopicPartition, list[str]] = {}
        for topic in topics:
            info = metadata.topic(topic)
            if info is None:
                continue
            counts[topic] = info.partition_count
            for p, part in info.partitions.items():
                found = [b.rack for n in part.replicas
                         if (b := metadata.broker(n)) is not None and b.rack]
                if found:
                    racks[TopicPartition(topic, p)] = found
        return ClusterView(counts, racks)

    def _any_broker(self) -> BrokerConnection:
        """The runner's connection for FindCoordinator: the least loaded node's ordinary one,
        which the metadata refreshes use too, as Java's NetworkClient has one connection per
        node besides the coordinator's. A pool entry of its own opened another connection (a
        handshake and two threads) just before the JoinGroup, beside the join's metadata
        refresh."""
        return self._cluster.connection(self._cluster.least_loaded_node())

    def _coordinator_connection(self, coordinator: Coordinator, purpose: str) -> BrokerConnection:
        # The runner found the coordinator: commits use it without a lookup of their own.
        assert self.config.group_id is not None
        self._cluster.remember_coordinator(self.config.group_id, coordinator.node_id,
                                           coordinator.host, coordinator.port)
        return self._cluster.connection(coordinator.node_id, purpose)


def _preload_in_background() -> None:
    """A consumer-protocol member's rebalance needs no metadata of its own (the broker
    assigns): while its assignment comes, a thread of its own loads the fetch side."""
    if _FETCH_SIDE not in sys.modules:
        threading.Thread(target=_preload_fetch_side, daemon=True,
                         name="groupkit-preload").start()


def _names(partitions: Iterable[TopicPartition], limit: int = 20) -> str:
    """``[t-0, t-1, ...]``, at most ``limit`` named (a log line stays readable)."""
    names = [f"{tp.topic}-{tp.partition}" for tp in sorted(partitions)]
    more = f", +{len(names) - limit} more" if len(names) > limit else ""
    return "[" + ", ".join(names[:limit]) + more + "]"


def _partitions(units: Iterable[Hashable]) -> set[TopicPartition]:
    """The membership machine holds opaque units; the consumer protocol's are topic-partitions."""
    return {TopicPartition(*cast(tuple[str, int], unit)) for unit in units}
