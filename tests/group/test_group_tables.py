"""Config validation, back-off arithmetic, the transition and reaction tables and the page drawn
from them."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from groupkit.config import ConsumerConfig
from groupkit.errors import ConfigError, IllegalStateError
from groupkit.group import Action, Api, GroupConfig, MemberState, Trigger
from groupkit.group.backoff import Backoff, random_jitter
from groupkit.group.diagram import render
from groupkit.group.error_actions import DEFAULT_ACTIONS, ERROR_ACTIONS
from groupkit.group.kip848.membership import Membership as Kip848Membership
from groupkit.group.membership import Membership
from groupkit.group.share.machine import ShareGroupMachine
from groupkit.group.states import (
    HEARTBEAT_STATES,
    REACTIONS,
    TERMINAL_STATES,
    TRANSITIONS,
    Reaction,
    next_state,
    reaction_for,
)
from groupkit.group.table import reachable
from groupkit.runtime.connection import BrokerConnection
from groupkit.workers.slots import SlotBook

DOC = Path(__file__).resolve().parents[2] / "docs" / "group-state-machine.md"


def test_config_defaults_are_the_java_clients() -> None:
    config = GroupConfig(group_id="g")
    assert (config.session_timeout_ms, config.heartbeat_interval_ms, config.max_poll_interval_ms,
            config.rebalance_timeout_ms, config.retry_backoff_ms, config.retry_backoff_max_ms) \
        == (45_000, 3_000, 300_000, 300_000, 100, 1_000)
    assert not config.is_static and not config.leave_group_on_close
    assert GroupConfig(group_id="g", max_poll_interval_ms=10_000).rebalance_timeout_ms == 10_000


@pytest.mark.parametrize(("setting", "value"), [
    ("group_id", ""),
    ("group_id", None),
    ("session_timeout_ms", 0),
    ("session_timeout_ms", -5),
    ("session_timeout_ms", 1.5),
    ("session_timeout_ms", True),
    ("heartbeat_interval_ms", 45_000),
    ("max_poll_interval_ms", 2**31),
    ("rebalance_timeout_ms", None),
    ("retry_backoff_max_ms", 50),
    ("group_instance_id", ""),
    ("client_rack", 3),
    ("leave_group_on_close", "yes"),
])
def test_bad_settings_raise_config_error_naming_the_setting(setting: str, value: object) -> None:
    settings: dict[str, object] = {"group_id": "g", setting: value}
    with pytest.raises(ConfigError, match=setting):
        GroupConfig(**settings)  # type: ignore[arg-type]


def test_backoff_doubles_up_to_the_cap_with_bounded_jitter() -> None:
    mid = Backoff(100, 1_000, lambda: 0.5)
    assert [mid.delay(n) for n in range(1, 7)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    low, high = Backoff(100, 1_000, lambda: 0.0), Backoff(100, 1_000, lambda: 0.999999)
    assert low.delay(1) == pytest.approx(0.08)
    assert high.delay(1) == pytest.approx(0.12, rel=1e-4)
    assert high.delay(30) == 1.0, "jitter never pushes past retry_backoff_max_ms"
    assert mid.delay(10_000) == 1.0


def test_backoff_is_constant_and_unjittered_when_the_cap_is_not_above_the_start() -> None:
    # Java's ExponentialBackoff: maxInterval <= initialInterval gives a constant back-off.
    assert Backoff(200, 200, lambda: 0.0).delay(1) == Backoff(200, 200, lambda: 0.0).delay(9) \
        == 0.2
    assert Backoff(0, 1_000, lambda: 0.9).delay(5) == 0.0


def test_a_clients_retry_backoff_follows_its_settings() -> None:
    config = ConsumerConfig(bootstrap_servers="h:1", retry_backoff_ms=50,
                            retry_backoff_max_ms=400)
    assert config.retry_backoff() == Backoff(50, 400)
    delays = [config.retry_backoff().delay(n) for n in range(1, 6)]
    for n, delay in enumerate(delays, start=1):
        exact = min(0.05 * 2 ** (n - 1), 0.4)
        assert exact * 0.8 <= delay <= min(exact * 1.2, 0.4)


def test_backoff_jitter_leaves_the_applications_random_state_alone() -> None:
    """An application that seeds ``random`` for a reproducible run gets the same numbers with
    groupkit's back-offs drawing beside it: every default jitter is a generator of groupkit's
    own (Java's ExponentialBackoff draws from ThreadLocalRandom, not the application's)."""
    random.seed(7)
    before = random.getstate()
    delays = {ConsumerConfig(bootstrap_servers="h:1").retry_backoff().delay(3)
              for _ in range(50)}
    assert len(delays) > 1  # jittered all the same
    assert random.getstate() == before
    for cls in (BrokerConnection, Membership, Kip848Membership, ShareGroupMachine, SlotBook):
        assert attrs.fields_dict(cls)["jitter"].default is random_jitter, cls.__name__


def test_every_state_is_reachable_from_unjoined() -> None:
    assert reachable(TRANSITIONS, MemberState.UNJOINED) == set(MemberState)
    assert reachable(TRANSITIONS, MemberState.CLOSED) == {MemberState.CLOSED}


def test_terminal_states_have_no_way_out_and_the_rest_can_stop() -> None:
    assert not [key for key in TRANSITIONS if key[0] in TERMINAL_STATES]
    for state in set(MemberState) - TERMINAL_STATES:
        assert (state, Trigger.FAILED) in TRANSITIONS


def test_a_pair_missing_from_the_table_is_a_named_error() -> None:
    assert next_state(MemberState.PREPARING_REBALANCE, Trigger.JOINED) \
        is MemberState.COMPLETING_REBALANCE
    with pytest.raises(IllegalStateError, match="STABLE on JOINED"):
        next_state(MemberState.STABLE, Trigger.JOINED)


def test_every_action_the_error_table_can_name_has_exactly_one_reaction() -> None:
    for api in Api:
        default = DEFAULT_ACTIONS[api]
        named = set(ERROR_ACTIONS[api].values()) | (
            {Action.BACK_OFF, Action.FATAL} if default is None else {default})
        assert set(REACTIONS[api]) == named, api
    used = {reaction for rows in REACTIONS.values() for reaction in rows.values()}
    assert used == set(Reaction), "a reaction no row leads to is dead code"


def test_an_action_without_a_reaction_is_a_named_error() -> None:
    assert reaction_for(Api.HEARTBEAT, Action.REJOIN) is Reaction.REBALANCE_NOTICED
    with pytest.raises(IllegalStateError, match="ADOPT_MEMBER_ID for SYNC_GROUP"):
        reaction_for(Api.SYNC_GROUP, Action.ADOPT_MEMBER_ID)


def test_the_docs_page_is_drawn_from_the_current_tables() -> None:
    assert DOC.read_text() == render() + "\n", \
        "regenerate: python -m groupkit.group.diagram > docs/group-state-machine.md"


def test_looking_a_state_up_in_a_set_runs_no_python_code() -> None:
    # The runner and the machine do this some fifteen times per heartbeat; Enum's own
    # __hash__ is a Python function (hash of the name).
    calls: list[str] = []
    states = list(MemberState)

    def profile(frame: Any, event: str, arg: object) -> None:
        if event == "call":
            calls.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        found = list(map(HEARTBEAT_STATES.__contains__, states))  # no Python frame of its own
    finally:
        sys.setprofile(None)
    assert calls == []
    assert found.count(True) == len(HEARTBEAT_STATES) == 3
    assert len({*MemberState, *MemberState}) == len(MemberState)
