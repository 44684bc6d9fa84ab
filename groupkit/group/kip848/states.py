"""Member states of the consumer group protocol (KIP-848) and the one table that moves them.

After the Java client's ``MemberState`` (its ``previousValidStates`` are the rows here), with
one state of groupkit's own: CLOSED, the end of a member whose application closed it (Java's
member goes back to UNSUBSCRIBED and the consumer object is discarded). As in the classic
table, the machine decides which fact happened, ``TRANSITIONS`` says where it leads, and a pair
missing from the table is a machine bug (``IllegalStateError``). The coordinator lookup is not
a member state here, as in Java (its CoordinatorRequestManager runs beside the membership):
heartbeats wait while no coordinator is known.
"""

from __future__ import annotations

import enum

from groupkit.group.table import step


class MemberState(enum.Enum):
    """Where one consumer-protocol member stands; each value is the state's description."""

    __hash__ = object.__hash__  # as the classic MemberState: identity hashing, C speed

    UNSUBSCRIBED = "Not in the group and not trying to be (before subscribe, or left)."
    JOINING = ("Heartbeating with epoch 0 (all fields), at once, until the coordinator gives an"
               " epoch.")
    RECONCILING = ("A new target assignment: revoking what it no longer holds (commit,"
                   " on_partitions_revoked), then taking what is new (on_partitions_assigned).")
    ACKNOWLEDGING = ("Reconciled: the next heartbeat, sent at once, carries the partitions now"
                     " owned.")
    STABLE = "Owns the target assignment; heartbeats at the interval the coordinator gave."
    FENCED = ("The coordinator fenced the epoch (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID): the"
              " partitions are lost; it rejoins with epoch 0.")
    PREPARE_LEAVING = "Releasing the assignment before the leave heartbeat."
    LEAVING = "The leave heartbeat (epoch -1, or -2 for a static member) is sent at once."
    STALE = ("Left after max_poll_interval_ms without a poll: partitions lost; the next poll"
             " rejoins.")
    FATAL = "Stopped by an error retrying cannot fix; terminal."
    CLOSED = "Closed by the application; terminal."


class Trigger(enum.Enum):
    """The facts that move a member (past tense: they have happened)."""

    SUBSCRIBED = "subscribed"
    ASSIGNMENT_RECEIVED = "assignment_received"
    NOTHING_TO_RECONCILE = "nothing_to_reconcile"
    RECONCILED = "reconciled"
    ACKNOWLEDGED = "acknowledged"
    FENCED = "fenced"
    LOST_RELEASED = "lost_released"
    LEAVE_STARTED = "leave_started"
    RELEASED = "released"
    LEAVE_FINISHED = "leave_finished"
    LEFT_STALE = "left_stale"
    POLLED_AGAIN = "polled_again"
    STOPPED = "stopped"
    FAILED = "failed"


S = MemberState
T = Trigger

#: States in which the member is in the group (or joining it) and heartbeats on its own.
IN_GROUP = frozenset({S.JOINING, S.RECONCILING, S.ACKNOWLEDGING, S.STABLE})
#: States whose heartbeat goes out without waiting for the interval (Java's
#: ``shouldHeartbeatNow``).
HEARTBEAT_NOW = frozenset({S.JOINING, S.ACKNOWLEDGING, S.LEAVING})
#: States that can take a new target assignment (Java's ``canHandleNewAssignment``).
TAKES_ASSIGNMENT = frozenset({S.JOINING, S.RECONCILING, S.ACKNOWLEDGING, S.STABLE})
#: States no input leaves.
TERMINAL_STATES = frozenset({S.FATAL, S.CLOSED})

#: (state, trigger) -> next state. The only place a member's state changes.
TRANSITIONS: dict[tuple[MemberState, Trigger], MemberState] = {
    (S.UNSUBSCRIBED, T.SUBSCRIBED): S.JOINING,
    (S.FENCED, T.LOST_RELEASED): S.JOINING,
    (S.STALE, T.POLLED_AGAIN): S.JOINING,
    (S.JOINING, T.NOTHING_TO_RECONCILE): S.STABLE,
    (S.RECONCILING, T.NOTHING_TO_RECONCILE): S.STABLE,
    (S.RECONCILING, T.RECONCILED): S.ACKNOWLEDGING,
    (S.ACKNOWLEDGING, T.ACKNOWLEDGED): S.STABLE,
    (S.PREPARE_LEAVING, T.RELEASED): S.LEAVING,
    (S.LEAVING, T.LEAVE_FINISHED): S.CLOSED,
    (S.LEAVING, T.LEFT_STALE): S.STALE,
}
for _state in IN_GROUP:
    TRANSITIONS[(_state, T.ASSIGNMENT_RECEIVED)] = S.RECONCILING
    TRANSITIONS[(_state, T.FENCED)] = S.FENCED
    TRANSITIONS[(_state, T.LEAVE_STARTED)] = S.PREPARE_LEAVING
for _state in MemberState:
    if _state not in TERMINAL_STATES:
        TRANSITIONS[(_state, T.FAILED)] = S.FATAL
        TRANSITIONS[(_state, T.STOPPED)] = S.CLOSED
del _state


def next_state(state: MemberState, trigger: Trigger) -> MemberState:
    """The state ``trigger`` leads to from ``state``; a pair not in the table is a machine bug."""
    return step(TRANSITIONS, state, trigger, "a consumer group member")
