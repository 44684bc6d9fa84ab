"""``groupkit groups reset-offsets``: move a group's committed offsets, as kafka-consumer-groups.sh
``--reset-offsets`` does.

A dry run (the default) prints the plan; ``--execute`` commits it; ``--export`` prints it as CSV
(``topic,partition,offset``) that ``--from-file`` reads back. The group must have no active
members (state Empty or Dead), as Kafka requires. Every new offset is clamped into the
partition's range [earliest, log end], as Java's tool does; a timestamp with no record at or
after it moves the partition to its log end, also as Java does (both with a note on stderr).
Like Java's OffsetsUtils, --to-current falls back to the log end where nothing is committed and
--shift-by refuses such partitions.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import io
import re
import sys
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from assignors import TopicPartition
from groupkit.cli.common import (
    INACTIVE_STATES,
    OK,
    Refused,
    UsageError,
    console,
    open_admin,
    output_option,
    print_json,
    table,
    topic_partitions,
)

if TYPE_CHECKING:
    from groupkit.admin import Admin

_DURATION = re.compile(
    r"P(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?",
    re.IGNORECASE)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser],
             common: argparse.ArgumentParser) -> None:
    """Add ``reset-offsets`` under ``groups``."""
    p = commands.add_parser(
        "reset-offsets", parents=[common],
        help="plan (dry run) or --execute a reset of a group's committed offsets")
    p.add_argument("group", metavar="GROUP")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--topic", action="append", default=[], metavar="TOPIC[:P,P...]",
                       help="a topic, or some of its partitions; repeatable")
    scope.add_argument("--all-topics", action="store_true",
                       help="every partition the group has committed offsets for")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", action="store_true", help="the earliest offset")
    target.add_argument("--to-latest", action="store_true", help="the log end")
    target.add_argument("--to-current", action="store_true",
                        help="the committed offset (the log end where there is none)")
    target.add_argument("--to-offset", type=int, metavar="N", help="offset N")
    target.add_argument("--shift-by", type=int, metavar="N",
                        help="the committed offset plus N (N may be negative)")
    target.add_argument("--to-datetime", metavar="ISO8601",
                        help="the first offset at or after a time, e.g."
                             " 2024-05-01T12:00:00Z (no zone: local time)")
    target.add_argument("--by-duration", metavar="ISO8601-DURATION",
                        help="the first offset at or after now minus a duration, e.g. PT30M")
    target.add_argument("--from-file", metavar="CSV",
                        help="offsets from a CSV of topic,partition,offset (as --export"
                             " writes it)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--execute", action="store_true", help="commit the plan")
    mode.add_argument("--dry-run", action="store_true",
                      help="only print the plan (the default)")
    p.add_argument("--export", action="store_true",
                   help="print the plan as CSV (topic,partition,offset) for --from-file")
    output_option(p)
    p.set_defaults(func=run)


@attrs.frozen
class PlannedOffset:
    """One partition's reset: the committed offset now (None: none) and the new one."""

    partition: TopicPartition
    old: int | None
    new: int


def run(args: argparse.Namespace) -> int:
    """Plan the reset, refuse while the group is active, then print and maybe commit it."""
    from_file = read_plan(args.from_file, args.group) if args.from_file else None
    if from_file is None and not args.topic and not args.all_topics:
        raise UsageError("say which partitions to reset: --topic TOPIC[:P,P...] (repeatable)"
                         " or --all-topics")
    with open_admin(args) as admin:
        state = admin.describe_groups([args.group])[args.group].state
        if state not in INACTIVE_STATES:
            raise Refused(f"group {args.group!r} is {state}: offsets can be reset only while"
                          " the group has no active members; stop its consumers (or wait for"
                          " their sessions to expire) and run this again")
        committed = {tp: c.offset for tp, c in admin.list_group_offsets(args.group).items()}
        if from_file is not None:
            partitions = list(from_file)
            if args.topic:
                chosen = set(topic_partitions(args.topic, admin.list_topics()))
                partitions = [tp for tp in partitions if tp in chosen]
        elif args.all_topics:
            partitions = sorted(committed)
        else:
            partitions = topic_partitions(args.topic, admin.list_topics())
        if not partitions:
            raise UsageError(f"no partitions to reset: group {args.group!r} has no committed"
                             " offsets there; name them with --topic")
        plan = plan_reset(admin, args, partitions, committed, from_file or {})
        if args.execute:
            admin.alter_consumer_group_offsets(args.group, {p.partition: p.new for p in plan})
    _show(plan, args)
    return OK


def plan_reset(admin: Admin, args: argparse.Namespace, partitions: Sequence[TopicPartition],
               committed: Mapping[TopicPartition, int],
               from_file: Mapping[TopicPartition, int]) -> list[PlannedOffset]:
    """Ask the cluster what the target needs and compute each partition's new offset."""
    earliest = {tp: o.offset for tp, o in
                admin.list_offsets({tp: "earliest" for tp in partitions}).items()}
    latest = admin.log_end_offsets(partitions)
    found: dict[TopicPartition, int | None] = {}
    if args.to_datetime or args.by_duration:
        millis = (parse_datetime(args.to_datetime) if args.to_datetime
                  else int(time.time() * 1000) - parse_duration(args.by_duration))
        # No record at or after the time: Kafka answers offset -1 (and timestamp -1); Tansu
        # 0.6 answers offset 0 with timestamp -1. Either way the partition goes to its end.
        found = {tp: (o.offset if o.offset >= 0 and o.timestamp >= 0 else None) for tp, o in
                 admin.list_offsets({tp: max(0, millis) for tp in partitions}).items()}
    plan = []
    for tp in partitions:
        wanted = _target(args, tp, committed, earliest, latest, found, from_file)
        new = _clamp(wanted, earliest[tp], latest[tp])
        if tp in found and found[tp] is None:
            _note(f"{tp.topic}-{tp.partition} has no record at or after that time; its log"
                  f" end {latest[tp]} is used")
        elif new != wanted:
            _note(f"offset {wanted} is outside {tp.topic}-{tp.partition}'s range"
                  f" [{earliest[tp]}, {latest[tp]}]; {new} is used")
        plan.append(PlannedOffset(tp, committed.get(tp), new))
    return plan


def _note(text: str) -> None:
    print(f"groupkit: note: {text}", file=sys.stderr)


def _target(args: argparse.Namespace, tp: TopicPartition, committed: Mapping[TopicPartition, int],
            earliest: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
            found: Mapping[TopicPartition, int | None],
            from_file: Mapping[TopicPartition, int]) -> int:
    """The offset the target asks for, before clamping into the partition's range."""
    if args.to_earliest:
        return earliest[tp]
    if args.to_latest:
        return latest[tp]
    if args.to_current:
        return committed.get(tp, latest[tp])
    if args.to_offset is not None:
        return int(args.to_offset)
    if args.shift_by is not None:
        if tp not in committed:
            raise UsageError(f"{tp.topic}-{tp.partition} has no committed offset to shift;"
                             " reset it with another target first")
        return committed[tp] + int(args.shift_by)
    if args.to_datetime or args.by_duration:
        offset = found.get(tp)
        return latest[tp] if offset is None else offset
    return from_file[tp]


def _clamp(offset: int, earliest: int, latest: int) -> int:
    return max(earliest, min(offset, latest))


def parse_datetime(text: str) -> int:
    """Milliseconds since the epoch of an ISO 8601 time; no zone means local time (as Java)."""
    try:
        moment = datetime.datetime.fromisoformat(re.sub(r"[zZ]$", "+00:00", text.strip()))
    except ValueError:
        raise UsageError(f"--to-datetime takes an ISO 8601 time such as 2024-05-01T12:00:00Z"
                         f" or 2024-05-01T14:00:00.000+02:00, not {text!r}") from None
    return int(moment.timestamp() * 1000)


def parse_duration(text: str) -> int:
    """Milliseconds of an ISO 8601 duration (PnDTnHnMn.nS, as Java's Duration.parse)."""
    match = _DURATION.fullmatch(text.strip())
    if not match or not any(match.groups()) or text.strip().upper().endswith("T"):
        raise UsageError(f"--by-duration takes an ISO 8601 duration such as PT30M, PT1H30M or"
                         f" P1DT12H, not {text!r}")
    days, hours, minutes = (int(match[k] or 0) for k in "dhm")
    seconds = float(match["s"] or 0)
    return int(((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000)


def read_plan(path: str, group: str) -> dict[TopicPartition, int]:
    """Offsets from CSV rows ``topic,partition,offset`` (or ``group,topic,partition,offset``,
    Java's form for several groups; rows of other groups are skipped)."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            rows = list(csv.reader(handle))
    except OSError as exc:
        raise UsageError(f"cannot read --from-file {path}: {exc.strerror}") from exc
    plan: dict[TopicPartition, int] = {}
    for number, row in enumerate(rows, 1):
        cells = [c.strip() for c in row]
        if not any(cells):
            continue
        if len(cells) == 4:
            if cells[0] != group:
                continue
            cells = cells[1:]
        if len(cells) != 3 or not cells[1].isdigit() or not re.fullmatch(r"-?\d+", cells[2]):
            raise UsageError(f"{path} line {number}: expected topic,partition,offset, not"
                             f" {','.join(row)!r}")
        plan[TopicPartition(cells[0], int(cells[1]))] = int(cells[2])
    return plan


def _show(plan: list[PlannedOffset], args: argparse.Namespace) -> None:
    if args.export:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        for p in plan:
            writer.writerow((p.partition.topic, p.partition.partition, p.new))
        sys.stdout.write(out.getvalue())
    elif args.output == "json":
        print_json([{"topic": p.partition.topic, "partition": p.partition.partition,
                     "old_offset": p.old, "new_offset": p.new} for p in plan])
    else:
        rows: list[tuple[Any, ...]] = [(p.partition.topic, p.partition.partition, p.old, p.new)
                                       for p in plan]
        console().print(table(("TOPIC", "PARTITION", "OLD-OFFSET", "NEW-OFFSET"), rows))
    if not args.execute:
        print("Dry run: nothing was changed; add --execute to commit these offsets.",
              file=sys.stderr)
