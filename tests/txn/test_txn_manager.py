"""The transactional producer's state machine, sans-IO: the state table, the error table and
the sequence rules, against the Java client's TransactionManager behaviour."""

from __future__ import annotations

import attrs
import pytest

from groupkit.errors import (
    AbortableTransactionError,
    ApiKey,
    ErrorCode,
    FatalTransactionError,
    IllegalStateError,
    ProducerFencedError,
    RequestTimeoutError,
)
from groupkit.txn.error_actions import ACTIONS, TxnAction, action_for
from groupkit.txn.manager import ProduceDecision, TransactionManager
from groupkit.txn.sequences import ProducerIdAndEpoch
from groupkit.txn.states import ENTERED_FROM, TxnState, allowed

S = TxnState
E = ErrorCode
TP = ("t", 0)
PID = ProducerIdAndEpoch(1000, 0)


@attrs.define(eq=False)
class FakeBatch:
    topic: str
    partition: int
    record_count: int
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    sequence_reset: bool = False

    def restamp(self, producer: ProducerIdAndEpoch, base_sequence: int) -> None:
        if self.base_sequence >= 0:
            self.sequence_reset = True
        self.producer_id, self.producer_epoch = producer.producer_id, producer.epoch
        self.base_sequence = base_sequence


def idempotent() -> TransactionManager:
    manager = TransactionManager(None)
    manager.transition(S.INITIALIZING)
    manager.initialized(PID)
    return manager


def transactional(in_txn: bool = True) -> TransactionManager:
    manager = TransactionManager("tx")
    manager.transition(S.INITIALIZING)
    manager.initialized(PID)
    if in_txn:
        manager.begin()
        manager.add_partition(TP)
        manager.partitions_added(manager.take_pending())
    return manager


def drain(manager: TransactionManager, count: int = 10, tp: tuple[str, int] = TP) -> FakeBatch:
    batch = FakeBatch(tp[0], tp[1], count)
    assert manager.may_drain(tp, batch.base_sequence)
    manager.assign(batch)
    return batch


# --- the tables ---------------------------------------------------------------------------------


def test_fatal_error_is_entered_from_anywhere_and_never_left() -> None:
    assert ENTERED_FROM[S.FATAL_ERROR] == frozenset(TxnState)
    assert not any(S.FATAL_ERROR in sources for target, sources in ENTERED_FROM.items()
                   if target is not S.FATAL_ERROR)


def test_abortable_error_is_left_only_by_aborting() -> None:
    leaving = {t for t, sources in ENTERED_FROM.items() if S.ABORTABLE_ERROR in sources}
    assert leaving == {S.ABORTING_TRANSACTION, S.ABORTABLE_ERROR, S.UNINITIALIZED, S.FATAL_ERROR}


def test_a_transaction_cannot_begin_inside_another() -> None:
    assert not allowed(S.IN_TRANSACTION, S.IN_TRANSACTION)
    manager = transactional()
    with pytest.raises(IllegalStateError, match="begin_transaction"):
        manager.begin()


@pytest.mark.parametrize("api_key", list(ACTIONS))
def test_fencing_codes_fence_on_every_coordinator_api(api_key: int) -> None:
    assert action_for(api_key, E.PRODUCER_FENCED) is TxnAction.FENCED
    assert action_for(api_key, E.INVALID_PRODUCER_EPOCH) is TxnAction.FENCED
    assert action_for(api_key, E.NOT_COORDINATOR) is TxnAction.FIND_COORDINATOR
    assert action_for(api_key, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED) is TxnAction.FATAL


def test_error_table_rows_as_java() -> None:
    assert action_for(ApiKey.ADD_PARTITIONS_TO_TXN, E.CONCURRENT_TRANSACTIONS) is TxnAction.RETRY
    assert action_for(ApiKey.END_TXN, E.COORDINATOR_LOAD_IN_PROGRESS) is TxnAction.RETRY
    assert action_for(ApiKey.END_TXN, E.INVALID_TXN_STATE) is TxnAction.FATAL
    assert action_for(ApiKey.END_TXN, E.UNKNOWN_PRODUCER_ID) is TxnAction.ABORTABLE_BUMP
    assert action_for(ApiKey.TXN_OFFSET_COMMIT, E.ILLEGAL_GENERATION) is TxnAction.COMMIT_FAILED
    assert action_for(ApiKey.TXN_OFFSET_COMMIT, E.UNKNOWN_MEMBER_ID) is TxnAction.COMMIT_FAILED
    assert action_for(ApiKey.TXN_OFFSET_COMMIT, E.FENCED_INSTANCE_ID) is TxnAction.ABORTABLE
    assert action_for(ApiKey.ADD_OFFSETS_TO_TXN, E.GROUP_AUTHORIZATION_FAILED) is \
        TxnAction.ABORTABLE
    # A code no handler knows is fatal, as Java's "Unexpected error in ...Response".
    assert action_for(ApiKey.END_TXN, E.UNKNOWN_SERVER_ERROR) is TxnAction.FATAL


# --- the transaction's steps ---------------------------------------------------------------------


def test_send_outside_a_transaction_is_refused() -> None:
    manager = TransactionManager("tx")
    with pytest.raises(IllegalStateError, match="init_transactions"):
        manager.check_send()
    manager = transactional(in_txn=False)
    with pytest.raises(IllegalStateError, match="begin_transaction"):
        manager.check_send()
    manager.begin()
    manager.check_send()


def test_a_partition_is_drained_only_once_added_to_the_transaction() -> None:
    manager = transactional(in_txn=False)
    manager.begin()
    assert manager.add_partition(("t", 1)) is True
    assert manager.add_partition(("t", 1)) is False
    assert not manager.may_drain(("t", 1), -1)
    manager.partitions_added(manager.take_pending())
    assert manager.may_drain(("t", 1), -1)


def test_one_add_partitions_in_flight_at_a_time() -> None:
    """Either thread may send AddPartitionsToTxn (the sender, or the application's
    send_offsets_to_transaction): one at a time, a failed one's partitions named again, and
    the late answer of an ended transaction's request changes nothing."""
    manager = transactional(in_txn=False)
    manager.begin()
    manager.add_partition(("t", 1))
    first = manager.take_pending()
    assert first == {("t", 1)}
    manager.add_partition(("t", 2))
    assert manager.add_partition(("t", 1)) is False  # in flight: not named twice
    assert manager.take_pending() == frozenset()  # one in flight already
    manager.partitions_not_added(first)
    retry = manager.take_pending()
    assert retry == {("t", 1), ("t", 2)}
    manager.partitions_added(retry)
    assert manager.may_drain(("t", 1), -1) and manager.may_drain(("t", 2), -1)
    assert manager.take_pending() == frozenset()
    # An abort ends the transaction while an add is in flight; its answer comes after.
    manager.add_partition(("t", 3))
    late = manager.take_pending()
    manager.ending(commit=False)
    manager.ended()
    manager.begin()
    manager.add_partition(("t", 3))
    now = manager.take_pending()
    manager.partitions_added(late)
    assert not manager.may_drain(("t", 3), -1) and not manager.started
    manager.partitions_added(now)
    assert manager.may_drain(("t", 3), -1)


def test_commit_then_ready_again() -> None:
    manager = transactional()
    manager.ending(commit=True)
    assert manager.state is S.COMMITTING_TRANSACTION
    manager.ending(commit=True)  # a timed-out call made again
    manager.ended()
    assert manager.state is S.READY and not manager.in_transaction


def test_abortable_error_blocks_commit_until_aborted() -> None:
    manager = transactional()
    manager.apply(ApiKey.ADD_OFFSETS_TO_TXN, E.GROUP_AUTHORIZATION_FAILED)
    assert manager.state is S.ABORTABLE_ERROR
    with pytest.raises(AbortableTransactionError, match="abort_transaction"):
        manager.ending(commit=True)
    with pytest.raises(AbortableTransactionError):
        manager.check_send()
    manager.ending(commit=False)
    manager.ended()
    assert manager.state is S.READY
    manager.begin()


def test_fenced_producer_raises_producer_fenced_on_every_call() -> None:
    manager = transactional()
    assert manager.apply(ApiKey.END_TXN, E.PRODUCER_FENCED) is TxnAction.FENCED
    assert manager.state is S.FATAL_ERROR
    for call in (manager.check_send, manager.begin, lambda: manager.ending(False)):
        with pytest.raises(ProducerFencedError, match="fenced"):
            call()


def test_old_coordinators_fence_with_invalid_producer_epoch() -> None:
    manager = transactional()
    manager.apply(ApiKey.ADD_PARTITIONS_TO_TXN, E.INVALID_PRODUCER_EPOCH)
    with pytest.raises(ProducerFencedError):
        manager.begin()


def test_authorization_failure_is_fatal() -> None:
    manager = transactional()
    manager.apply(ApiKey.INIT_PRODUCER_ID, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    with pytest.raises(FatalTransactionError, match="close it"):
        manager.begin()


def test_lost_producer_state_makes_the_abort_bump_the_epoch() -> None:
    manager = transactional()
    manager.apply(ApiKey.END_TXN, E.UNKNOWN_PRODUCER_ID)
    assert manager.state is S.ABORTABLE_ERROR and manager.epoch_bump_required
    manager.ending(commit=False)
    manager.ended()
    assert manager.state is S.INITIALIZING
    manager.initialized(ProducerIdAndEpoch(PID.producer_id, PID.epoch + 1))
    assert manager.state is S.READY and not manager.epoch_bump_required


def test_without_epoch_bump_support_lost_state_is_fatal() -> None:
    manager = transactional()
    manager.supports_epoch_bump = False
    manager.apply(ApiKey.END_TXN, E.UNKNOWN_PRODUCER_ID)
    assert manager.state is S.FATAL_ERROR


# --- sequences -----------------------------------------------------------------------------------


def test_sequences_count_records_per_partition() -> None:
    manager = idempotent()
    first, second = drain(manager, 10), drain(manager, 5)
    other = drain(manager, 3, ("t", 1))
    assert (first.base_sequence, second.base_sequence, other.base_sequence) == (0, 10, 0)
    assert (first.producer_id, first.producer_epoch) == (1000, 0)
    manager.acked(first, 0)
    manager.acked(second, 10)
    assert drain(manager, 1).base_sequence == 15


def test_a_retried_batch_goes_only_when_first_in_flight() -> None:
    """Ordering across retries with several in flight: the second batch, answered
    OUT_OF_ORDER because the first failed, waits until the first is written again."""
    manager = idempotent()
    first, second = drain(manager, 10), drain(manager, 10)
    assert manager.on_produce_error(first, E.NOT_LEADER_OR_FOLLOWER, -1, True) is \
        ProduceDecision.RETRY
    # Not the next sequence after the last acknowledged one: retried without an epoch bump.
    assert manager.on_produce_error(second, E.OUT_OF_ORDER_SEQUENCE_NUMBER, 0, True) is \
        ProduceDecision.RETRY
    assert not manager.epoch_bump_required
    assert not manager.may_drain(TP, second.base_sequence)
    assert manager.may_drain(TP, first.base_sequence)
    manager.acked(first, 0)
    assert manager.may_drain(TP, second.base_sequence)


def test_duplicate_sequence_completes_the_batch() -> None:
    manager = idempotent()
    batch = drain(manager)
    assert manager.on_produce_error(batch, E.DUPLICATE_SEQUENCE_NUMBER, 0, True) is \
        ProduceDecision.DUPLICATE
    assert not manager.partitions[TP].in_flight


def test_out_of_order_at_the_next_sequence_bumps_the_idempotent_epoch() -> None:
    """KIP-360: a real gap (the batch is the next one after the last acknowledged) is retried
    after a local epoch bump that numbers the partition's batches from 0 again."""
    manager = idempotent()
    batch = drain(manager)
    later = drain(manager)
    assert manager.on_produce_error(batch, E.OUT_OF_ORDER_SEQUENCE_NUMBER, 0, True) is \
        ProduceDecision.RETRY
    assert manager.epoch_bump_required
    manager.bump_idempotent_epoch()
    assert manager.producer == ProducerIdAndEpoch(1000, 1)
    assert (batch.base_sequence, batch.producer_epoch) == (0, 1)
    assert (later.base_sequence, later.producer_epoch) == (10, 1)
    assert batch.sequence_reset


def test_unknown_producer_id_after_retention_bumps_the_epoch() -> None:
    manager = idempotent()
    batch = drain(manager)
    manager.acked(batch, 0)
    again = drain(manager)
    assert manager.on_produce_error(again, E.UNKNOWN_PRODUCER_ID, 50, True) is \
        ProduceDecision.RETRY
    assert manager.epoch_bump_required
    # Without the log start offset the answer says nothing yet: retried as it is.
    manager = idempotent()
    batch = drain(manager)
    assert manager.on_produce_error(batch, E.UNKNOWN_PRODUCER_ID, -1, True) is \
        ProduceDecision.RETRY
    assert not manager.epoch_bump_required


def test_transactional_out_of_order_at_the_next_sequence_is_abortable() -> None:
    manager = transactional()
    batch = drain(manager)
    assert manager.on_produce_error(batch, E.OUT_OF_ORDER_SEQUENCE_NUMBER, 0, True) is \
        ProduceDecision.FAIL
    assert manager.state is S.ABORTABLE_ERROR and manager.epoch_bump_required


def test_a_batch_out_of_retries_fails_and_the_idempotent_producer_bumps() -> None:
    manager = idempotent()
    batch = drain(manager)
    assert manager.on_produce_error(batch, E.NOT_LEADER_OR_FOLLOWER, -1, False) is \
        ProduceDecision.FAIL
    assert manager.epoch_bump_required


def test_an_expired_sent_batch_leaves_the_partition_unresolved_until_in_flight_ends() -> None:
    manager = idempotent()
    batch, later = drain(manager), drain(manager)
    manager.failed(batch, RequestTimeoutError("expired"), sent=True)
    assert manager.partitions[TP].unresolved
    assert not manager.may_drain(TP, -1)
    manager.on_produce_error(later, E.OUT_OF_ORDER_SEQUENCE_NUMBER, 0, False)
    manager.resolve_sequences()
    assert manager.epoch_bump_required


def test_new_batches_wait_while_old_epoch_batches_are_in_flight() -> None:
    manager = idempotent()
    old = drain(manager, tp=("t", 1))
    stuck = drain(manager)
    manager.on_produce_error(stuck, E.OUT_OF_ORDER_SEQUENCE_NUMBER, 0, True)
    manager.bump_idempotent_epoch()
    assert not manager.may_drain(("t", 1), -1)
    manager.acked(old, 0)
    fresh = drain(manager, tp=("t", 1))
    assert (fresh.base_sequence, fresh.producer_epoch) == (0, 1)


def test_fatal_error_stops_draining() -> None:
    manager = transactional()
    manager.apply(ApiKey.ADD_PARTITIONS_TO_TXN, E.PRODUCER_FENCED)
    assert not manager.may_drain(TP, -1)


@pytest.mark.parametrize("transactional_id", ["tx", None], ids=["transactional", "idempotent"])
@pytest.mark.parametrize("state", list(TxnState))
def test_refuses_sends_exactly_where_check_send_raises(transactional_id, state) -> None:
    """The producer's fast path declines every record while ``refuses_sends`` holds, so send()
    raises in exactly the states where check_send does (Java: failIfNotReadyForSend)."""
    txn = TransactionManager(transactional_id)
    txn.producer = PID
    txn.state = state
    txn.last_error = ProducerFencedError("fenced")
    try:
        txn.check_send()
        raised = False
    except (IllegalStateError, AbortableTransactionError, FatalTransactionError,
            ProducerFencedError):
        raised = True
    assert txn.refuses_sends is raised


def test_every_transition_reports_whether_sends_are_refused() -> None:
    seen: list[tuple[TxnState, bool]] = []
    txn = TransactionManager("tx", on_change=lambda m: seen.append((m.state, m.refuses_sends)))
    txn.transition(S.INITIALIZING)
    txn.initialized(PID)
    txn.begin()
    txn.abortable(RuntimeError("lost"))
    txn.fatal(RuntimeError("fenced"))
    assert seen == [(S.INITIALIZING, True), (S.READY, True), (S.IN_TRANSACTION, False),
                    (S.ABORTABLE_ERROR, True), (S.FATAL_ERROR, True)]


def test_a_transactions_opening_call_refused_as_concurrent_retries_after_20_ms() -> None:
    """The coordinator still writing the last transaction's markers refuses the next one's
    first call with CONCURRENT_TRANSACTIONS: retried after 20 ms, not the retry back-off (Java:
    AddPartitionsToTxnHandler.maybeOverrideRetryBackoffMs); later calls keep the back-off."""
    manager = transactional(in_txn=False)
    manager.begin()
    for api_key in (ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN):
        assert manager.retry_delay(api_key, E.CONCURRENT_TRANSACTIONS, 0.1) == 0.02
        # Never longer than the back-off asked for.
        assert manager.retry_delay(api_key, E.CONCURRENT_TRANSACTIONS, 0.005) == 0.005
        assert manager.retry_delay(api_key, E.COORDINATOR_LOAD_IN_PROGRESS, 0.1) == 0.1
    assert manager.retry_delay(ApiKey.END_TXN, E.CONCURRENT_TRANSACTIONS, 0.1) == 0.1
    # Once something of the transaction is at the coordinator, the back-off is the configured one.
    manager.add_partition(TP)
    manager.partitions_added(manager.take_pending())
    assert manager.retry_delay(ApiKey.ADD_PARTITIONS_TO_TXN, E.CONCURRENT_TRANSACTIONS,
                               0.1) == 0.1
    assert manager.retry_delay(ApiKey.ADD_OFFSETS_TO_TXN, E.CONCURRENT_TRANSACTIONS, 0.1) == 0.1
    manager.ending(commit=True)
    manager.ended()
    manager.begin()
    manager.offsets_added()
    assert manager.retry_delay(ApiKey.ADD_PARTITIONS_TO_TXN, E.CONCURRENT_TRANSACTIONS,
                               0.1) == 0.1
