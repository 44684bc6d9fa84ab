"""The idempotent and transactional producer's state machine (sans-IO).

After the Java client's ``TransactionManager`` (3.x/4.x): the state (``states.TxnState``), the
producer id and epoch, each partition's sequences (``sequences``), the partitions of the open
transaction, and the error that put it in an error state. The runtime asks it whether a batch
may be drained and which sequence it gets, tells it every Produce answer, and moves it through
the transaction's steps; it never reads a clock or a socket.

Where groupkit differs from Java, on purpose: a transactional producer whose batch fails for
good always ends the abort with an epoch bump (InitProducerId with its id and epoch, v3+), so
the sequences of every partition start again at 0; Java bumps only for some errors and
otherwise shifts the sequences of the batches after the failed one. Both leave the broker and
the producer agreeing; the bump costs one round trip on an abort that follows a failure.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

import attrs

from groupkit.errors import (
    AbortableTransactionError,
    ApiKey,
    BrokerError,
    ClusterAuthorizationFailedError,
    ErrorCode,
    FatalTransactionError,
    GroupkitError,
    IllegalStateError,
    ProducerFencedError,
    TransactionalIdAuthorizationFailedError,
    UnsupportedVersionError,
    error_for_code,
)
from groupkit.txn.error_actions import TxnAction, action_for
from groupkit.txn.sequences import (
    NO_PRODUCER_ID,
    PartitionSequences,
    ProducerIdAndEpoch,
    Sequenced,
    increment,
)
from groupkit.txn.states import TxnState, allowed

TopicPartition = tuple[str, int]
S = TxnState
#: An epoch is an int16: past this an idempotent producer asks for a new id (Java: Short.MAX).
_MAX_EPOCH = 32767
#: The retry back-off of a transaction's opening call refused with CONCURRENT_TRANSACTIONS: the
#: previous transaction's markers are still being written, which takes milliseconds (Java:
#: TransactionManager.ADD_PARTITIONS_RETRY_BACKOFF_MS, KAFKA-5482).
OPENING_RETRY_BACKOFF_S = 0.020
#: Errors that end the producer's transactional use (Java: maybeTransitionToErrorState).
_FATAL_ERRORS = (ClusterAuthorizationFailedError, TransactionalIdAuthorizationFailedError,
                 ProducerFencedError, UnsupportedVersionError)


class ProduceDecision(enum.Enum):
    """What becomes of a batch a broker answered with an error."""

    RETRY = "retry"
    FAIL = "fail"
    DUPLICATE = "duplicate"
    """DUPLICATE_SEQUENCE_NUMBER: the broker already has it; done, offset unknown."""


@attrs.define
class TransactionManager:
    """See the module docstring. ``transactional_id`` None: an idempotent producer."""

    transactional_id: str | None
    state: TxnState = S.UNINITIALIZED
    producer: ProducerIdAndEpoch = NO_PRODUCER_ID
    partitions: dict[TopicPartition, PartitionSequences] = attrs.field(factory=dict)
    #: Partitions the coordinator added to the open transaction, those still to add, and those
    #: of the AddPartitionsToTxn in flight (one at a time, as Java's sender sends them).
    in_transaction: set[TopicPartition] = attrs.field(factory=set)
    pending: set[TopicPartition] = attrs.field(factory=set)
    adding: frozenset[TopicPartition] = frozenset()
    last_error: BaseException | None = None
    #: The open transaction has partitions or offsets at the coordinator: ending it needs EndTxn.
    started: bool = False
    #: Transactional: the abort must end with an epoch bump. Idempotent: bump the epoch locally
    #: before the next drain, renumbering ``bump_partitions`` (KIP-360).
    epoch_bump_required: bool = False
    bump_partitions: set[TopicPartition] = attrs.field(factory=set)
    #: The broker takes InitProducerId v3+ (an epoch bump keeps the transactional id usable).
    supports_epoch_bump: bool = True
    #: Called with the manager after every change of state (the producer keeps its send fast
    #: path in step with ``refuses_sends``).
    on_change: Callable[[TransactionManager], None] | None = attrs.field(default=None,
                                                                         kw_only=True)

    @property
    def transactional(self) -> bool:
        return self.transactional_id is not None

    # --- states --------------------------------------------------------------------------------

    def transition(self, target: TxnState, error: BaseException | None = None) -> None:
        """Move to ``target`` (IllegalStateError if the table forbids it: a misuse or a bug)."""
        if self.state is S.FATAL_ERROR and target is not S.FATAL_ERROR:
            raise self.fatal_error()
        if not allowed(self.state, target):
            raise IllegalStateError(f"the producer cannot go from {self.state.value} to "
                                    f"{target.value}")
        self.state = target
        if target in (S.ABORTABLE_ERROR, S.FATAL_ERROR):
            self.last_error = error
        elif target is not S.ABORTING_TRANSACTION:
            self.last_error = None
        if self.on_change is not None:
            self.on_change(self)

    @property
    def refuses_sends(self) -> bool:
        """Whether ``check_send`` raises in this state (what the id alone decides aside):
        a fatal error; for a transactional producer, any state but IN_TRANSACTION."""
        return self.state is S.FATAL_ERROR or (self.transactional
                                                and self.state is not S.IN_TRANSACTION)

    def abortable(self, error: BaseException, bump: bool = False) -> None:
        """The open transaction must be aborted (a transactional producer; an idempotent one
        only fails the batch)."""
        if self.state is S.FATAL_ERROR or not self.transactional:
            return
        if bump:
            if not self.supports_epoch_bump:
                self.fatal(error)
                return
            self.epoch_bump_required = True
        if self.state in (S.ABORTING_TRANSACTION, S.READY, S.UNINITIALIZED):
            # An abort under way, or nothing open: the error is of no transaction.
            self.last_error = error
            return
        self.transition(S.ABORTABLE_ERROR, error)

    def fatal(self, error: BaseException) -> None:
        if self.state is not S.FATAL_ERROR:
            self.transition(S.FATAL_ERROR, error)

    def fatal_error(self) -> GroupkitError:
        """The exception a call in FATAL_ERROR raises: a fenced producer's ProducerFencedError
        as it is, the rest wrapped with what to do."""
        error = self.last_error
        if isinstance(error, ProducerFencedError):
            return ProducerFencedError(
                f"producer {self.transactional_id!r} was fenced: a newer producer with the same"
                " transactional id started (or this one's epoch expired); close this producer")
        wrapped = FatalTransactionError(
            f"the producer cannot go on ({error}); close it and create a new one")
        wrapped.__cause__ = error
        return wrapped

    def raise_if_error(self, call: str) -> None:
        """Raise the error state's exception before ``call`` (Java: maybeFailWithError)."""
        if self.state is S.FATAL_ERROR:
            raise self.fatal_error()
        if self.state is S.ABORTABLE_ERROR:
            wrapped = AbortableTransactionError(
                f"{call}: the transaction failed ({self.last_error}); call abort_transaction()"
                " and begin a new one")
            wrapped.__cause__ = self.last_error
            raise wrapped

    def check_send(self) -> None:
        """May the application send now? (Java: failIfNotReadyForSend.)"""
        if self.state is S.FATAL_ERROR:
            raise self.fatal_error()
        if not self.transactional:
            return
        if self.state is S.ABORTABLE_ERROR:
            self.raise_if_error("send")
        if not self.producer.valid and self.state is not S.IN_TRANSACTION:
            raise IllegalStateError("send() on a transactional producer needs init_transactions()"
                                    " first, then begin_transaction()")
        if self.state is not S.IN_TRANSACTION:
            raise IllegalStateError(f"send() on a transactional producer outside a transaction"
                                    f" (the producer is {self.state.value}); call"
                                    " begin_transaction() first")

    # --- the producer id -----------------------------------------------------------------------

    def initialized(self, producer: ProducerIdAndEpoch) -> None:
        """InitProducerId answered: a new id or epoch. Every partition's sequences restart."""
        bumped = self.producer.valid and producer.producer_id == self.producer.producer_id
        self.producer = producer
        self.epoch_bump_required = False
        self.bump_partitions.clear()
        if not bumped:
            self.partitions.clear()
        for entry in self.partitions.values():
            if not entry.in_flight:
                entry.restart(producer)
        if self.state is not S.READY:
            self.transition(S.READY)

    def needs_producer_id(self) -> bool:
        """An idempotent producer without a usable id must ask for one before draining."""
        return not self.transactional and not self.producer.valid and self.state is not \
            S.FATAL_ERROR

    def bump_idempotent_epoch(self) -> None:
        """KIP-360, idempotent only: bump the epoch locally and renumber the partitions that
        asked (Java: bumpIdempotentProducerEpoch); at the epoch's limit, forget the id."""
        if self.transactional or not self.epoch_bump_required:
            return
        if self.producer.epoch >= _MAX_EPOCH:
            self.producer = NO_PRODUCER_ID
            self.partitions.clear()
        else:
            self.producer = ProducerIdAndEpoch(self.producer.producer_id, self.producer.epoch + 1)
            for tp in self.bump_partitions:
                entry = self.partitions.get(tp)
                if entry is not None:
                    entry.restart(self.producer)
        self.bump_partitions.clear()
        self.epoch_bump_required = False

    def _request_bump(self, tp: TopicPartition) -> None:
        if not self.transactional:
            self.bump_partitions.add(tp)
            self.epoch_bump_required = True

    # --- draining ------------------------------------------------------------------------------

    def _entry(self, tp: TopicPartition) -> PartitionSequences:
        entry = self.partitions.get(tp)
        if entry is None:
            entry = self.partitions[tp] = PartitionSequences(self.producer)
        return entry

    def may_drain(self, tp: TopicPartition, base_sequence: int) -> bool:
        """Whether the next batch of ``tp`` (``base_sequence`` -1: never sent) may be sent now
        (Java: RecordAccumulator.shouldStopDrainBatchesForPartition, negated)."""
        if self.state is S.FATAL_ERROR or not self.producer.valid:
            return False
        if self.transactional and tp not in self.in_transaction:
            return False
        entry = self.partitions.get(tp)
        if entry is None:
            return True
        if base_sequence < 0:
            if entry.in_flight and entry.producer != self.producer:
                # Earlier batches still carry the old epoch: a new one at sequence 0 could land
                # before them and be out of order.
                return False
            # Unresolved: what the broker holds is unknown until the batches in flight end.
            return not entry.unresolved
        first = entry.first_in_flight()
        # A retried batch goes only when it is the first in flight: the others wait for it,
        # which keeps the partition's order (in flight drops to one while it is retried).
        return first is None or first == base_sequence

    def assign(self, batch: Sequenced) -> None:
        """Give a batch drained for the first time its id, epoch and base sequence."""
        tp = (batch.topic, batch.partition)
        entry = self._entry(tp)
        if entry.producer != self.producer and not entry.in_flight:
            entry.restart(self.producer)
        batch.restamp(self.producer, entry.next_sequence)
        entry.in_flight[entry.next_sequence] = batch
        entry.next_sequence = increment(entry.next_sequence, batch.record_count)

    def add_partition(self, tp: TopicPartition) -> bool:
        """A transactional send to ``tp``: True when AddPartitionsToTxn must name it first."""
        if tp in self.in_transaction or tp in self.pending or tp in self.adding:
            return False
        self.pending.add(tp)
        return True

    def take_pending(self) -> frozenset[TopicPartition]:
        """The partitions the next AddPartitionsToTxn names, now in flight; none while one is
        in flight already (whichever thread sends it: the sender, or the application's
        ``send_offsets_to_transaction``)."""
        if self.adding or not self.pending:
            return frozenset()
        self.adding = frozenset(self.pending)
        self.pending.clear()
        return self.adding

    def partitions_added(self, tps: frozenset[TopicPartition]) -> None:
        """The AddPartitionsToTxn of ``tps`` (from ``take_pending``) succeeded: their batches may
        be drained. The late answer of an ended transaction's request changes nothing."""
        if not tps or tps is not self.adding:
            return
        self.adding = frozenset()
        self.in_transaction |= tps
        self.started = True

    def partitions_not_added(self, tps: frozenset[TopicPartition]) -> None:
        """The AddPartitionsToTxn of ``tps`` failed or ran out of time: the next one names
        them again (in an error state none is sent)."""
        if not tps or tps is not self.adding:
            return
        self.adding = frozenset()
        self.pending |= tps

    def offsets_added(self) -> None:
        """AddOffsetsToTxn answered: the transaction is open at the coordinator."""
        self.started = True

    # --- answers to Produce --------------------------------------------------------------------

    def _owner(self, batch: Sequenced) -> PartitionSequences | None:
        entry = self.partitions.get((batch.topic, batch.partition))
        if entry is None or entry.in_flight.get(batch.base_sequence) is not batch:
            return None
        return entry

    def acked(self, batch: Sequenced, base_offset: int) -> None:
        """The broker wrote the batch at ``base_offset``."""
        entry = self._owner(batch)
        if entry is None:
            return
        del entry.in_flight[batch.base_sequence]
        last = increment(batch.base_sequence, batch.record_count - 1)
        if entry.producer == ProducerIdAndEpoch(batch.producer_id, batch.producer_epoch):
            entry.last_acked = max(entry.last_acked, last)
            if base_offset >= 0:
                entry.last_acked_offset = max(entry.last_acked_offset,
                                              base_offset + batch.record_count - 1)

    def _is_next(self, entry: PartitionSequences, base_sequence: int) -> bool:
        return base_sequence == increment(entry.last_acked, 1)

    def on_produce_error(self, batch: Sequenced, code: int, log_start_offset: int,
                         may_retry: bool) -> ProduceDecision:
        """A broker answered the batch with ``code``; ``may_retry`` is False once the batch is
        out of retries or time (Java: Sender.canRetry, TransactionManager.canRetry and
        handleFailedBatch)."""
        if code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER:
            self.acked(batch, -1)
            return ProduceDecision.DUPLICATE
        error_cls = error_for_code(code)
        if may_retry and self._can_retry(batch, code, log_start_offset, error_cls.retriable):
            return ProduceDecision.RETRY
        self.failed(batch, error_cls(), sent=True)
        return ProduceDecision.FAIL

    def _can_retry(self, batch: Sequenced, code: int, log_start_offset: int,
                   retriable: bool) -> bool:
        entry = self._owner(batch)
        if entry is None:
            return retriable
        tp = (batch.topic, batch.partition)
        reset = getattr(batch, "sequence_reset", False)
        if code == ErrorCode.UNKNOWN_PRODUCER_ID:
            if log_start_offset == -1 or reset:
                return True
            if entry.last_acked_offset < log_start_offset:
                # The log's head, with the producer's state, was deleted (retention).
                if self.transactional:
                    entry.restart(self.producer)
                else:
                    self._request_bump(tp)
                return True
            if not self.transactional:
                self._request_bump(tp)
                return True
            return False
        if code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER:
            if not entry.unresolved and (reset or not self._is_next(entry, batch.base_sequence)):
                # Not the next batch: an earlier one failed, so this one waits and goes again.
                return True
            if not self.transactional:
                # A real gap: the idempotent producer bumps its epoch and goes on.
                self._request_bump(tp)
                return True
            return False
        return retriable

    def failed(self, batch: Sequenced, error: BaseException, sent: bool) -> None:
        """The batch failed for good (an error, or its delivery timeout). ``sent``: it may
        have reached a broker, so what the partition holds is unknown."""
        if isinstance(error, _FATAL_ERRORS):
            self.fatal(error)
        elif self.transactional:
            self.abortable(error, bump=sent and batch.base_sequence >= 0)
        entry = self._owner(batch)
        if entry is None or self.state is S.FATAL_ERROR:
            return
        del entry.in_flight[batch.base_sequence]
        if self.transactional:
            return
        tp = (batch.topic, batch.partition)
        if isinstance(error, BrokerError):
            # OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID or an error that stopped this
            # batch while later ones may be in flight: start the partition again, new epoch.
            self._request_bump(tp)
        elif sent:
            # A timeout: resolved once the batches after it are answered.
            entry.unresolved = True

    def resolve_sequences(self) -> None:
        """Idempotent: a partition whose batch timed out after being sent is settled once its
        batches in flight finish: if every sequence handed out was acknowledged, nothing was
        lost; otherwise bump the epoch (Java: maybeResolveSequences)."""
        for tp, entry in self.partitions.items():
            if entry.unresolved and not entry.in_flight:
                entry.unresolved = False
                if not self._is_next(entry, entry.next_sequence):
                    self._request_bump(tp)

    # --- the transaction's steps ---------------------------------------------------------------

    def begin(self) -> None:
        self.raise_if_error("begin_transaction")
        if self.state is not S.READY:
            raise IllegalStateError(f"begin_transaction() while the producer is "
                                    f"{self.state.value}; init_transactions() first, and end a"
                                    " transaction before beginning the next")
        self.transition(S.IN_TRANSACTION)

    def ending(self, commit: bool) -> None:
        """commit_transaction / abort_transaction asked: COMMITTING or ABORTING."""
        if self.state is S.FATAL_ERROR:
            raise self.fatal_error()
        target = S.COMMITTING_TRANSACTION if commit else S.ABORTING_TRANSACTION
        if self.state is target:
            return  # a call that timed out, made again
        if commit:
            self.raise_if_error("commit_transaction")
        if self.state not in (S.IN_TRANSACTION, S.ABORTABLE_ERROR):
            raise IllegalStateError(
                f"{'commit' if commit else 'abort'}_transaction() while the producer is "
                f"{self.state.value}; begin_transaction() first")
        self.transition(target)

    def ended(self) -> None:
        """EndTxn answered (or nothing needed sending): READY, unless the abort must bump."""
        self.in_transaction.clear()
        self.pending.clear()
        self.adding = frozenset()
        self.started = False
        if self.state is S.ABORTING_TRANSACTION and self.epoch_bump_required:
            self.transition(S.INITIALIZING)
            return
        self.transition(S.READY)

    def retry_delay(self, api_key: int, code: int, backoff_s: float) -> float:
        """Seconds to wait before sending ``api_key`` again after it was refused with ``code``
        (a RETRY of the error table), ``backoff_s`` being the retry back-off's.

        A coordinator still writing the previous transaction's markers (Kafka answers EndTxn
        before they are written) refuses the next transaction's first AddPartitionsToTxn with
        CONCURRENT_TRANSACTIONS; Java retries it after 20 ms instead of retry.backoff.ms
        (AddPartitionsToTxnHandler.maybeOverrideRetryBackoffMs, while no partition is in the
        transaction), or a tight read-process-write loop would wait 100 ms per transaction.
        groupkit's application thread often reaches the coordinator with AddOffsetsToTxn
        before the sender thread sends AddPartitionsToTxn, so it gets the same 20 ms while
        nothing of the transaction is at the coordinator (Java gives it retry.backoff.ms: its
        sender has normally added the partitions first)."""
        if code == ErrorCode.CONCURRENT_TRANSACTIONS and not self.started and api_key in (
                ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN):
            return min(backoff_s, OPENING_RETRY_BACKOFF_S)
        return backoff_s

    def apply(self, api_key: int, code: int, message: str | None = None) -> TxnAction:
        """A transaction API answered ``code`` (non-zero): take the table's action on the state
        and return it (RETRY and FIND_COORDINATOR are the runtime's to carry out)."""
        action = action_for(api_key, code)
        error = error_for_code(code)(message)
        if action is TxnAction.FENCED:
            self.fatal(ProducerFencedError(message))
        elif action is TxnAction.FATAL:
            self.fatal(error)
        elif action in (TxnAction.ABORTABLE, TxnAction.ABORTABLE_BUMP, TxnAction.COMMIT_FAILED):
            self.abortable(error, bump=action is TxnAction.ABORTABLE_BUMP)
        return action
