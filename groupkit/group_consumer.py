"""GroupConsumer: subclass it, name the topics and the group, write ``process``, call ``run()``.

Delivery is at-least-once by default: a record's offset is committed only after ``process``
(or ``process_batch``) returned for it. The underlying :class:`~groupkit.consumer.Consumer` runs
with ``enable_auto_commit=False``; this class tracks the next offset per partition and commits it
every ``auto_commit_interval_ms``, when partitions are revoked (after ``on_revoked``) and on stop.

With ``processing_guarantee = "exactly_once_v2"`` (Kafka Streams' name) each poll is one
transaction: the output ``self.send`` wrote while processing its records and those records'
offsets commit together (KIP-447, fenced by the group generation), or none of it does; the
member reads ``read_committed``. The rules are in the "exactly once" section below.
"""

from __future__ import annotations

import contextlib
import difflib
import logging
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from assignors import TopicPartition
from groupkit.config import ClientConfig, ConsumerConfig
from groupkit.consumer import Consumer, ConsumerRebalanceListener, ConsumerRecord
from groupkit.errors import (
    AbortableTransactionError,
    CommitFailedError,
    ConfigError,
    GroupkitError,
    IllegalStateError,
    NoBrokersAvailable,
    WakeupError,
)
from groupkit.hooks import Hook, Processed, TransactionEnded, emit
from groupkit.runtime.pattern_watch import compile_pattern

if TYPE_CHECKING:
    from groupkit.producer import Producer

__all__ = ["ERROR_POLICIES", "GroupConsumer", "RunSummary", "StopOnSignals"]

log = logging.getLogger(__name__)

ERROR_POLICIES = ("stop", "skip")
_OWN_SETTINGS = ("topics", "pattern", "on_error", "hooks", "metrics_port", "stop_grace_ms",
                 "processing_guarantee", "transactional_id", "producer_settings")
PROCESSING_GUARANTEES = ("at_least_once", "exactly_once_v2")
_CONSUMER_SETTINGS = tuple(a.name for a in attrs.fields(ConsumerConfig))
# The longest one poll of the loop may wait (Spring Kafka's default pollTimeout): an idle worker
# wakes once in this, not five times a second. stop() does not wait for it: it wakes the poll,
# from a signal handler too. (CPython runs a handler between bytecodes: a signal landing in
# the instant between the poll's last bytecode and its wait is handled when that wait ends.)
_MAX_POLL_WAIT_S = 5.0


@attrs.frozen
class RunSummary:
    """What one ``run()`` did: records processed and skipped, commits made, rebalances seen."""

    records_processed: int
    records_skipped: int
    commits: int
    rebalances: int


class StopOnSignals:
    """What the worker classes (GroupConsumer, ShareWorker) share about stopping: ``stop()``
    asks ``run()`` to finish within the grace (``_grace`` seconds), and while ``run()`` runs on
    the main thread SIGTERM and SIGINT call it (a second one stops at once). ``_wake`` ends the
    worker's waiting poll."""

    #: What stopping does, for the log line of the first signal.
    _STOPPING: ClassVar[str] = "committing and leaving the group"
    _grace: float
    _stop_requested: bool
    _stop_deadline: float | None

    def _wake(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        """Ask ``run()`` to finish (commit or acknowledge, leave the group) and return within
        ``stop_grace_ms``; safe from any thread or signal."""
        if self._stop_deadline is None:
            self._stop_deadline = time.monotonic() + self._grace
        self._stop_requested = True
        self._wake()

    def _grace_left(self) -> float:
        """Seconds left to finish and leave: what remains of the grace once stopping began
        (a failed run() stops too, so its grace starts when it ends)."""
        if self._stop_deadline is None:
            self._stop_deadline = time.monotonic() + self._grace
        return max(0.0, self._stop_deadline - time.monotonic())

    @contextlib.contextmanager
    def _signals_call_stop(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self._on_signal)
                    for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler if handler is not None else signal.SIG_DFL)

    def _on_signal(self, signum: int, frame: object) -> None:
        if not self._stop_requested:
            log.info("%s got %s: %s within %.1f s (send it again to stop at once)",
                     type(self).__name__, signal.Signals(signum).name, self._STOPPING,
                     self._grace)
            self.stop()
            return
        # A second signal during the grace: stop now, as Python programs do on Ctrl-C.
        log.warning("%s got a second %s: stopping without waiting to finish or leave",
                    type(self).__name__, signal.Signals(signum).name)
        self._stop_deadline = time.monotonic()
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + signum)


class GroupConsumer(StopOnSignals):
    """Base class of a group worker; see the module docstring for the delivery guarantee.

    Configure with class attributes (``topics``, ``group_id``, ``on_error`` and any
    :class:`~groupkit.config.ConsumerConfig` name such as ``session_timeout_ms``); constructor
    keyword arguments override them; ``hooks`` go to the Consumer (runtime events for metrics).
    ``metrics_port`` serves Prometheus ``/metrics`` and ``/healthz`` while ``run()`` runs (0
    picks a free port: read ``metrics_address``); see ``groupkit.metrics``.

    ``on_error`` chooses what an exception from ``process`` does: ``"stop"`` commits what was
    processed before it, leaves the group and re-raises it from ``run()``; ``"skip"`` logs it
    with the record's topic, partition and offset and goes on, and the skipped record's offset
    IS committed (it will not be delivered again). With ``process_batch`` the unit is the batch.
    """

    topics: ClassVar[Sequence[str]] = ()
    #: Or a regular expression a topic's whole name must match (Java's subscribe(Pattern)),
    #: e.g. ``"orders-.*"``; one of ``topics`` and ``pattern``. The classic protocol matches it
    #: here (Python ``re``) against every topic but Kafka's internal ones, now and every
    #: ``metadata_max_age_ms``; ``group_protocol="consumer"`` sends it to the broker (RE2/J),
    #: which resolves it. See ``Consumer.subscribe``.
    pattern: ClassVar[str | None] = None
    group_id: ClassVar[str | None] = None
    on_error: ClassVar[str] = "stop"
    hooks: ClassVar[Sequence[Hook]] = ()
    #: Serve /metrics and /healthz on this port while run() runs (0: a free port); None: off.
    metrics_port: ClassVar[int | None] = None
    #: After stop(), SIGTERM or SIGINT, run() commits and leaves within this many ms, then
    #: returns whatever is left undone; a second SIGTERM or SIGINT stops at once.
    stop_grace_ms: ClassVar[int] = 10_000
    #: "at_least_once", or "exactly_once_v2": one transaction per poll (see the module doc).
    processing_guarantee: ClassVar[str] = "at_least_once"
    #: The exactly-once producer's transactional id. A pool gives each slot a stable one
    #: ("<group>-worker-<slot>"), so a replacement's init_transactions aborts its predecessor's
    #: open transaction at once; None elsewhere makes a fresh one per run (see the README).
    transactional_id: ClassVar[str | None] = None
    #: More settings for the producer behind ``send`` (ProducerConfig names), e.g. compression.
    producer_settings: ClassVar[Mapping[str, Any]] = {}

    def __init__(self, **settings: Any) -> None:
        cls = type(self)
        _check_class_attributes(cls)
        merged = {name: getattr(cls, name) for name in _CONSUMER_SETTINGS if hasattr(cls, name)}
        merged.update({name: getattr(cls, name) for name in _OWN_SETTINGS})
        for name in settings:
            if name not in _CONSUMER_SETTINGS and name not in _OWN_SETTINGS:
                close = difflib.get_close_matches(name, _CONSUMER_SETTINGS + _OWN_SETTINGS, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(f"unknown setting {name!r} for {cls.__name__}{hint}")
        merged.update(settings)
        self._topics, self._pattern = _check_subscription(
            merged.pop("topics"), merged.pop("pattern"), merged.get("group_protocol"))
        self._on_error = merged.pop("on_error")
        self._hooks = list(merged.pop("hooks"))
        self._metrics_port = _check_port(merged.pop("metrics_port"))
        self._grace = _check_grace(merged.pop("stop_grace_ms")) / 1000
        self._guarantee = merged.pop("processing_guarantee")
        self._transactional_id = merged.pop("transactional_id")
        self._producer_settings = dict(merged.pop("producer_settings") or {})
        self._exactly_once = _check_guarantee(self._guarantee, merged)
        if self._on_error not in ERROR_POLICIES:
            raise ConfigError(f"on_error must be 'stop' or 'skip', not {self._on_error!r}")
        if "enable_auto_commit" in merged:
            raise ConfigError(
                "a GroupConsumer commits by itself after process() returns; remove"
                " enable_auto_commit and tune auto_commit_interval_ms instead")
        if merged.get("group_id") is None:
            raise ConfigError(f"{cls.__name__} needs a group_id (class attribute or keyword)")
        self._batch = _overrides(cls, "process_batch")
        if self._batch == _overrides(cls, "process"):
            raise ConfigError(
                f"{cls.__name__} must define exactly one of process(record) or"
                " process_batch(records)")
        self._settings = {**merged, "enable_auto_commit": False}
        self.config = ConsumerConfig.from_kwargs(self._settings)
        self._commit_interval = self.config.auto_commit_interval_ms / 1000
        self._next_commit = 0.0
        self._stop_requested = False
        #: When the grace for committing and leaving runs out (set once stopping begins).
        self._stop_deadline: float | None = None
        self._commit_failing = False
        self._brokers_answered = False
        self._started = False
        self._next_offsets: dict[TopicPartition, int] = {}
        self._processed = 0
        self._skipped = 0
        self._commits = 0
        self._rebalances = 0
        self._metrics_server: Any = None
        #: The worker's PrometheusMetrics when metrics_port is set (its registry is served).
        self.metrics: Any = None
        self._health: Any = None
        #: The Consumer while run() runs: stop() wakes its poll.
        self._consumer: Consumer | None = None
        #: The producer behind send(): transactional with exactly_once_v2, else made on the
        #: first send (idempotent) and flushed before every commit.
        self._producer: Producer | None = None
        #: The open transaction: when it began and each partition's first offset in it.
        self._txn_began: float | None = None
        self._txn_starts: dict[TopicPartition, int] = {}
        if self._metrics_port is not None:
            self._hooks.extend(self._metrics_hooks())

    # --- what subclasses write -------------------------------------------------------------

    def process(self, record: ConsumerRecord) -> None:
        """Handle one record; its offset is committed after this returns."""
        raise NotImplementedError

    def process_batch(self, records: list[ConsumerRecord]) -> None:
        """Handle the records of one poll at once (define this instead of ``process``)."""
        raise NotImplementedError

    def on_assigned(self, partitions: set[TopicPartition]) -> None:
        """Called on the run() thread when partitions are newly assigned to this member."""

    def on_revoked(self, partitions: set[TopicPartition]) -> None:
        """Called before partitions go to another member; their offsets are committed after it."""

    def on_lost(self, partitions: set[TopicPartition]) -> None:
        """Called when partitions were taken away without a clean hand-over (nothing committed)."""

    # --- running -----------------------------------------------------------------------------

    @property
    def topic_names(self) -> tuple[str, ...]:
        """The topics this worker subscribes to, after constructor overrides (none when it
        subscribes to a ``pattern``)."""
        return self._topics

    @property
    def topic_pattern(self) -> str | None:
        """The pattern this worker subscribes to, or None when it names its topics."""
        return self._pattern

    @property
    def summary(self) -> RunSummary:
        """The counts so far (also after ``run()`` raised)."""
        return RunSummary(self._processed, self._skipped, self._commits, self._rebalances)

    @property
    def metrics_address(self) -> tuple[str, int] | None:
        """``(host, port)`` of the /metrics and /healthz server while ``run()`` serves them."""
        server = self._metrics_server
        return server.address if server is not None else None

    def _metrics_hooks(self) -> list[Hook]:
        # The metrics edge is imported only when asked for: prometheus-client stays unloaded.
        from groupkit.metrics import HealthCheck, PrometheusMetrics

        self.metrics = PrometheusMetrics()
        self._health = HealthCheck.for_config(self.config)
        return [self.metrics, self._health]

    def _serve_metrics(self) -> None:
        from groupkit.metrics import serve

        assert self._metrics_port is not None
        # serve() logs the bound address.
        self._metrics_server = serve(self.metrics.registry, self._metrics_port,
                                     health=self._health)

    def _wake(self) -> None:
        consumer = self._consumer
        if consumer is not None:
            consumer.wakeup()

    def run(self) -> RunSummary:
        """Consume until ``stop()``, SIGTERM or SIGINT, then commit, leave and return a summary."""
        if self._started:
            raise IllegalStateError("run() can be called once per GroupConsumer; make a new one")
        self._started = True
        if self._metrics_port is not None:
            self._serve_metrics()
        try:
            with self._signals_call_stop():
                consumer = Consumer(hooks=self._hooks, **self._settings)
                self._consumer = consumer
                try:
                    if self._exactly_once:
                        self._start_transactions()
                    consumer.subscribe(list(self._topics), listener=_Listener(
                        assigned=self._partitions_assigned,
                        revoked=lambda partitions: self._partitions_revoked(consumer, partitions),
                        lost=self._partitions_lost), pattern=self._pattern)
                    self._loop(consumer)
                finally:
                    # close() revokes what is held: on_revoked runs, then the worker commits,
                    # all within the grace (as Java's KafkaConsumer.close(timeout) bounds it).
                    try:
                        consumer.close(self._grace_left())
                    finally:
                        self._close_producer()
        finally:
            if self._metrics_server is not None:
                self._metrics_server.close()
                self._metrics_server = None
        return self.summary

    def _loop(self, consumer: Consumer) -> None:
        started = time.monotonic()
        self._next_commit = started + self._commit_interval
        # run() sets _consumer before this first look and stop() sets the flag before it reads
        # _consumer: a stop() that found no consumer to wake is seen here.
        while not self._stop_requested:
            try:
                records = consumer.poll(self._poll_wait(started))
            except WakeupError:
                continue  # stop() woke it: the loop's condition ends the loop
            if records:
                if self._exactly_once:
                    self._handle_in_transaction(consumer, records)
                else:
                    self._handle(consumer, records)
            self._commit_if_due(consumer)
            if not self._reached_brokers(consumer, started):
                unreachable = consumer.unreachable_brokers()
                raise NoBrokersAvailable(
                    f"no bootstrap server answered within default_api_timeout_ms="
                    f"{self.config.default_api_timeout_ms} of the start ("
                    + "; ".join(f"{a}: {why}" for a, why in sorted(unreachable.items()))
                    + "); check bootstrap_servers, that the brokers run and that this host can"
                    " reach them")

    def _poll_wait(self, started: float) -> float:
        """How long the next poll may wait for records: until the next commit is due, at most
        ``_MAX_POLL_WAIT_S`` and half of max_poll_interval_ms (so /healthz and the pool, which
        watch the polls, keep seeing them), and, while no broker has answered, until
        default_api_timeout_ms from the start (when the loop gives up)."""
        now = time.monotonic()
        wait = min(self._next_commit - now, _MAX_POLL_WAIT_S,
                   self.config.max_poll_interval_ms / 2000)
        if not self._brokers_answered:
            wait = min(wait, started + self.config.default_api_timeout_ms / 1000 - now)
        return max(0.0, wait)

    def _reached_brokers(self, consumer: Consumer, started: float) -> bool:
        """False once default_api_timeout_ms passed from the start without any broker
        answering: a worker that cannot work says so instead of polling nothing forever."""
        if self._brokers_answered:
            return True
        self._brokers_answered = consumer.brokers_answered()
        return self._brokers_answered or \
            time.monotonic() - started < self.config.default_api_timeout_ms / 1000

    def _handle(self, consumer: Consumer, records: list[ConsumerRecord]) -> None:
        if not self._hooks:
            self._process(consumer, records)
            return
        started = time.perf_counter()
        skipped = self._skipped
        raised = 0
        try:
            self._process(consumer, records)
        except Exception:
            raised = len(records) if self._batch else 1
            raise
        finally:
            emit(self._hooks, Processed(consumer.config.group_id or "", len(records),
                                        self._skipped - skipped + raised,
                                        time.perf_counter() - started))

    def _process(self, consumer: Consumer, records: list[ConsumerRecord]) -> None:
        if self._batch:
            try:
                self.process_batch(records)
            except Exception as exc:
                self._failed(records, exc)
            else:
                self._processed += len(records)
            self._advance(records)
            return
        for record in records:
            if self._stop_requested:
                return
            try:
                self.process(record)
            except Exception as exc:
                self._failed([record], exc)
            else:
                self._processed += 1
            self._advance([record])
            # Also inside a long batch, so slow processing never widens the uncommitted window
            # beyond one interval.
            self._commit_if_due(consumer)

    def _commit_if_due(self, consumer: Consumer) -> None:
        if self._exactly_once:
            return  # offsets go only with a transaction
        if time.monotonic() >= self._next_commit:
            self._commit(consumer, self._next_offsets)
            self._next_commit = time.monotonic() + self._commit_interval

    def _failed(self, records: list[ConsumerRecord], exc: Exception) -> None:
        if self._on_error == "stop":
            raise exc
        self._skipped += len(records)
        spans: dict[tuple[str, int], list[int]] = {}
        for r in records:
            spans.setdefault((r.topic, r.partition), []).append(r.offset)
        where = ", ".join(f"{t}[{p}]@{o[0]}" + (f"-{o[-1]}" if len(o) > 1 else "")
                          for (t, p), o in spans.items())
        log.error("%s skipped %s after %r; the offsets are committed, so these records will not"
                  " be delivered again", type(self).__name__, where, exc, exc_info=exc)

    def _advance(self, records: list[ConsumerRecord]) -> None:
        for record in records:
            self._next_offsets[TopicPartition(record.topic, record.partition)] = record.offset + 1

    def _commit(self, consumer: Consumer, offsets: Mapping[TopicPartition, int]) -> None:
        # Every position goes out, moved or not, as Java's auto-commit sends all consumed
        # positions each interval: a commit whose answer was lost (a stall past the request
        # timeout) can still reach the broker after a newer one and move the group back, and
        # only sending the position again puts it right.
        due = dict(offsets)
        if not due or self._exactly_once:
            return
        try:
            if self._producer is not None:
                # What process() sent goes out before the offsets that say it is done.
                self._producer.flush(self._commit_timeout())
            consumer.commit(due, self._commit_timeout())
        except CommitFailedError as exc:
            # Refused because the group is rebalancing: the offsets stay due and go out with the
            # next commit; only partitions that move away (and are forgotten) are re-delivered.
            log.info("%s deferred a commit of %d partition(s): %s", type(self).__name__,
                     len(due), exc)
            return
        except GroupkitError as exc:
            # Once per outage, not once per attempt: the offsets stay due and every later
            # commit tries them again.
            if not self._commit_failing:
                log.warning("%s could not commit %d partition(s) (%s); they stay due and the"
                            " next commit retries them (records processed since the last"
                            " commit are delivered again if this member stops or loses the"
                            " partitions first)", type(self).__name__, len(due), exc)
            self._commit_failing = True
            return
        if self._commit_failing:
            log.info("%s committed again after failed attempts", type(self).__name__)
            self._commit_failing = False
        self._commits += 1

    def _partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self._rebalances += 1
        self.on_assigned(partitions)

    def _partitions_revoked(self, consumer: Consumer, partitions: set[TopicPartition]) -> None:
        """Let the subclass finish, then commit what it processed of ``partitions``."""
        if not partitions:
            return
        self.on_revoked(set(partitions))
        self._commit(consumer, {tp: o for tp, o in self._next_offsets.items() if tp in partitions})
        self._forget(partitions)

    def _partitions_lost(self, partitions: set[TopicPartition]) -> None:
        if not partitions:
            return
        self.on_lost(set(partitions))
        self._forget(partitions)

    def _commit_timeout(self) -> float:
        """A commit never outlasts the grace: one in flight when stop() comes ends within it,
        so run() still returns in time (a failed commit stays due for the next one)."""
        timeout = self.config.default_api_timeout_ms / 1000
        if self._stop_requested:
            return min(timeout, self._grace_left())
        return min(timeout, self._grace) if self._grace > 0 else timeout

    # --- output and exactly once ---------------------------------------------------------------
    #
    # Kafka Streams' EOS-v2 task handling, one transaction per poll: the transaction begins at
    # the poll's first record and commits (its records' offsets sent with it, fenced by the
    # group generation) once the poll's records are processed, before the next poll. So none
    # is open while poll() runs the rebalance callbacks: a revoke, a loss or a stop between
    # polls finds nothing to commit or abort. A stop inside a poll commits the records
    # processed so far (complete, and the member still owns their partitions: nothing can
    # revoke them before the next poll), as Streams commits on a clean close. A process() that
    # raises with on_error="stop", or a transaction the group or the coordinator refuses
    # (CommitFailedError: this member was fenced out; AbortableTransactionError), aborts it,
    # and the positions go back to the poll's first offsets, so the records are read again
    # (by this member or, after a rebalance, their new owner) and no output shows twice to a
    # read_committed reader. ProducerFencedError (another worker took this transactional id)
    # ends run(). on_error="skip" skips the record and commits its offset with the
    # transaction.

    def send(self, topic: str, value: bytes | None, key: bytes | None = None,
             partition: int | None = None,
             headers: list[tuple[str, bytes | None]] | None = None) -> Any:
        """Write one output record from ``process``/``process_batch``; returns its future.

        exactly_once_v2: inside the poll's transaction. at_least_once: sent by an idempotent
        producer and flushed before the offsets of the records that produced it commit."""
        producer = self._producer
        if self._exactly_once:
            if producer is None or self._consumer is None:
                raise IllegalStateError("send() works while run() runs, from process()")
            self._begin_transaction()
        elif producer is None:
            if self._consumer is None:
                raise IllegalStateError("send() works while run() runs, from process()")
            producer = self._producer = self._make_producer(None)
        return producer.send(topic, value, key=key, partition=partition, headers=headers)

    def _make_producer(self, transactional_id: str | None) -> Producer:
        # Imported here: a worker that never sends does not load the producer.
        from groupkit.producer import Producer

        client = {a.name: getattr(self.config, a.name) for a in attrs.fields(ClientConfig)}
        client["bootstrap_servers"] = [f"{h}:{p}" for h, p in self.config.bootstrap_servers]
        settings = {**client, **self._producer_settings}
        if transactional_id is not None:
            settings["transactional_id"] = transactional_id
        return Producer(**settings)

    def _start_transactions(self) -> None:
        transactional_id = self._transactional_id or \
            f"{self.config.group_id}-{uuid.uuid4().hex[:12]}"
        self._producer = self._make_producer(transactional_id)
        # Fences any earlier producer with this id and aborts its open transaction.
        self._producer.init_transactions(self.config.default_api_timeout_ms / 1000)
        log.info("%s: exactly_once_v2 with transactional id %s", type(self).__name__,
                 transactional_id)

    def _close_producer(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            producer.close(self._grace_left())

    def _begin_transaction(self) -> None:
        if self._txn_began is None:
            assert self._producer is not None
            self._producer.begin_transaction()
            self._txn_began = time.monotonic()

    def _handle_in_transaction(self, consumer: Consumer, records: list[ConsumerRecord]) -> None:
        """One poll's records in one transaction (see above)."""
        self._begin_transaction()
        for r in records:
            self._txn_starts.setdefault(TopicPartition(r.topic, r.partition), r.offset)
        before = {tp: self._next_offsets.get(tp) for tp in self._txn_starts}
        try:
            self._handle(consumer, records)
        except Exception:
            self._end_transaction(consumer, commit=False, before=before)
            raise
        self._end_transaction(consumer, commit=True, before=before)

    def _end_transaction(self, consumer: Consumer, commit: bool,
                         before: Mapping[TopicPartition, int | None]) -> None:
        producer = self._producer
        assert producer is not None and self._txn_began is not None
        timeout = self._commit_timeout()
        offsets = {tp: self._next_offsets[tp] for tp in self._txn_starts
                   if tp in self._next_offsets and self._next_offsets[tp] != before.get(tp)}
        try:
            if commit:
                try:
                    if offsets:
                        # current=True: a member the group has fenced out (a zombie woken
                        # after its session) aborts here even where the broker does not
                        # check the generation in TxnOffsetCommit (Tansu does not).
                        producer.send_offsets_to_transaction(
                            offsets, consumer.group_metadata(current=True), timeout)
                    producer.commit_transaction(timeout)
                    self._commits += 1
                except (CommitFailedError, AbortableTransactionError) as exc:
                    log.warning("%s: the transaction of %d partition(s) could not commit (%s);"
                                " aborting it, and its records are read again",
                                type(self).__name__, len(self._txn_starts), exc)
                    commit = False
            if not commit:
                producer.abort_transaction(timeout)
                self._rewind(consumer, before)
        finally:
            if self._hooks:
                emit(self._hooks, TransactionEnded(self.config.group_id or "", commit,
                                                   time.monotonic() - self._txn_began))
            self._txn_began = None
            self._txn_starts = {}

    def _rewind(self, consumer: Consumer, before: Mapping[TopicPartition, int | None]) -> None:
        """After an abort: the positions and next offsets go back to the poll's first records."""
        assigned = consumer.assignment()
        for tp, start in self._txn_starts.items():
            previous = before.get(tp)
            if previous is None:
                self._next_offsets.pop(tp, None)
            else:
                self._next_offsets[tp] = previous
            if tp in assigned:
                consumer.seek(tp, start)

    def _forget(self, partitions: set[TopicPartition]) -> None:
        for tp in partitions:
            self._next_offsets.pop(tp, None)

@attrs.frozen
class _Listener(ConsumerRebalanceListener):
    """Hands the Consumer's rebalance callbacks to the handlers the worker built it with."""

    assigned: Callable[[set[TopicPartition]], None]
    revoked: Callable[[set[TopicPartition]], None]
    lost: Callable[[set[TopicPartition]], None]

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        self.assigned(set(partitions))

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        self.revoked(set(partitions))

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self.lost(set(partitions))


def _overrides(cls: type, name: str) -> bool:
    return getattr(cls, name) is not getattr(GroupConsumer, name)


def _check_port(port: Any) -> int | None:
    if port is None:
        return None
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(f"metrics_port must be a port number 0-65535 (0: any free port) or"
                          f" None (off), not {port!r}")
    return port


def _check_guarantee(guarantee: Any, settings: dict[str, Any]) -> bool:
    """Whether the worker is exactly-once; it then reads read_committed (Kafka Streams sets
    the same), and an explicit read_uncommitted is a ConfigError."""
    if guarantee not in PROCESSING_GUARANTEES:
        raise ConfigError(f"processing_guarantee must be one of {', '.join(PROCESSING_GUARANTEES)}"
                          f", not {guarantee!r}")
    if guarantee != "exactly_once_v2":
        return False
    if settings.get("isolation_level", "read_committed") != "read_committed":
        raise ConfigError("processing_guarantee='exactly_once_v2' reads read_committed; remove"
                          " isolation_level='read_uncommitted'")
    settings["isolation_level"] = "read_committed"
    return True


def _check_grace(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"stop_grace_ms must be a whole number of milliseconds >= 0, not"
                          f" {value!r}")
    return value


def _check_class_attributes(cls: type) -> None:
    """A subclass attribute that is not a setting but is spelled like one (``sesion_timeout_ms``)
    would be ignored silently: raise ConfigError naming the setting it resembles."""
    known = _CONSUMER_SETTINGS + _OWN_SETTINGS
    for klass in cls.__mro__:
        if klass is GroupConsumer or not issubclass(klass, GroupConsumer):
            continue
        for name, value in vars(klass).items():
            if name.startswith("_") or name in known or callable(value) \
                    or isinstance(value, (property, classmethod, staticmethod)):
                continue
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
            if close:
                raise ConfigError(
                    f"{klass.__name__}.{name} is not a setting, so it would be ignored; did you"
                    f" mean {close[0]!r}?")


def _check_subscription(topics: Any, pattern: Any,
                        protocol: Any) -> tuple[tuple[str, ...], str | None]:
    """``topics`` or ``pattern``, exactly one of them: (topic names, None) or ((), pattern).
    A pattern the classic protocol matches here must compile (the broker checks its own)."""
    if pattern is None:
        if isinstance(topics, list | tuple) and not topics:
            raise ConfigError("set topics (e.g. topics = ['orders']) or a pattern (e.g."
                              " pattern = 'orders-.*'): neither is set")
        return _check_topics(topics), None
    if topics:
        raise ConfigError(f"set topics or pattern, not both (topics={list(topics)!r},"
                          f" pattern={pattern!r}): a worker subscribes to named topics or to"
                          " the topics a pattern matches")
    if not isinstance(pattern, str) or not pattern:
        raise ConfigError(f"pattern must be a non-empty regular expression such as"
                          f" 'orders-.*', not {pattern!r}")
    if protocol != "consumer":
        compile_pattern(pattern)
    return (), pattern


def _check_topics(topics: Any) -> tuple[str, ...]:
    if not isinstance(topics, (list, tuple)) or not all(isinstance(t, str) and t for t in topics):
        raise ConfigError(f"topics must be a list of topic names such as ['orders'], not {topics!r}")
    if not topics:
        raise ConfigError("topics is empty: name at least one topic, e.g. topics = ['orders']")
    return tuple(topics)
