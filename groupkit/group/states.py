"""Member states and the one transition table of the group membership machine.

Everything that moves a member from one state to another lives here, h11 ``_state.py`` style:
the machine decides *which* fact happened, this table says *where* that fact leads, and a pair
missing from the table is a bug in the machine (``IllegalStateError``), never a silent no-op.
The diagram in docs/group-state-machine.md is drawn from ``TRANSITIONS``.
"""

from __future__ import annotations

import enum

from groupkit.errors import IllegalStateError


class MemberState(enum.Enum):
    """Where one member stands in its group, after the reference (Java) client's states.

    Each value is the state's one-line description (the generated diagram page shows it).
    """

    UNJOINED = "Not a member and not trying: before start, or after the poll interval expired."
    COORDINATOR_UNKNOWN = "Looking for the group coordinator (FindCoordinator sent or backing off)."
    PREPARING_REBALANCE = "JoinGroup sent (or backing off before it is sent again)."
    COMPLETING_REBALANCE = "JoinGroup answered, SyncGroup sent; heartbeats continue."
    STABLE = "Holding an assignment of the current generation; heartbeating."
    REVOKING = "Eager rejoin: the application gives up its assignment before JoinGroup is sent."
    LEAVING = "LeaveGroup sent on close; waiting for its answer."
    CLOSED = "Closed by the application; terminal."
    FATAL = "Stopped by an error that retrying cannot fix; terminal."


class Trigger(enum.Enum):
    """The facts that move a member between states (past tense: they have happened)."""

    STARTED = "started"
    COORDINATOR_LOST = "coordinator_lost"
    JOIN_SENT = "join_sent"
    JOIN_DELAYED = "join_delayed"
    JOINED = "joined"
    SYNCED = "synced"
    HEARTBEAT_RESUMED = "heartbeat_resumed"
    REVOKE_STARTED = "revoke_started"
    POLL_TIMED_OUT = "poll_timed_out"
    LEAVE_SENT = "leave_sent"
    LEAVE_FINISHED = "leave_finished"
    STOPPED = "stopped"
    FAILED = "failed"


S = MemberState
T = Trigger

#: States in which the member is (or is becoming) part of a generation and the poll timer runs.
ACTIVE_STATES = frozenset({
    S.COORDINATOR_UNKNOWN, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.STABLE, S.REVOKING,
})
#: States in which the member heartbeats the coordinator.
HEARTBEAT_STATES = frozenset({S.COMPLETING_REBALANCE, S.STABLE, S.REVOKING})
#: States no input leaves.
TERMINAL_STATES = frozenset({S.CLOSED, S.FATAL})

_WITH_COORDINATOR = (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.STABLE, S.REVOKING)

#: (state, trigger) -> next state. The only place a member's state changes.
TRANSITIONS: dict[tuple[MemberState, Trigger], MemberState] = {
    (S.UNJOINED, T.STARTED): S.COORDINATOR_UNKNOWN,
    (S.UNJOINED, T.JOIN_SENT): S.PREPARING_REBALANCE,
    (S.UNJOINED, T.STOPPED): S.CLOSED,
    (S.COORDINATOR_UNKNOWN, T.JOIN_SENT): S.PREPARING_REBALANCE,
    (S.COORDINATOR_UNKNOWN, T.HEARTBEAT_RESUMED): S.STABLE,
    (S.COORDINATOR_UNKNOWN, T.REVOKE_STARTED): S.REVOKING,
    (S.PREPARING_REBALANCE, T.JOIN_SENT): S.PREPARING_REBALANCE,
    (S.PREPARING_REBALANCE, T.JOIN_DELAYED): S.PREPARING_REBALANCE,
    (S.PREPARING_REBALANCE, T.JOINED): S.COMPLETING_REBALANCE,
    (S.COMPLETING_REBALANCE, T.JOIN_SENT): S.PREPARING_REBALANCE,
    (S.COMPLETING_REBALANCE, T.JOIN_DELAYED): S.PREPARING_REBALANCE,
    (S.COMPLETING_REBALANCE, T.SYNCED): S.STABLE,
    (S.STABLE, T.JOIN_SENT): S.PREPARING_REBALANCE,
    (S.STABLE, T.REVOKE_STARTED): S.REVOKING,
    (S.REVOKING, T.JOIN_SENT): S.PREPARING_REBALANCE,
    (S.LEAVING, T.LEAVE_FINISHED): S.CLOSED,
    (S.LEAVING, T.FAILED): S.FATAL,
    (S.UNJOINED, T.FAILED): S.FATAL,
}
for _state in _WITH_COORDINATOR:
    TRANSITIONS[(_state, T.COORDINATOR_LOST)] = S.COORDINATOR_UNKNOWN
for _state in ACTIVE_STATES:
    TRANSITIONS[(_state, T.POLL_TIMED_OUT)] = S.UNJOINED
    TRANSITIONS[(_state, T.STOPPED)] = S.CLOSED
    TRANSITIONS[(_state, T.FAILED)] = S.FATAL
for _state in _WITH_COORDINATOR:
    TRANSITIONS[(_state, T.LEAVE_SENT)] = S.LEAVING
del _state


def next_state(state: MemberState, trigger: Trigger) -> MemberState:
    """The state ``trigger`` leads to from ``state``; a pair not in the table is a machine bug."""
    try:
        return TRANSITIONS[(state, trigger)]
    except KeyError:
        raise IllegalStateError(
            f"group member cannot go from {state.name} on {trigger.name}; this is a groupkit bug,"
            " please report it with the log of this member") from None
