"""``groupkit groups lag G [--watch [SECONDS]]``: a group's lag per partition, once or refreshed
in place (rich's Live view) with each partition's lag change per second, until Ctrl-C."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from groupkit.cli.common import (
    OK,
    CommandError,
    UsageError,
    console,
    open_admin,
    print_json,
    table,
)
from groupkit.cli.group_view import OFFSET_HEADERS, GroupView, gather

if TYPE_CHECKING:
    from rich.console import RenderableType

    from assignors import TopicPartition

#: Refresh period of --watch when no SECONDS are given.
DEFAULT_WATCH_S = 2.0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser],
             common: argparse.ArgumentParser) -> None:
    """Add ``lag`` under ``groups``."""
    p = commands.add_parser("lag", parents=[common],
                            help="a group's lag per partition, or --watch it change")
    p.add_argument("group", metavar="GROUP")
    p.add_argument("--watch", nargs="?", type=float, const=DEFAULT_WATCH_S, metavar="SECONDS",
                   help=f"refresh in place every SECONDS (default {DEFAULT_WATCH_S:g}) with"
                        " each partition's lag change per second, until Ctrl-C")
    p.add_argument("--output", choices=("table", "json"), default="table",
                   help="a table (default) or JSON; --watch is always a table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the lag once, or watch it until Ctrl-C (exit status 0)."""
    if args.watch is not None and args.watch <= 0:
        raise UsageError(f"--watch takes a period in seconds > 0, not {args.watch:g}")
    with open_admin(args) as admin:
        if args.watch is None:
            [view] = gather(admin, [args.group])
            if not view.exists:
                raise CommandError(f"group {args.group!r} does not exist (no members, no"
                                   " committed offsets); check the name with"
                                   " 'groupkit groups list'")
            if args.output == "json":
                print_json({"group": args.group, "total_lag": view.total_lag,
                            "offsets": [r.to_json() for r in view.offsets]})
            else:
                console().print(render(view, None, None))
            return OK
        _watch(args, lambda: gather(admin, [args.group])[0])
    return OK


def _watch(args: argparse.Namespace, refresh: Callable[[], GroupView]) -> None:
    from rich.live import Live

    from groupkit.errors import GroupkitError

    view = refresh()
    taken = time.monotonic()
    rates: dict[TopicPartition, float] | None = None
    problem: str | None = None
    with Live(render(view, rates, problem, args.watch), console=console(),
              auto_refresh=False, transient=False) as live:
        try:
            while True:
                time.sleep(args.watch)
                try:
                    newer = refresh()
                except GroupkitError as exc:
                    problem = f"refresh failed, trying again: {exc}"
                else:
                    now = time.monotonic()
                    rates = lag_rates(view, newer, now - taken)
                    view, taken, problem = newer, now, None
                live.update(render(view, rates, problem, args.watch), refresh=True)
        except KeyboardInterrupt:
            pass


def lag_rates(before: GroupView, after: GroupView, seconds: float
              ) -> dict[TopicPartition, float]:
    """Each partition's lag change per second between two views (where both know its lag)."""
    from assignors import TopicPartition

    old = {TopicPartition(r.topic, r.partition): r.lag for r in before.offsets}
    rates = {}
    for r in after.offsets:
        tp = TopicPartition(r.topic, r.partition)
        was = old.get(tp)
        if r.lag is not None and was is not None and seconds > 0:
            rates[tp] = (r.lag - was) / seconds
    return rates


def render(view: GroupView, rates: dict[TopicPartition, float] | None,
           problem: str | None = None, every: float | None = None) -> RenderableType:
    """The heading line, the table (with a LAG/S column once rates are known), any problem."""
    from rich.console import Group
    from rich.text import Text

    from assignors import TopicPartition

    d = view.description
    heading = f"GROUP {d.group_id}  STATE {d.state or '-'}  TOTAL-LAG {view.total_lag}"
    if every is not None:
        heading += f"  (every {every:g} s; Ctrl-C to stop)"
    headers: tuple[str, ...] = OFFSET_HEADERS
    rows = [r.cells() for r in view.offsets]
    if rates is not None:
        headers = (*OFFSET_HEADERS[:5], "LAG/S", *OFFSET_HEADERS[5:])
        rows = [(*cells[:5], _rate(rates.get(TopicPartition(r.topic, r.partition))),
                 *cells[5:]) for r, cells in zip(view.offsets, rows, strict=True)]
    parts: list[RenderableType] = [Text(heading), table(headers, rows)]
    if problem:
        parts.append(Text(problem, style="red"))
    return Group(*parts)


def _rate(value: float | None) -> str | None:
    return None if value is None else f"{value:+.1f}"
