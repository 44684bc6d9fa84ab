"""The fetch lifecycle table of one partition: every state reachable, every wrong pair named,
and the docs page drawn from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupkit.errors import IllegalStateError
from groupkit.group.table import reachable
from groupkit.runtime.partition_diagram import render
from groupkit.runtime.partition_state import (
    FAILED_STATES,
    TRANSITIONS,
    PartitionEvent,
    PartitionState,
    next_state,
)

S = PartitionState
E = PartitionEvent
DOC = Path(__file__).resolve().parents[2] / "docs" / "fetch-partition-states.md"


def test_every_state_is_reachable_from_a_new_assignment() -> None:
    assert reachable(TRANSITIONS, S.AWAIT_POSITION) == set(PartitionState)


def test_a_seek_or_reset_leaves_any_state_and_a_drop_abandons_only_what_is_in_flight() -> None:
    for state in PartitionState:
        assert next_state(state, E.SEEKED) is S.READY
        assert next_state(state, E.RESET_REQUESTED) is S.AWAIT_POSITION
    assert next_state(S.FETCHING, E.DROPPED) is S.READY
    assert next_state(S.LOOKING_UP, E.DROPPED) is S.AWAIT_POSITION
    for state in set(PartitionState) - {S.FETCHING, S.LOOKING_UP}:
        assert next_state(state, E.DROPPED) is state


def test_a_raised_error_goes_back_to_where_fetching_resumes() -> None:
    assert {S.NO_OFFSET, S.FAILED} == FAILED_STATES
    assert next_state(S.NO_OFFSET, E.ERROR_RAISED) is S.AWAIT_POSITION
    assert next_state(S.FAILED, E.ERROR_RAISED) is S.READY
    assert next_state(S.FETCHING, E.OUT_OF_RANGE) is S.AWAIT_POSITION


@pytest.mark.parametrize(("state", "event"), [
    (S.READY, E.FETCH_ANSWERED),
    (S.AWAIT_POSITION, E.FETCH_SENT),
    (S.FETCHING, E.POSITION_FOUND),
    (S.READY, E.ERROR_RAISED),
])
def test_a_pair_missing_from_the_table_is_a_named_error(state: PartitionState,
                                                        event: PartitionEvent) -> None:
    with pytest.raises(IllegalStateError, match=f"{state.name} on {event.name}"):
        next_state(state, event)


def test_the_docs_page_is_drawn_from_the_current_table() -> None:
    assert DOC.read_text() == render() + "\n", \
        "regenerate: python -m groupkit.runtime.partition_diagram > docs/fetch-partition-states.md"
