"""A settled member's heartbeat standing on its connection, as the group runner keeps it.

When the machine marks a heartbeat as one that may stand (``Send.stands_every``: the member
is STABLE) and the heartbeat answer before it changed nothing, the runner sends it with a
timed ``Standing``: the heartbeat connection sends it again a heartbeat interval after each
send by itself while its answer stays byte for byte the same, and the runner thread sleeps
until a deadline it owns (the session, the poll interval) instead of waking for every
heartbeat and its answer. Like the Java client's heartbeat thread, which sends while the
application polls within max.poll.interval.ms, but without the group runner's Python.

``StandingBeat`` is the runner's record of it. ``fold`` tells the machine how far the standing
got (``heartbeat_stood``: the session runs from the last unchanged answer, the next heartbeat
is due an interval after the last send), at every runner wakeup and so at the latest by the
session deadline. ``holds`` says whether it may go on after a step of the machine: only while
the machine's state and heartbeat timer are as they were; anything else (the poll interval
expired, a leave or close, a rebalance, a commit's error, a subscription change) ends it, and
the answer then in flight, or waiting for its next send, goes to the machine as usual. Every
answer that differs, a request timeout and a broken connection end it in the connection
itself. With hooks, ``ticker`` reports every round trip as the runner would (``_respond``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import attrs

from groupkit.group.member_machine import MemberMachine
from groupkit.runtime.standing import Standing

if TYPE_CHECKING:
    from groupkit.hooks import Hook

__all__ = ["StandingBeat", "ticker"]


@attrs.define(eq=False)
class StandingBeat:
    """The heartbeat ``token`` standing as ``standing``, begun in machine state ``state``
    with the machine's ``heartbeat_due`` at ``due``."""

    token: int
    standing: Standing
    state: enum.Enum
    due: float | None
    #: The last unchanged answer's arrival told to the machine.
    folded: float = 0.0

    def fold(self, machine: MemberMachine) -> None:
        """Tell the machine of the unchanged answers since the last fold, if any."""
        standing = self.standing
        answered = standing.answered_at
        if answered > self.folded:
            self.folded = answered
            machine.heartbeat_stood(self.token, standing.sent_at, answered)
            self.due = machine.heartbeat_due

    def holds(self, machine: MemberMachine) -> bool:
        """Whether the heartbeat may go on standing after a step of ``machine``."""
        return machine.state is self.state and machine.heartbeat_due == self.due


def ticker(hooks: Sequence[Hook], group_id: str, api: str, generation_id: int,
           standing: Standing) -> Callable[[float, float], None]:
    """``standing.tick`` for hooks: after each repeat went out (on the connection's thread),
    the round trip of the one before it (answered unchanged, error 0, at
    ``standing.answered_at``) and the new heartbeat, told as the runner tells them: the
    answer when the next heartbeat goes, then that heartbeat."""
    from groupkit.hooks import GroupRequestDone, HeartbeatAnswered, HeartbeatSent, emit

    def tick(before: float, now: float) -> None:
        latency = standing.answered_at - before
        emit(hooks, GroupRequestDone(group_id, api, "", latency))
        emit(hooks, HeartbeatAnswered(group_id, 0, latency))
        emit(hooks, HeartbeatSent(group_id, generation_id))

    return tick
