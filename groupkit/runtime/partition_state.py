"""The fetch lifecycle of one assigned partition: its states and the one transition table.

The fetcher decides *which* fact happened to a partition; ``TRANSITIONS`` says where it
leads, and a pair missing from the table is a fetcher bug (``IllegalStateError``). The shape
follows the Java client's ``SubscriptionState``: a fetch state per partition, with ``paused``
kept apart as the application's wish (a paused partition still has its position looked up,
and resumes where it stands), and back-off timers kept as timestamps beside the state.
"""

from __future__ import annotations

import enum

from groupkit.group.table import step


class PartitionState(enum.Enum):
    """Where one assigned partition stands in the fetcher."""

    AWAIT_POSITION = ("No position: the start offset (committed, else the reset strategy) is to"
                      " be looked up, after a back-off if the last lookup failed.")
    LOOKING_UP = "The fetcher thread is looking up the start offset."
    NO_OFFSET = ("The lookup found no start offset (auto_offset_reset is 'none'): take() raises"
                 " it once, then the lookup is tried again; seek() clears it.")
    READY = ("Positioned, no Fetch in flight: one goes out once the buffer has room, the leader"
             " is idle and any back-off has passed.")
    FETCHING = "A Fetch for it is in flight; an answer sent under an older epoch is dropped."
    FAILED = ("A fetch error waits for the application: take() raises it once the records"
              " buffered ahead of it are taken, then fetching goes on; seek() clears it.")


class PartitionEvent(enum.Enum):
    """The facts that move a partition between states (past tense: they have happened)."""

    LOOKUP_STARTED = "lookup_started"
    POSITION_FOUND = "position_found"
    LOOKUP_FAILED = "lookup_failed"
    NO_OFFSET_FOUND = "no_offset_found"
    FETCH_SENT = "fetch_sent"
    FETCH_ANSWERED = "fetch_answered"
    FETCH_FAILED = "fetch_failed"
    DECODE_FAILED = "decode_failed"
    OUT_OF_RANGE = "out_of_range"
    DROPPED = "dropped"
    ERROR_RAISED = "error_raised"
    SEEKED = "seeked"
    RESET_REQUESTED = "reset_requested"


S = PartitionState
E = PartitionEvent

#: States in which ``take`` owes the application an error.
FAILED_STATES = frozenset({S.NO_OFFSET, S.FAILED})

#: (state, event) -> next state. The only place a partition's fetch state changes.
TRANSITIONS: dict[tuple[PartitionState, PartitionEvent], PartitionState] = {
    (S.AWAIT_POSITION, E.LOOKUP_STARTED): S.LOOKING_UP,
    (S.LOOKING_UP, E.POSITION_FOUND): S.READY,
    (S.LOOKING_UP, E.LOOKUP_FAILED): S.AWAIT_POSITION,
    (S.LOOKING_UP, E.NO_OFFSET_FOUND): S.NO_OFFSET,
    (S.READY, E.FETCH_SENT): S.FETCHING,
    # Records, nothing new, or a retriable error (READY after a back-off).
    (S.FETCHING, E.FETCH_ANSWERED): S.READY,
    (S.FETCHING, E.FETCH_FAILED): S.FAILED,
    # take() met a buffered entry it cannot decode (buffers already dropped, so FETCHING is
    # over); a later failure ahead of it gives way to it.
    (S.READY, E.DECODE_FAILED): S.FAILED,
    (S.FAILED, E.DECODE_FAILED): S.FAILED,
    # OFFSET_OUT_OF_RANGE at the position: look the start up again by auto_offset_reset.
    (S.FETCHING, E.OUT_OF_RANGE): S.AWAIT_POSITION,
    (S.NO_OFFSET, E.ERROR_RAISED): S.AWAIT_POSITION,
    (S.FAILED, E.ERROR_RAISED): S.READY,
}
#: Buffers, the Fetch and the lookup under way are forgotten (pause, seek): their answers,
#: sent under an older epoch, will be dropped.
_ABANDONED = {S.FETCHING: S.READY, S.LOOKING_UP: S.AWAIT_POSITION}
for _state in PartitionState:
    TRANSITIONS[(_state, E.DROPPED)] = _ABANDONED.get(_state, _state)
    # seek() to an offset, or to a reset strategy ("earliest"/"latest"), from anywhere.
    TRANSITIONS[(_state, E.SEEKED)] = S.READY
    TRANSITIONS[(_state, E.RESET_REQUESTED)] = S.AWAIT_POSITION
del _state


def next_state(state: PartitionState, event: PartitionEvent) -> PartitionState:
    """The state ``event`` leads to from ``state``; a pair not in the table is a fetcher bug."""
    return step(TRANSITIONS, state, event, "a fetched partition")
