"""The transactional producer's states and which transitions are allowed: the one table.

After the Java client's ``TransactionManager.State.isTransitionValid`` (3.x/4.x): each target
state lists the states it may be entered from. FATAL_ERROR may be entered from anywhere and never
left; ABORTABLE_ERROR is left only by aborting. An idempotent (non-transactional) producer uses
UNINITIALIZED, INITIALIZING, READY and FATAL_ERROR only.
"""

from __future__ import annotations

import enum


class TxnState(enum.Enum):
    UNINITIALIZED = "uninitialized"
    INITIALIZING = "initializing"
    READY = "ready"
    IN_TRANSACTION = "in transaction"
    COMMITTING_TRANSACTION = "committing transaction"
    ABORTING_TRANSACTION = "aborting transaction"
    ABORTABLE_ERROR = "abortable error"
    FATAL_ERROR = "fatal error"


S = TxnState

#: target state -> the states it may be entered from.
ENTERED_FROM: dict[TxnState, frozenset[TxnState]] = {
    # An idempotent producer forgets its id (an epoch that cannot grow) and asks again.
    S.UNINITIALIZED: frozenset({S.READY, S.ABORTABLE_ERROR}),
    # init_transactions, or the epoch bump that ends an abort after an abortable error.
    S.INITIALIZING: frozenset({S.UNINITIALIZED, S.ABORTING_TRANSACTION}),
    S.READY: frozenset({S.INITIALIZING, S.COMMITTING_TRANSACTION, S.ABORTING_TRANSACTION}),
    S.IN_TRANSACTION: frozenset({S.READY}),
    S.COMMITTING_TRANSACTION: frozenset({S.IN_TRANSACTION}),
    S.ABORTING_TRANSACTION: frozenset({S.IN_TRANSACTION, S.ABORTABLE_ERROR}),
    S.ABORTABLE_ERROR: frozenset({S.IN_TRANSACTION, S.COMMITTING_TRANSACTION,
                                  S.ABORTABLE_ERROR, S.INITIALIZING}),
    S.FATAL_ERROR: frozenset(TxnState),
}


def allowed(source: TxnState, target: TxnState) -> bool:
    """Whether a producer in ``source`` may move to ``target``."""
    return source in ENTERED_FROM[target]
