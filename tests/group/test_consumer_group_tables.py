"""The consumer-protocol (KIP-848) member's tables: Java's transitions, no dead rows, the page."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupkit.errors import IllegalStateError
from groupkit.group.kip848.diagram import render
from groupkit.group.kip848.error_actions import (
    COMMIT_ACTIONS,
    DESCRIPTIONS,
    HEARTBEAT_ACTIONS,
    OFFSET_FETCH_ACTIONS,
    Action,
)
from groupkit.group.kip848.states import (
    TERMINAL_STATES,
    TRANSITIONS,
    MemberState,
    Trigger,
    next_state,
)
from groupkit.group.table import reachable

S = MemberState
DOC = Path(__file__).resolve().parents[2] / "docs" / "consumer-group-state-machine.md"

#: Java's MemberState.previousValidStates (clients/.../internals/MemberState.java), for the
#: states both have; groupkit adds CLOSED (and reaches STALE only through LEAVING, as Java).
JAVA_PREVIOUS = {
    S.STABLE: {S.JOINING, S.ACKNOWLEDGING, S.RECONCILING},
    S.RECONCILING: {S.STABLE, S.JOINING, S.ACKNOWLEDGING, S.RECONCILING},
    S.ACKNOWLEDGING: {S.RECONCILING},
    S.FENCED: {S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.PREPARE_LEAVING,
               S.LEAVING},
    S.JOINING: {S.FENCED, S.UNSUBSCRIBED, S.STALE},
    S.PREPARE_LEAVING: {S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.UNSUBSCRIBED},
    S.LEAVING: {S.PREPARE_LEAVING},
    S.STALE: {S.LEAVING},
}


def test_every_move_is_one_java_allows() -> None:
    for (source, _), target in TRANSITIONS.items():
        if target in JAVA_PREVIOUS:
            assert source in JAVA_PREVIOUS[target], (source, target)


def test_every_state_is_reachable_and_every_trigger_used() -> None:
    assert reachable(TRANSITIONS, S.UNSUBSCRIBED) == set(MemberState)
    assert {trigger for _, trigger in TRANSITIONS} == set(Trigger)
    assert not [pair for pair in TRANSITIONS if pair[0] in TERMINAL_STATES]


def test_a_pair_missing_from_the_table_is_a_named_error() -> None:
    assert next_state(S.ACKNOWLEDGING, Trigger.ACKNOWLEDGED) is S.STABLE
    with pytest.raises(IllegalStateError, match="STALE on ACKNOWLEDGED"):
        next_state(S.STALE, Trigger.ACKNOWLEDGED)


def test_every_action_is_named_by_a_row_and_described() -> None:
    named = {*HEARTBEAT_ACTIONS.values(), *COMMIT_ACTIONS.values(),
             *OFFSET_FETCH_ACTIONS.values()}
    assert named == set(Action) and set(DESCRIPTIONS) == set(Action)


def test_the_docs_page_is_drawn_from_the_current_tables() -> None:
    assert DOC.read_text() == render() + "\n", \
        "regenerate: python -m groupkit.group.kip848.diagram > docs/consumer-group-state-machine.md"
