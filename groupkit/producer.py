"""Producer: send records to topics, batched per partition by a background sender thread.

``send()`` picks the partition (murmur2 of the key, Java-compatible; sticky for null keys),
appends the record to that partition's open batch and returns a future at once; the common
record takes one call into the accumulator (groupkit/runtime/accumulator.py, in C when built). The sender
thread closes batches when they reach ``batch_size`` or ``linger_ms``, groups them by leader
into Produce requests (at most ``max_in_flight_requests_per_connection`` per broker), retries
retriable errors after refreshing metadata, and fails batches after ``delivery_timeout_ms``.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future, TimeoutError as FutureTimeout
from functools import partial
from types import TracebackType
from typing import Any

from groupkit.config import ProducerConfig
from groupkit.errors import (
    ConfigError,
    GroupkitError,
    IllegalStateError,
    KafkaConnectionError,
    RequestTimeoutError,
    TransactionAbortedError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
    error_for_code,
)
from groupkit.partitioner import StickyPartitioner, partition_for_key
from groupkit.protocol.messages.produce import (
    ProduceRequest,
    ProduceRequestPartition,
    ProduceRequestTopic,
    ProduceResponse,
)
from groupkit.runtime.accumulator import make_accumulator, make_lock
from groupkit.runtime.batches import Batch, RecordMetadata
from groupkit.runtime.cluster import Cluster
from groupkit.runtime.transactions import TransactionClient
from groupkit.txn.manager import ProduceDecision, TransactionManager
from groupkit.txn.states import TxnState
from groupkit.values import ConsumerGroupMetadata, OffsetAndMetadata

__all__ = ["Producer", "RecordMetadata"]

log = logging.getLogger(__name__)

_PRODUCE_PURPOSE = "produce"
_RECORD_OVERHEAD = 16
_BYTES = (bytes, bytearray, memoryview)


def _headers_size(headers: list[tuple[str, bytes | None]]) -> int:
    """Bytes the headers add to a record; ConfigError unless they are (str, bytes|None) pairs."""
    size = 0
    for item in headers:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
                and (item[1] is None or isinstance(item[1], _BYTES))):
            raise ConfigError(f"headers must be a list of (str, bytes or None) pairs, not "
                              f"{item!r} in it")
        size += len(item[0]) + (len(item[1]) if item[1] is not None else 0) + 4
    return size


def _failed(exc: BaseException) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_exception(exc)
    return future


class Producer:
    """Sends records to Kafka; thread-safe; use as a context manager or call ``close()``.

    Settings are those of :class:`~groupkit.config.ProducerConfig` (Java names in snake_case),
    e.g. ``Producer(bootstrap_servers="localhost:9092", acks="all", compression="lz4",
    linger_ms=5, batch_size=16384)``. Connects at once; NoBrokersAvailable if no bootstrap
    server answers.
    """

    def __init__(self, **settings: Any) -> None:
        self.config = ProducerConfig.from_kwargs(settings)
        self._cluster = Cluster(self.config, allow_auto_topic_creation=True)
        self._cluster.bootstrap()
        self._sticky = StickyPartitioner()
        # The sticky partition of each topic, so send() asks the partitioner once per batch.
        self._sticky_now: dict[str, int] = {}
        self._lock = make_lock()
        self._wake = threading.Condition(self._lock)
        self._space = threading.Condition(self._lock)
        self._ready: collections.deque[Batch] = collections.deque()
        self._incomplete: set[Batch] = set()
        self._in_flight: dict[int, int] = collections.defaultdict(int)
        self._partitions: dict[str, tuple[int, list[int]]] = {}
        self._outcomes: list[tuple[Batch, tuple[int, int] | BaseException]] = []
        # The common send() in one call (C when built), and the bytes queued (``buffered``).
        # The open batches are the accumulator's (get_open, set_open, seal_open, ...).
        self._acc = make_accumulator(self._lock, self._partitions, self._sticky_now,
                                     self.config.batch_size, self.config.buffer_memory,
                                     self._send)
        self._append = self._acc.append
        # The C accumulator's send() is this class's send() without a Python frame: it hands
        # what it declines to _send. A subclass's own send() is left in place.
        if self._acc.send is not None and type(self).send is Producer.send:
            self.__dict__["send"] = self._acc.send
        self._flushing = 0
        self._closed = False
        # Idempotence and transactions (groupkit/txn): None when enable_idempotence is off.
        self._txn: TransactionManager | None = None
        self._txn_client: TransactionClient | None = None
        self._txn_retry_at = 0.0
        if self.config.idempotent:
            # send() raises at once while the transaction is in an error state, or (when
            # transactional) outside a transaction, as Java's doSend (maybeFailWithError,
            # failIfNotReadyForSend): the fast path declines every record then, so none is
            # appended to an open batch behind the error.
            self._txn = TransactionManager(self.config.transactional_id,
                                           on_change=self._txn_changed)
            self._txn_changed(self._txn)
            self._txn_client = TransactionClient(self._cluster, self.config, self._txn,
                                                 self._lock)
        self._sender = threading.Thread(target=self._run, name="groupkit-producer-sender",
                                        daemon=True)
        self._sender.start()

    def _txn_changed(self, txn: TransactionManager) -> None:
        self._acc.refusing = txn.refuses_sends

    # --- the application side ------------------------------------------------------------------

    def send(self, topic: str, value: bytes | None, key: bytes | None = None,
             partition: int | None = None, headers: list[tuple[str, bytes | None]] | None = None,
             timestamp_ms: int | None = None) -> Future[RecordMetadata]:
        """Queue one record; the future gives its RecordMetadata (or the error that lost it).

        Blocks only to learn a new topic's partitions (up to ``max_block_ms``) or while
        ``buffer_memory`` is full. Bytes only: encode values and keys before sending.
        """
        future = self._append(topic, value, key, partition, headers, timestamp_ms)
        if future is None:
            return self._send(topic, value, key, partition, headers, timestamp_ms)
        return future

    def _send(self, topic: str, value: bytes | None, key: bytes | None, partition: int | None,
              headers: list[tuple[str, bytes | None]] | None,
              timestamp_ms: int | None) -> Future[RecordMetadata]:
        """send() for every record: the accumulator's fast path takes only the common ones."""
        if self._acc.closing:
            raise IllegalStateError("send() after close(); create a new Producer")
        if self._txn is not None:
            with self._lock:
                self._txn.check_send()
        if value is not None and value.__class__ is not bytes and not isinstance(value, _BYTES):
            raise ConfigError(f"value must be bytes or None, not {type(value).__name__}: "
                              "encode it (e.g. json.dumps(v).encode()) before sending")
        if key is not None and key.__class__ is not bytes and not isinstance(key, _BYTES):
            raise ConfigError(f"key must be bytes or None, not {type(key).__name__}: "
                              "encode it before sending")
        known = self._partitions.get(topic)
        if known is None:
            try:
                known = self._learn_topic(topic)
            except GroupkitError as exc:
                return _failed(exc)
        count, available = known
        if partition is not None and not 0 <= partition < count:
            return _failed(UnknownTopicOrPartitionError(
                f"{topic} has partitions 0-{count - 1}, so partition {partition} does not exist"))
        size = _RECORD_OVERHEAD + (len(value) if value is not None else 0) \
            + (len(key) if key is not None else 0)
        if headers:
            size += _headers_size(headers)
        if timestamp_ms is None:
            timestamp_ms = time.time_ns() // 1_000_000
        elif not isinstance(timestamp_ms, int) or isinstance(timestamp_ms, bool):
            raise ConfigError(f"timestamp_ms must be an int of milliseconds, not {timestamp_ms!r}")
        if self._acc.buffered + size > self.config.buffer_memory:
            self._wait_for_space(size)
        with self._lock:
            if partition is None:
                if key is not None:
                    partition = partition_for_key(key, count)
                else:
                    partition = self._sticky_now.get(topic)
                    if partition is None:
                        partition = self._sticky_now[topic] = self._sticky.pick(
                            topic, available or list(range(count)))
            tp = (topic, partition)
            if self._txn is not None and self._txn.transactional:
                self._txn.check_send()
                if self._txn.add_partition(tp):
                    self._wake.notify()
            batch = self._acc.get_open(tp)
            if batch is None or batch.size + size > self.config.batch_size:
                batch = self._new_batch(tp, batch)
            future = batch.append((key, value, headers, timestamp_ms), size)
            self._acc.buffered += size
            if batch.size >= self.config.batch_size:
                self._seal(tp, batch)
        return future

    def _new_batch(self, tp: tuple[str, int], full: Batch | None) -> Batch:
        if full is not None:
            self._seal(tp, full)
        now = time.monotonic()
        batch = Batch(tp[0], tp[1], now, now + self.config.delivery_timeout_ms / 1000)
        if self._txn is not None and self._txn.transactional:
            batch.transactional = True
        self._acc.set_open(tp, batch)
        self._incomplete.add(batch)
        self._wake.notify()
        return batch

    def _seal(self, tp: tuple[str, int], batch: Batch) -> None:
        """Move an open batch to the ready queue (the lock is held)."""
        self._acc.seal_open(tp, batch)
        self._ready.append(batch)
        if self._sticky_now.get(tp[0]) == tp[1]:
            del self._sticky_now[tp[0]]
            self._sticky.next_batch(tp[0], tp[1])
        self._wake.notify()

    def _learn_topic(self, topic: str) -> tuple[int, list[int]]:
        """Wait (up to max_block_ms) until metadata lists ``topic`` with partitions."""
        deadline = time.monotonic() + self.config.max_block_ms / 1000
        self._cluster.add_topics([topic])
        retries = self.config.retry_backoff()
        attempt = 0
        while True:
            # The refresh spends what is left of max_block_ms (Java: KafkaProducer.waitOnMetadata
            # waits at most maxBlockTimeMs in all), never a request timeout of its own.
            try:
                metadata = self._cluster.refresh(deadline=deadline)
            except GroupkitError as exc:
                attempt += 1
                backoff = retries.delay(attempt)
                if time.monotonic() + backoff >= deadline:
                    raise RequestTimeoutError(
                        f"topic {topic!r}: no metadata within max_block_ms="
                        f"{self.config.max_block_ms} ({exc})") from None
                time.sleep(backoff)
                continue
            info = metadata.topic(topic)
            if info is not None and info.partitions:
                known = (info.partition_count, list(info.available))
                self._partitions[topic] = known
                return known
            code = metadata.topic_errors.get(topic)
            if code and not error_for_code(code).retriable:
                cls = error_for_code(code)
                raise cls(f"topic {topic!r}: {cls.description}")
            attempt += 1
            backoff = retries.delay(attempt)
            if time.monotonic() + backoff >= deadline:
                raise UnknownTopicOrPartitionError(
                    f"topic {topic!r} is not in the cluster metadata after max_block_ms="
                    f"{self.config.max_block_ms}; create it first or let the broker auto-create"
                    " topics")
            time.sleep(backoff)

    def _wait_for_space(self, size: int) -> None:
        deadline = time.monotonic() + self.config.max_block_ms / 1000
        with self._lock:
            while self._acc.buffered + size > self.config.buffer_memory and self._acc.buffered:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RequestTimeoutError(
                        f"buffer_memory ({self.config.buffer_memory} bytes) stayed full for "
                        f"max_block_ms={self.config.max_block_ms}; the brokers are not keeping"
                        " up: raise buffer_memory or slow down")
                self._flushing += 1
                self._wake.notify()
                try:
                    self._space.wait(left)
                finally:
                    self._flushing -= 1

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now and wait until each record is delivered or failed.

        Raises RequestTimeoutError if that takes longer than ``timeout`` seconds.
        """
        with self._lock:
            pending = list(self._incomplete)
            self._flushing += 1
            self._wake.notify()
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            for batch in pending:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    batch.future.exception(left)
                except FutureTimeout:
                    raise RequestTimeoutError(
                        f"flush did not finish within {timeout} s; some records are still on"
                        " their way (their futures will tell)") from None
        finally:
            with self._lock:
                self._flushing -= 1

    def partitions_for(self, topic: str) -> list[int]:
        """The partition numbers of ``topic`` (learning them from metadata if needed).

        Raises UnknownTopicOrPartitionError if the topic does not appear within max_block_ms.
        """
        known = self._partitions.get(topic) or self._learn_topic(topic)
        return list(range(known[0]))

    def close(self, timeout: float | None = None) -> None:
        """Deliver what is queued (waiting at most ``timeout`` s), then stop and disconnect.

        Records still undelivered after that fail with IllegalStateError.
        """
        if self._closed:
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        self._abort_open_transaction(timeout)
        self._acc.closing = True
        try:
            self.flush(timeout)
        except RequestTimeoutError:
            log.warning("producer closed with records undelivered after %s s", timeout)
        with self._lock:
            self._closed = True
            self._wake.notify_all()
        # The sender may be inside a metadata refresh; it is a daemon, so close() does not
        # wait for it past the caller's timeout.
        self._sender.join(timeout=5 if deadline is None
                          else max(0.0, min(5.0, deadline - time.monotonic())))
        self._cluster.close()
        self._complete()
        with self._lock:
            left = list(self._incomplete)
            self._incomplete.clear()
            self._acc.clear_open()
            self._ready.clear()
        for batch in left:
            if not batch.future.done():
                batch.fail(IllegalStateError(
                    "the producer was closed before this record was delivered"))

    def _abort_open_transaction(self, timeout: float | None) -> None:
        """close() with a transaction open aborts it, as Java's sender does on a graceful
        close ("Aborting incomplete transaction due to shutdown")."""
        txn = self._txn
        if txn is None or not txn.transactional or txn.state not in (
                TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR,
                TxnState.ABORTING_TRANSACTION):
            return
        log.info("producer %s: aborting the open transaction on close",
                 self.config.transactional_id)
        try:
            self.abort_transaction(timeout)
        except GroupkitError as exc:
            log.warning("producer %s: the open transaction could not be aborted on close (%s);"
                        " the coordinator aborts it after transaction_timeout_ms",
                        self.config.transactional_id, exc)

    # --- transactions (Java's names and semantics; groupkit/txn holds the state) -------------

    def _transactions(self, call: str) -> tuple[TransactionManager, TransactionClient]:
        if self._txn is None or self._txn_client is None or not self._txn.transactional:
            raise IllegalStateError(f"{call}() needs a transactional producer: create it with"
                                    " transactional_id=...")
        return self._txn, self._txn_client

    def _deadline(self, timeout: float | None) -> float:
        return time.monotonic() + (self.config.max_block_ms / 1000 if timeout is None
                                   else timeout)

    def init_transactions(self, timeout: float | None = None) -> None:
        """Register the transactional id with its coordinator: fence (and abort the open
        transaction of) any earlier producer with the same id, and get this one's producer
        id and epoch. Call once, before the first ``begin_transaction``; within ``timeout``
        seconds (default ``max_block_ms``), else RequestTimeoutError (call it again to go on)."""
        txn, client = self._transactions("init_transactions")
        with self._lock:
            if txn.state is TxnState.UNINITIALIZED:
                txn.transition(TxnState.INITIALIZING)
            elif txn.state is not TxnState.INITIALIZING:
                txn.raise_if_error("init_transactions")
                raise IllegalStateError(f"init_transactions() while the producer is "
                                        f"{txn.state.value}; call it once per producer")
        client.init_producer_id(self._deadline(timeout))

    def begin_transaction(self) -> None:
        """Start a transaction: records sent from now until commit or abort belong to it."""
        txn, _ = self._transactions("begin_transaction")
        with self._lock:
            txn.begin()

    def send_offsets_to_transaction(
            self, offsets: Mapping[Any, OffsetAndMetadata | int],
            group_metadata: ConsumerGroupMetadata | str, timeout: float | None = None) -> None:
        """Commit a consumer group's ``offsets`` (topic-partition -> next offset to read) as
        part of the open transaction: they count only if it commits. Pass
        ``consumer.group_metadata()``, so a member fenced out of its group cannot commit
        (KIP-447: CommitFailedError, then the transaction must be aborted)."""
        txn, client = self._transactions("send_offsets_to_transaction")
        if isinstance(group_metadata, str):
            group_metadata = ConsumerGroupMetadata(group_metadata)
        if not isinstance(group_metadata, ConsumerGroupMetadata):
            raise ConfigError("group_metadata must be consumer.group_metadata() (or a group id)")
        with self._lock:
            txn.raise_if_error("send_offsets_to_transaction")
            if txn.state is not TxnState.IN_TRANSACTION:
                raise IllegalStateError("send_offsets_to_transaction() outside a transaction;"
                                        " call begin_transaction() first")
            if offsets:
                # The transaction's records go out while the offsets do, not after them at
                # commit's flush: their Produce overlaps AddOffsetsToTxn and TxnOffsetCommit
                # (Java leaves them to linger.ms, so in a quick loop they wait for the flush).
                for tp, batch in self._acc.open_batches():
                    self._seal(tp, batch)
        if offsets:
            deadline = self._deadline(timeout)
            # Their partitions are added first, from this thread: the sender, woken by the
            # first send, mostly gets no turn (the GIL) until this thread waits for the offsets,
            # and its AddPartitionsToTxn would then queue behind AddOffsetsToTxn at the
            # coordinator; Java's sender adds them as the records come, ahead of the offsets.
            try:
                self._add_partitions(deadline)
            finally:
                # Added, the sealed batches can go; not (out of time), the sender adds them.
                with self._lock:
                    self._wake.notify()
            client.send_offsets(offsets, group_metadata, deadline)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Deliver the transaction's records, then commit it (records and offsets become
        visible to read_committed readers together). AbortableTransactionError if a record or
        offset failed (call ``abort_transaction``); RequestTimeoutError after ``timeout``
        seconds (call it again to keep waiting)."""
        txn, client = self._transactions("commit_transaction")
        deadline = self._deadline(timeout)
        with self._lock:
            txn.ending(commit=True)
        self.flush(max(0.0, deadline - time.monotonic()))
        with self._lock:
            txn.raise_if_error("commit_transaction")
            started = txn.started
        if started:
            client.end_txn(True, deadline)
        with self._lock:
            txn.ended()

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort the transaction: records not sent yet fail with TransactionAbortedError, those
        written are marked aborted (read_committed readers skip them), its offsets do not
        count. Also the way out of an abortable error."""
        txn, client = self._transactions("abort_transaction")
        deadline = self._deadline(timeout)
        with self._lock:
            txn.ending(commit=False)
            self._abort_undrained()
        self.flush(max(0.0, deadline - time.monotonic()))
        with self._lock:
            if txn.state is TxnState.FATAL_ERROR:
                raise txn.fatal_error()
            started = txn.started
        if started:
            client.end_txn(False, deadline)
        with self._lock:
            txn.ended()
            bump = txn.state is TxnState.INITIALIZING
        if bump:
            client.init_producer_id(deadline)

    def _abort_undrained(self) -> None:
        """Fail the batches of an aborted transaction that were never sent (the lock is held;
        Java: RecordAccumulator.abortUndrainedBatches)."""
        error = TransactionAbortedError("the transaction was aborted before this record was"
                                        " sent")
        for tp, batch in self._acc.open_batches():
            self._acc.seal_open(tp, batch)
            self._finish(batch, error)
        keep: collections.deque[Batch] = collections.deque()
        for batch in self._ready:
            if batch.base_sequence < 0:
                self._finish(batch, error)
            else:
                keep.append(batch)
        self._ready = keep

    def _txn_step(self) -> None:
        """The sender thread's transaction work before it drains: an idempotent producer's
        epoch bump and producer id, a transaction's AddPartitionsToTxn. Never raises: a
        failure is retried after the back-off (batches meanwhile wait, bounded by
        delivery_timeout_ms), or has put the state in an error the application is told of."""
        txn, client = self._txn, self._txn_client
        assert txn is not None and client is not None
        now = time.monotonic()
        if now < self._txn_retry_at:
            return
        with self._lock:
            txn.bump_idempotent_epoch()
            txn.resolve_sequences()
            need_id = txn.needs_producer_id() and bool(self._incomplete)
            if need_id and txn.state is TxnState.UNINITIALIZED:
                txn.transition(TxnState.INITIALIZING)
            need_add = bool(txn.pending) and not txn.adding and txn.state in (
                TxnState.IN_TRANSACTION, TxnState.COMMITTING_TRANSACTION)
        if not (need_id or need_add):
            return
        deadline = now + self.config.request_timeout_ms / 1000
        try:
            if need_id:
                client.init_producer_id(deadline)
            if need_add:
                self._add_partitions(deadline)
            self._txn_retry_at = 0.0
        except UnsupportedVersionError as exc:
            # A broker (or api_version pin) without the API or version: retrying cannot help,
            # so the producer fails, as Java's TxnRequestHandler makes a version mismatch fatal.
            with self._lock:
                txn.fatal(exc)
            log.warning("producer: %s", exc)
        except GroupkitError as exc:
            log.warning("producer: %s", exc)
            self._txn_retry_at = time.monotonic() + self.config.retry_backoff_ms / 1000
        except Exception:
            log.exception("producer: transaction step failed unexpectedly")
            self._txn_retry_at = time.monotonic() + self.config.retry_backoff_ms / 1000
        with self._lock:
            self._wake.notify()

    def _add_partitions(self, deadline: float) -> None:
        """AddPartitionsToTxn for the partitions waiting to be added, unless one is in flight
        (on either thread)."""
        assert self._txn is not None and self._txn_client is not None
        try:
            self._txn_client.add_partitions(deadline)
        except UnsupportedVersionError as exc:
            with self._lock:
                self._txn.fatal(exc)  # as in _txn_step
            raise

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # --- the sender thread ---------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            if self._cluster.refresh_due_in() <= 0:
                self._refresh_metadata()
            if self._txn is not None:
                self._txn_step()
            with self._lock:
                if self._closed:
                    return
                wait = self._collect(time.monotonic())
                if not isinstance(wait, dict) and not self._outcomes:
                    if self._txn is not None and self._txn_retry_at:
                        wait = max(0.0, min(wait, self._txn_retry_at - time.monotonic()))
                    self._wake.wait(wait)
                    continue
            self._complete()
            if isinstance(wait, dict):
                for node, batches in wait.items():
                    self._send_to(node, batches)

    def _refresh_metadata(self) -> None:
        try:
            metadata = self._cluster.refresh()
        except GroupkitError as exc:
            log.warning("producer metadata refresh failed: %s", exc)
            return
        except Exception:
            # Never let a bug here stop the sender thread; batches time out instead.
            log.exception("producer metadata refresh failed unexpectedly")
            return
        with self._lock:
            for topic in list(self._partitions):
                info = metadata.topic(topic)
                if info is not None and info.partitions:
                    known = (info.partition_count, list(info.available))
                    if known != self._partitions[topic]:
                        self._partitions[topic] = known
                        self._sticky_now.pop(topic, None)

    def _collect(self, now: float) -> dict[int, list[Batch]] | float:
        """Batches to send now, by leader; or how long to sleep (at most until the metadata
        is due for a refresh)."""
        linger = self.config.linger_ms / 1000
        wake_at: float | None = None
        for tp, batch in self._acc.open_batches():
            if self._flushing or batch.created + linger <= now:
                self._seal(tp, batch)
            elif wake_at is None or batch.created + linger < wake_at:
                wake_at = batch.created + linger
        metadata = self._cluster.metadata
        limit = self.config.max_in_flight_requests_per_connection
        max_bytes = self.config.max_request_size
        chosen: dict[int, list[Batch]] = {}
        sizes: dict[int, int] = {}
        keep: collections.deque[Batch] = collections.deque()
        taken: set[tuple[str, int]] = set()
        txn = self._txn
        # Idempotent: a partition whose batch stays behind this round sends none after it.
        held = taken if txn is None else set()
        while self._ready:
            batch = self._ready.popleft()
            tp = (batch.topic, batch.partition)
            if now >= batch.deadline:
                error = RequestTimeoutError(
                    f"{batch.topic}-{batch.partition}: {len(batch.records)} records were not "
                    f"delivered within delivery_timeout_ms={self.config.delivery_timeout_ms}")
                if txn is not None:
                    txn.failed(batch, error, sent=batch.base_sequence >= 0)
                self._finish(batch, error)
                continue
            if txn is not None and txn.state is TxnState.FATAL_ERROR:
                self._finish(batch, txn.fatal_error())
                continue
            if batch.retry_at > now or tp in held or (
                    txn is not None and not txn.may_drain(tp, batch.base_sequence)):
                keep.append(batch)
                held.add(tp)
                if batch.retry_at > now:
                    wake_at = batch.retry_at if wake_at is None else min(wake_at, batch.retry_at)
                continue
            leader = metadata.leader_for(batch.topic, batch.partition)
            if leader is None:
                self._cluster.request_refresh()
                keep.append(batch)
                held.add(tp)
                continue
            if leader not in chosen:
                if self._in_flight[leader] >= limit:
                    keep.append(batch)
                    held.add(tp)
                    continue
                self._in_flight[leader] += 1
                chosen[leader], sizes[leader] = [], 0
            elif sizes[leader] + batch.size > max_bytes or tp in taken:
                keep.append(batch)
                held.add(tp)
                continue
            if txn is not None and batch.base_sequence < 0:
                txn.assign(batch)
            taken.add(tp)
            chosen[leader].append(batch)
            sizes[leader] += batch.size
        self._ready = keep
        if chosen:
            return chosen
        if keep and self._cluster.stale:
            return self.config.retry_backoff_ms / 1000
        refresh_at = now + self._cluster.refresh_due_in()
        wake_at = refresh_at if wake_at is None else min(wake_at, refresh_at)
        return max(0.0, wake_at - now)

    def _send_to(self, node: int, batches: list[Batch]) -> None:
        compression = self.config.compression
        topics: dict[str, list[ProduceRequestPartition]] = {}
        try:
            for batch in batches:
                batch.attempts += 1
                topics.setdefault(batch.topic, []).append(
                    ProduceRequestPartition(index=batch.partition,
                                            records=batch.encode(compression)))
        except Exception as exc:
            # An encoder failure fails these batches; the sender thread must live on.
            self._done_request(node, batches, exc, None)
            return
        request = ProduceRequest(
            transactional_id=self.config.transactional_id,
            acks=self.config.acks, timeout_ms=self.config.request_timeout_ms,
            topic_data=[ProduceRequestTopic(name=t, partition_data=p) for t, p in topics.items()])
        future = self._cluster.send(node, request, _PRODUCE_PURPOSE)
        future.add_done_callback(partial(self._on_response, node, batches))

    def _on_response(self, node: int, batches: list[Batch], future: Future[Any]) -> None:
        exc = future.exception()
        self._done_request(node, batches, exc, None if exc else future.result())

    def _done_request(self, node: int, batches: list[Batch], exc: BaseException | None,
                      response: ProduceResponse | None) -> None:
        """Finish, retry or fail each batch of one Produce request (on the reader thread)."""
        answers = {}
        if response is not None:
            answers = {(t.name, p.index): p for t in response.responses
                       for p in t.partition_responses}
        with self._lock:
            self._in_flight[node] -= 1
            for batch in batches:
                if exc is not None:
                    self._retry_or_fail(batch, exc)
                    continue
                if response is None:
                    self._finish(batch, (-1, -1))
                    continue
                answer = answers.get((batch.topic, batch.partition))
                if answer is None:
                    self._retry_or_fail(batch, KafkaConnectionError(
                        f"the broker's Produce answer did not mention {batch.topic}-"
                        f"{batch.partition}"))
                elif answer.error_code:
                    error = error_for_code(answer.error_code)(answer.error_message)
                    self._cluster.observe(error)
                    if self._txn is not None:
                        self._sequenced_error(batch, answer.error_code, error,
                                              answer.log_start_offset)
                    else:
                        self._retry_or_fail(batch, error)
                else:
                    if self._txn is not None:
                        self._txn.acked(batch, answer.base_offset)
                    self._finish(batch, (answer.base_offset, answer.log_append_time_ms))
            self._wake.notify()
        self._complete()

    def _retry_or_fail(self, batch: Batch, error: BaseException) -> None:
        retriable = isinstance(error, GroupkitError) and error.retriable
        if retriable and self._may_retry(batch):
            self._requeue(batch)
            return
        if self._txn is not None:
            self._txn.failed(batch, error, sent=batch.base_sequence >= 0)
        self._finish(batch, error)

    def _may_retry(self, batch: Batch) -> bool:
        return batch.attempts <= self.config.retries and time.monotonic() < batch.deadline \
            and not self._closed

    def _requeue(self, batch: Batch) -> None:
        """Queue a batch to go again after the back-off (the lock is held). An idempotent
        producer's goes before any later batch of its partition (Java:
        insertInSequenceOrder), so the partition's batches leave in sequence order."""
        batch.retry_at = time.monotonic() + self.config.retry_backoff().delay(batch.attempts)
        self._cluster.request_refresh()
        if self._txn is None or batch.base_sequence < 0:
            self._ready.appendleft(batch)
            return
        for i, other in enumerate(self._ready):
            if (other.topic, other.partition) == (batch.topic, batch.partition) and (
                    other.base_sequence < 0 or other.base_sequence > batch.base_sequence):
                self._ready.insert(i, batch)
                return
        self._ready.append(batch)

    def _sequenced_error(self, batch: Batch, code: int, error: BaseException,
                         log_start_offset: int) -> None:
        """An idempotent producer's batch answered with an error: the sequence rules decide
        (groupkit/txn/manager.py; the lock is held)."""
        assert self._txn is not None
        decision = self._txn.on_produce_error(batch, code, log_start_offset,
                                              self._may_retry(batch))
        if decision is ProduceDecision.RETRY:
            self._requeue(batch)
        elif decision is ProduceDecision.DUPLICATE:
            self._finish(batch, (-1, -1))
        else:
            self._finish(batch, error)

    def _finish(self, batch: Batch, outcome: tuple[int, int] | BaseException) -> None:
        """Free a batch's buffer space and queue its outcome: (base offset, log-append time)
        or the error that lost it (the lock is held).

        Futures are completed by ``_complete`` after the lock is released, so callbacks may
        call ``send()``.
        """
        self._incomplete.discard(batch)
        self._acc.buffered -= batch.size
        batch.encoded = None
        self._space.notify_all()
        self._outcomes.append((batch, outcome))

    def _complete(self) -> None:
        with self._lock:
            outcomes, self._outcomes = self._outcomes, []
        for batch, outcome in outcomes:
            if isinstance(outcome, BaseException):
                batch.fail(outcome)
            else:
                batch.complete(outcome)
