"""What groupkit's state tables share: a step that names a missing pair, the rows in enum order,
the states reachable from a start, and the diagram the docs pages are drawn with.

A table maps (state, event) to the next state; both are enums. ``group/states.py`` (a group
member) and ``runtime/partition_state.py`` (a fetched partition) are the two tables.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable, Mapping
from typing import TypeVar

from groupkit.errors import IllegalStateError

StateT = TypeVar("StateT", bound=enum.Enum)
EventT = TypeVar("EventT", bound=enum.Enum)


def step(table: Mapping[tuple[StateT, EventT], StateT], state: StateT, event: EventT,
         what: str) -> StateT:
    """The state ``event`` leads to from ``state``; a pair missing from ``table`` is a groupkit
    bug, raised as IllegalStateError naming ``what`` (e.g. "a group member")."""
    try:
        return table[(state, event)]
    except KeyError:
        raise IllegalStateError(
            f"{what} cannot go from {state.name} on {event.name}; this is a groupkit bug,"
            " please report it with the client's log") from None


def rows(table: Mapping[tuple[StateT, EventT], StateT]) -> list[tuple[StateT, EventT, StateT]]:
    """The table's rows in enum order (state, then event), so pages do not depend on hash seeds."""
    def order(row: tuple[StateT, EventT, StateT]) -> tuple[int, int]:
        state, event, _ = row
        return list(type(state)).index(state), list(type(event)).index(event)

    return sorted(((state, event, target) for (state, event), target in table.items()),
                  key=order)


def reachable(table: Mapping[tuple[StateT, EventT], StateT], start: StateT) -> set[StateT]:
    """Every state some sequence of events leads to from ``start`` (``start`` included)."""
    seen, frontier = {start}, [start]
    while frontier:
        state = frontier.pop()
        for (source, _), target in table.items():
            if source is state and target not in seen:
                seen.add(target)
                frontier.append(target)
    return seen


def diagram(table: Mapping[tuple[StateT, EventT], StateT], start: StateT, event_label: str,
            terminal: Iterable[StateT] = (), leave_out: Collection[EventT] = ()) -> list[str]:
    """Markdown lines: a Mermaid state diagram (without the arrows of ``leave_out`` events),
    then every row of the table."""
    lines = ["```mermaid", "stateDiagram-v2", f"    [*] --> {start.name}"]
    for state, event, target in rows(table):
        if event not in leave_out:
            lines.append(f"    {state.name} --> {target.name}: {event.name}")
    lines += [f"    {state.name} --> [*]" for state in terminal]
    lines += ["```", "", f"| state | {event_label} | next state |", "|---|---|---|"]
    lines += [f"| {state.name} | {event.name} | {target.name} |"
              for state, event, target in rows(table)]
    return lines
