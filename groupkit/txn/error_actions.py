"""The one table from (transaction API, error code) to what the producer does about it.

Read from the Java client's TransactionManager handlers (InitProducerIdHandler,
AddPartitionsToTxnHandler, AddOffsetsToTxnHandler, EndTxnHandler, TxnOffsetCommitHandler, 3.x
with KIP-360, KIP-447, KIP-588 and KIP-890's TRANSACTION_ABORTABLE). A code without a row is
fatal, as Java's "Unexpected error in ...Response" is. INVALID_PRODUCER_EPOCH from a transaction
coordinator is an old broker's way of saying PRODUCER_FENCED (KIP-588), so both fence.
Produce errors are not here: whether a batch is retried depends on its sequence, so
``manager.TransactionManager.on_produce_error`` decides them.
"""

from __future__ import annotations

import enum

from groupkit.errors import ApiKey, ErrorCode


class TxnAction(enum.Enum):
    RETRY = "retry"
    """Send the same request again after the retry back-off (the coordinator is busy)."""
    FIND_COORDINATOR = "find coordinator"
    """Forget the coordinator, look it up again, then retry."""
    ABORTABLE = "abortable error"
    """The transaction cannot commit: the application must abort it, then may go on."""
    ABORTABLE_BUMP = "abortable error, epoch bump"
    """Abortable, and the broker lost the producer's state: the abort ends with InitProducerId
    carrying the current id and epoch (v3+, KIP-360), which bumps the epoch. A broker without
    v3 makes this fatal, as Java's abortableErrorIfPossible does."""
    COMMIT_FAILED = "group metadata mismatch"
    """TxnOffsetCommit from a member no longer in the group (KIP-447): abortable, raised as
    CommitFailedError."""
    FENCED = "fenced"
    """Fatal: another producer with the same transactional id took over (ProducerFencedError)."""
    FATAL = "fatal"
    """Fatal: the producer can do no more transactional work; close it."""


A = TxnAction
E = ErrorCode

_COORDINATOR_GONE: dict[int, TxnAction] = {E.COORDINATOR_NOT_AVAILABLE: A.FIND_COORDINATOR,
                     E.NOT_COORDINATOR: A.FIND_COORDINATOR}
_FENCED: dict[int, TxnAction] = {E.PRODUCER_FENCED: A.FENCED, E.INVALID_PRODUCER_EPOCH: A.FENCED}
_LOST_PRODUCER: dict[int, TxnAction] = {E.UNKNOWN_PRODUCER_ID: A.ABORTABLE_BUMP,
                  E.INVALID_PRODUCER_ID_MAPPING: A.ABORTABLE_BUMP}

ACTIONS: dict[int, dict[int, TxnAction]] = {
    ApiKey.INIT_PRODUCER_ID: {
        **_COORDINATOR_GONE, **_FENCED,
        E.COORDINATOR_LOAD_IN_PROGRESS: A.RETRY,
        E.CONCURRENT_TRANSACTIONS: A.RETRY,
        E.REQUEST_TIMED_OUT: A.RETRY,
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: A.FATAL,
        E.CLUSTER_AUTHORIZATION_FAILED: A.FATAL,
        E.TRANSACTION_ABORTABLE: A.ABORTABLE,
    },
    ApiKey.ADD_PARTITIONS_TO_TXN: {
        **_COORDINATOR_GONE, **_FENCED, **_LOST_PRODUCER,
        E.CONCURRENT_TRANSACTIONS: A.RETRY,
        E.COORDINATOR_LOAD_IN_PROGRESS: A.RETRY,
        E.UNKNOWN_TOPIC_OR_PARTITION: A.RETRY,
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: A.FATAL,
        E.INVALID_TXN_STATE: A.FATAL,
        E.TOPIC_AUTHORIZATION_FAILED: A.ABORTABLE,
        E.OPERATION_NOT_ATTEMPTED: A.ABORTABLE,
        E.TRANSACTION_ABORTABLE: A.ABORTABLE,
    },
    ApiKey.ADD_OFFSETS_TO_TXN: {
        **_COORDINATOR_GONE, **_FENCED, **_LOST_PRODUCER,
        E.COORDINATOR_LOAD_IN_PROGRESS: A.RETRY,
        E.CONCURRENT_TRANSACTIONS: A.RETRY,
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: A.FATAL,
        E.GROUP_AUTHORIZATION_FAILED: A.ABORTABLE,
        E.TRANSACTION_ABORTABLE: A.ABORTABLE,
    },
    ApiKey.END_TXN: {
        **_COORDINATOR_GONE, **_FENCED, **_LOST_PRODUCER,
        E.COORDINATOR_LOAD_IN_PROGRESS: A.RETRY,
        E.CONCURRENT_TRANSACTIONS: A.RETRY,
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: A.FATAL,
        E.INVALID_TXN_STATE: A.FATAL,
        E.TRANSACTION_ABORTABLE: A.ABORTABLE,
    },
    ApiKey.TXN_OFFSET_COMMIT: {
        **_COORDINATOR_GONE, **_FENCED,
        E.REQUEST_TIMED_OUT: A.FIND_COORDINATOR,
        E.UNKNOWN_TOPIC_OR_PARTITION: A.RETRY,
        E.COORDINATOR_LOAD_IN_PROGRESS: A.RETRY,
        E.GROUP_AUTHORIZATION_FAILED: A.ABORTABLE,
        E.FENCED_INSTANCE_ID: A.ABORTABLE,
        E.UNKNOWN_MEMBER_ID: A.COMMIT_FAILED,
        E.ILLEGAL_GENERATION: A.COMMIT_FAILED,
        E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: A.FATAL,
        E.UNSUPPORTED_FOR_MESSAGE_FORMAT: A.FATAL,
        E.TRANSACTION_ABORTABLE: A.ABORTABLE,
    },
}


def action_for(api_key: int, code: int) -> TxnAction:
    """What the producer does when ``api_key`` answers ``code`` (non-zero); fatal if unknown."""
    return ACTIONS[api_key].get(code, TxnAction.FATAL)
