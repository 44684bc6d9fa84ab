"""Member states and the two tables of the group membership machine.

Everything that moves a member from one state to another lives here, h11 ``_state.py`` style:
the machine decides *which* fact happened, ``TRANSITIONS`` says *where* that fact leads, and a
pair missing from the table is a bug in the machine (``IllegalStateError``), never a silent
no-op. Beside it, ``REACTIONS`` says what the member does about each action the error table
(``error_actions``) names for a failed request. docs/group-state-machine.md is drawn from both.
"""

from __future__ import annotations

import enum

from groupkit.errors import IllegalStateError
from groupkit.group.error_actions import Action, Api
from groupkit.group.table import step


class MemberState(enum.Enum):
    """Where one member stands in its group, after the reference (Java) client's states.

    Each value is the state's one-line description (the generated diagram page shows it).
    """

    # Members are singletons compared by identity, so identity hashing agrees with equality;
    # it is C code, where Enum's own ``__hash__`` (hash of the name) is a Python call, and the
    # runner and machine look states up in sets some fifteen times per heartbeat. Iteration
    # order of sets of states was never fixed (name hashes vary with the hash seed too);
    # pages that list states sort them (``table.rows``).
    __hash__ = object.__hash__

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
    return step(TRANSITIONS, state, trigger, "a group member")


class Reaction(enum.Enum):
    """What the member does about a failed request once ``action_for`` has named the action.

    Each value is the reaction's one-line description (the generated diagram page shows it).
    """

    RETRY_FIND = "Send FindCoordinator again after the retry back-off."
    DELAY_JOIN = ("Keep the coordinator (it is busy, not gone) and send JoinGroup again after"
                  " the retry back-off.")
    DELAY_HEARTBEAT = "Send the next heartbeat after the retry back-off, not the interval."
    ADOPT_MEMBER_ID = "Send JoinGroup again at once, carrying the member id just handed out."
    REDISCOVER = ("Forget the coordinator and find it again after the retry back-off; a"
                  " rebalance under way starts over with the new coordinator.")
    MEMBERSHIP = ("Forget what the action names as stale (nothing, the generation, or"
                  " generation and member id; a lost generation's units are Lost), then rejoin"
                  " once the coordinator is known; an eager member revokes what it holds first.")
    REBALANCE_NOTICED = ("The coordinator is alive and rebalancing: the session restarts; a"
                         " STABLE member rejoins, one already rebalancing carries on.")
    STOP = "The member stops (FATAL) with the broker error; the units it held are Lost."
    RETRY_REQUEST = ("The runtime sends the request again after the retry back-off for its"
                     " attempt; the membership is untouched.")
    REDISCOVER_AND_RETRY = ("An active member forgets the coordinator and finds it again; the"
                            " runtime retries the request after the retry back-off.")
    REFUSE_COMMIT = ("The commit fails with CommitFailedError; if it was sent in the member's"
                     " current generation outside a rebalance, MEMBERSHIP follows.")
    FAIL_REQUEST = "The one request fails with the broker error; the membership is untouched."


A = Action
R = Reaction

#: JoinGroup, SyncGroup and Heartbeat share these rows.
_GROUP_REACTIONS = {
    A.BACK_OFF: R.DELAY_JOIN,
    A.REDISCOVER: R.REDISCOVER,
    A.REJOIN: R.MEMBERSHIP,
    A.RESET_GENERATION: R.MEMBERSHIP,
    A.RESET_MEMBER: R.MEMBERSHIP,
    A.FATAL: R.STOP,
}
#: OffsetCommit and OffsetFetch share these rows.
_REQUEST_REACTIONS = {
    A.BACK_OFF: R.RETRY_REQUEST,
    A.REDISCOVER: R.REDISCOVER_AND_RETRY,
    A.FAIL_REQUEST: R.FAIL_REQUEST,
    A.FATAL: R.STOP,
}

#: api -> {action -> reaction}. The only place the machine decides what an action means for
#: it; every action the error table (with its defaults) can name for an api has a row. They
#: follow the Java client's AbstractCoordinator response handlers (e.g. a Heartbeat's
#: REBALANCE_IN_PROGRESS rejoins only from STABLE; a JoinGroup it answers "loading" is sent
#: again after the retry back-off) and ConsumerCoordinator's commit handler.
REACTIONS: dict[Api, dict[Action, Reaction]] = {
    Api.FIND_COORDINATOR: {A.BACK_OFF: R.RETRY_FIND, A.FATAL: R.STOP},
    Api.JOIN_GROUP: {**_GROUP_REACTIONS, A.ADOPT_MEMBER_ID: R.ADOPT_MEMBER_ID},
    Api.SYNC_GROUP: _GROUP_REACTIONS,
    Api.HEARTBEAT: {**_GROUP_REACTIONS, A.BACK_OFF: R.DELAY_HEARTBEAT,
                    A.REJOIN: R.REBALANCE_NOTICED},
    Api.OFFSET_COMMIT: {**_REQUEST_REACTIONS, A.REJOIN: R.REFUSE_COMMIT,
                        A.RESET_GENERATION: R.REFUSE_COMMIT, A.RESET_MEMBER: R.REFUSE_COMMIT},
    Api.OFFSET_FETCH: _REQUEST_REACTIONS,
}


def reaction_for(api: Api, action: Action) -> Reaction:
    """What the member does about ``action`` on a failed ``api``; a missing pair is a bug."""
    try:
        return REACTIONS[api][action]
    except KeyError:
        raise IllegalStateError(
            f"group member has no reaction to {action.name} for {api.name}; this is a groupkit"
            " bug, please report it with the log of this member") from None
