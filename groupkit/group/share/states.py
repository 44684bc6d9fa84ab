"""Share-group member states and their transition table (KIP-932), h11 ``_state.py`` style.

A subset of the Java client's ``MemberState`` (which ShareMembershipManager shares with the
KIP-848 consumer): a share member has no revocation to order and no offsets to commit, so it
never waits in RECONCILING or PREPARE_LEAVING; the coordinator's assignment is taken as it
comes. The machine decides which fact happened; ``TRANSITIONS`` says where it leads; a pair
missing from the table is a bug in the machine (``IllegalStateError``), never a silent no-op.
"""

from __future__ import annotations

import enum

from groupkit.group.table import step


class ShareMemberState(enum.Enum):
    """Where one share-group member stands; each value is the state's one-line description."""

    __hash__ = object.__hash__

    UNSUBSCRIBED = "Not in the group: before subscribe."
    JOINING = "Heartbeating with epoch 0 (a new member, or one fenced out, coming back)."
    ACKNOWLEDGING = "A new assignment was taken; the next heartbeat goes out at once."
    STABLE = "In the group with an assignment; heartbeating at the coordinator's interval."
    FENCED = "The coordinator fenced the member (unknown member or epoch); its partitions are gone."
    STALE = "Left because the application did not poll in max_poll_interval_ms; rejoins on poll."
    LEAVING = "The leave heartbeat (epoch -1) went out on close; waiting for its answer."
    CLOSED = "Closed by the application; terminal."
    FATAL = "Stopped by an error that retrying cannot fix; terminal."


class ShareTrigger(enum.Enum):
    """The facts that move a share member between states (past tense: they happened)."""

    SUBSCRIBED = "subscribed"
    ASSIGNMENT_RECEIVED = "assignment_received"
    ACKNOWLEDGED = "acknowledged"
    FENCED = "fenced"
    REJOINED = "rejoined"
    POLL_EXPIRED = "poll_expired"
    POLLED_AGAIN = "polled_again"
    LEAVE_STARTED = "leave_started"
    LEFT = "left"
    STOPPED = "stopped"
    FAILED = "failed"


S = ShareMemberState
T = ShareTrigger

#: States in which the member belongs to the group and heartbeats.
IN_GROUP = frozenset({S.JOINING, S.ACKNOWLEDGING, S.STABLE})
#: States no input leaves.
TERMINAL_STATES = frozenset({S.CLOSED, S.FATAL})

#: (state, trigger) -> next state. The only place a share member's state changes.
TRANSITIONS: dict[tuple[ShareMemberState, ShareTrigger], ShareMemberState] = {
    (S.UNSUBSCRIBED, T.SUBSCRIBED): S.JOINING,
    (S.UNSUBSCRIBED, T.STOPPED): S.CLOSED,
    (S.ACKNOWLEDGING, T.ACKNOWLEDGED): S.STABLE,
    (S.FENCED, T.REJOINED): S.JOINING,
    (S.STALE, T.POLLED_AGAIN): S.JOINING,
    (S.STALE, T.STOPPED): S.CLOSED,
    (S.LEAVING, T.LEFT): S.CLOSED,
    (S.LEAVING, T.FAILED): S.FATAL,
    (S.UNSUBSCRIBED, T.FAILED): S.FATAL,
    (S.STALE, T.FAILED): S.FATAL,
    (S.FENCED, T.STOPPED): S.CLOSED,
    (S.FENCED, T.FAILED): S.FATAL,
}
for _state in IN_GROUP:
    TRANSITIONS[(_state, T.ASSIGNMENT_RECEIVED)] = S.ACKNOWLEDGING
    TRANSITIONS[(_state, T.FENCED)] = S.FENCED
    TRANSITIONS[(_state, T.POLL_EXPIRED)] = S.STALE
    TRANSITIONS[(_state, T.LEAVE_STARTED)] = S.LEAVING
    TRANSITIONS[(_state, T.STOPPED)] = S.CLOSED
    TRANSITIONS[(_state, T.FAILED)] = S.FATAL
del _state


def next_state(state: ShareMemberState, trigger: ShareTrigger) -> ShareMemberState:
    """The state ``trigger`` leads to from ``state``; a pair not in the table is a machine bug."""
    return step(TRANSITIONS, state, trigger, "a share-group member")
