"""``groupkit groups ...``: list, describe, lag, reset-offsets, delete and delete-offsets.

Behaviour follows Kafka's kafka-consumer-groups.sh (ConsumerGroupCommand) where the issue is
silent: the same columns, ``-`` for unknown values, unclamped lag, refusals while members are
active.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from groupkit.cli import lag, reset_offsets
from groupkit.cli.common import (
    FAILED,
    INACTIVE_STATES,
    OK,
    CommandError,
    Refused,
    UsageError,
    connection_options,
    console,
    open_admin,
    output_option,
    print_json,
    table,
    topic_partitions,
)

if TYPE_CHECKING:
    from groupkit.admin import Admin

#: The group types ListGroups v5+ filters by (Java's GroupType).
GROUP_TYPES = ("classic", "consumer", "share", "streams")
#: The states a consumer group can be in (classic protocol, then KIP-848's), as Java names them.
GROUP_STATES = ("Stable", "Empty", "PreparingRebalance", "CompletingRebalance", "Dead",
                "Assigning", "Reconciling")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``groups`` and its subcommands."""
    parser = sub.add_parser("groups", help="list, describe, reset and delete consumer groups"
                                           " (and list and describe share groups)")
    commands = parser.add_subparsers(dest="groups_command", required=True, metavar="COMMAND")
    common = connection_options()

    p = commands.add_parser("list", parents=[common], help="list the cluster's groups")
    p.add_argument("--state", action="append", default=[], metavar="STATE",
                   help="only groups in this state (Stable, Empty, PreparingRebalance,"
                        " CompletingRebalance, Dead); repeat or separate with commas")
    p.add_argument("--type", action="append", default=[], metavar="TYPE",
                   help="only groups of this type (classic, consumer, share, streams; needs"
                        " Kafka 4.0+, share groups 4.1+); repeat or separate with commas")
    output_option(p)
    p.set_defaults(func=list_groups)

    p = commands.add_parser("describe", parents=[common],
                            help="state, members, assignments, offsets and lag of groups")
    p.add_argument("groups", nargs="+", metavar="GROUP")
    output_option(p)
    p.set_defaults(func=describe)

    lag.register(commands, common)
    reset_offsets.register(commands, common)

    p = commands.add_parser("delete", parents=[common],
                            help="delete empty groups and their committed offsets")
    p.add_argument("groups", nargs="+", metavar="GROUP")
    p.set_defaults(func=delete)

    p = commands.add_parser("delete-offsets", parents=[common],
                            help="delete a group's committed offsets of some partitions"
                                 " (OffsetDelete, Kafka 2.4+)")
    p.add_argument("group", metavar="GROUP")
    p.add_argument("--topic", action="append", required=True, metavar="TOPIC[:P,P...]",
                   help="a topic, or some of its partitions; repeatable")
    p.set_defaults(func=delete_offsets)


def list_groups(args: argparse.Namespace) -> int:
    """Print the groups (with their state, described where ListGroups does not give it)."""
    wanted = {s.strip().casefold() for arg in args.state for s in arg.split(",") if s.strip()}
    unknown = wanted - {s.casefold() for s in GROUP_STATES}
    if unknown:
        raise UsageError(f"--state takes {', '.join(GROUP_STATES)}, not"
                         f" {', '.join(sorted(unknown))}")
    types = sorted({t.strip().casefold() for arg in args.type for t in arg.split(",")
                    if t.strip()})
    if set(types) - set(GROUP_TYPES):
        raise UsageError(f"--type takes {', '.join(GROUP_TYPES)}, not"
                         f" {', '.join(sorted(set(types) - set(GROUP_TYPES)))}")
    from groupkit.errors import ApiKey, UnsupportedVersionError

    with open_admin(args) as admin:
        try:
            listings = admin.list_groups(types=types or None)
        except UnsupportedVersionError as exc:
            raise CommandError(
                f"{exc}; without --type every group the brokers list is shown (brokers older"
                " than Kafka 4.1, Tansu and confluent-kafka's mock cluster list no share"
                " groups)") from exc
        if "share" in types and not admin.brokers_offering(ApiKey.SHARE_GROUP_HEARTBEAT):
            print("groupkit: no broker of this cluster offers share groups (ShareGroupHeartbeat,"
                  " API 76: Kafka 4.1+ with share groups enabled), so there are none to list",
                  file=sys.stderr)
        # ListGroups gives no state before v4 (and "Unknown" on some brokers): describe those.
        vague = [g.group_id for g in listings if (g.state or "Unknown") == "Unknown"
                 and g.group_type != "share"]
        states = {g.group_id: g.state for g in listings}
        if vague:
            states.update({g: d.state for g, d in admin.describe_groups(vague).items()})
    rows = [(g.group_id, states[g.group_id], g.protocol_type, g.group_type) for g in listings
            if not wanted or (states[g.group_id] or "").casefold() in wanted]
    typed = any(g.group_type for g in listings)
    if args.output == "json":
        print_json([{"group": g, "state": s, "protocol_type": p or None, "type": t}
                    for g, s, p, t in rows])
    elif typed:
        console().print(table(("GROUP", "STATE", "PROTOCOL-TYPE", "TYPE"),
                              [(g, s, p or None, t) for g, s, p, t in rows]))
    else:
        console().print(table(("GROUP", "STATE", "PROTOCOL-TYPE"),
                              [(g, s, p or None) for g, s, p, _ in rows]))
    return OK


def describe(args: argparse.Namespace) -> int:
    """Print each group's state, members and per-partition offsets and lag; share groups
    (where the coordinator has ShareGroupDescribe) their state and members."""
    from groupkit.cli.group_view import MEMBER_HEADERS, OFFSET_HEADERS, gather, member_cells
    from groupkit.errors import UnsupportedVersionError

    groups = list(dict.fromkeys(args.groups))
    with open_admin(args) as admin:
        try:
            shares = {g: d for g, d in admin.describe_share_groups(groups).items()
                      if d.state != "Dead"}
            share_note = ""
        except UnsupportedVersionError:
            shares = {}
            share_note = (" (if it is a share group: its coordinator has no ShareGroupDescribe,"
                          " API 77, Kafka 4.1+, so it cannot be described there)")
        views = gather(admin, [g for g in groups if g not in shares])
    missing = [v.description.group_id for v in views if not v.exists]
    if args.output == "json":
        by_id = {v.description.group_id: v.to_json() for v in views}
        by_id.update({g: _share_json(d) for g, d in shares.items()})
        print_json([by_id[g] for g in groups])
    else:
        out = console()
        for view in views:
            d = view.description
            c = d.coordinator
            where = f"{c.node_id} ({c.host}:{c.port})" if c else "-"
            protocol = "/".join(x for x in (d.protocol_type, d.protocol) if x) or "-"
            epoch = "" if d.group_epoch is None else f"  EPOCH {d.group_epoch}"
            out.print(f"GROUP {d.group_id}  STATE {d.state or '-'}  PROTOCOL {protocol}{epoch}"
                      f"  COORDINATOR {where}  MEMBERS {len(d.members)}"
                      f"  TOTAL-LAG {view.total_lag}")
            if d.members:
                out.print(table(MEMBER_HEADERS, [member_cells(m) for m in d.members]))
            else:
                out.print(f"Group {d.group_id!r} has no active members.")
            out.print(table(OFFSET_HEADERS, [r.cells() for r in view.offsets]))
            out.print()
        for d in shares.values():
            c = d.coordinator
            where = f"{c.node_id} ({c.host}:{c.port})" if c else "-"
            out.print(f"SHARE GROUP {d.group_id}  STATE {d.state or '-'}  ASSIGNOR"
                      f" {d.protocol or '-'}  EPOCH {d.group_epoch}  COORDINATOR {where}"
                      f"  MEMBERS {len(d.members)}")
            if d.members:
                out.print(table(MEMBER_HEADERS, [member_cells(m) for m in d.members]))
            else:
                out.print(f"Share group {d.group_id!r} has no active members.")
            out.print("A share group acknowledges records one by one: it commits no offsets,"
                      " so it has no lag column.")
            out.print()
    for group in missing:
        print(f"groupkit: group {group!r} does not exist (no members, no committed offsets)"
              f"{share_note}; check the name with 'groupkit groups list'", file=sys.stderr)
    return FAILED if missing else OK


def _share_json(d: Any) -> dict[str, Any]:
    c = d.coordinator
    return {"group": d.group_id, "type": "share", "state": d.state or None,
            "assignor": d.protocol or None, "group_epoch": d.group_epoch,
            "coordinator": {"id": c.node_id, "host": c.host, "port": c.port} if c else None,
            "members": [{"member_id": m.member_id, "client_id": m.client_id or None,
                         "host": m.client_host or None, "member_epoch": m.member_epoch,
                         "topics": list(m.subscription.topics) if m.subscription else [],
                         "assignment": [[tp.topic, tp.partition] for tp in m.assignment or ()]}
                        for m in d.members]}


def delete(args: argparse.Namespace) -> int:
    """Delete each group; report each one's outcome."""
    status = OK
    with open_admin(args) as admin:
        groups = list(dict.fromkeys(args.groups))
        states = {g: d.state for g, d in admin.describe_groups(groups).items()}
        for group in groups:
            status = max(status, _delete_one(admin, group, states[group]))
    return status


def _delete_one(admin: Admin, group: str, state: str) -> int:
    """Delete one group; print the outcome and return its exit status."""
    from groupkit.errors import BrokerError, GroupIdNotFoundError, NonEmptyGroupError

    busy = (f"groupkit: group {group!r} still has active members; stop them (or wait for their"
            " sessions to expire) and delete it again")
    # Kafka refuses a group with members (NON_EMPTY_GROUP); Tansu 0.6 deletes it, so the
    # state is checked first, and the broker's refusal still counts.
    if state not in INACTIVE_STATES:
        print(busy, file=sys.stderr)
        return Refused.exit_status
    try:
        admin.delete_groups([group])
    except NonEmptyGroupError:
        print(busy, file=sys.stderr)
        return Refused.exit_status
    except GroupIdNotFoundError:
        print(f"groupkit: group {group!r} does not exist; check the name with"
              " 'groupkit groups list'", file=sys.stderr)
        return FAILED
    except BrokerError as exc:
        print(f"groupkit: group {group!r} was not deleted: {exc}", file=sys.stderr)
        return FAILED
    print(f"Deleted group {group!r}.")
    return OK


def delete_offsets(args: argparse.Namespace) -> int:
    """Delete the group's committed offsets of the named partitions."""
    from groupkit.errors import UnsupportedVersionError

    with open_admin(args) as admin:
        partitions = topic_partitions(args.topic, admin.list_topics())
        try:
            admin.delete_consumer_group_offsets(args.group, partitions)
        except UnsupportedVersionError as exc:
            raise CommandError(
                "the broker does not offer OffsetDelete (API 47, Kafka 2.4+), so offsets"
                " cannot be deleted one partition at a time there; delete the whole group"
                f" with 'groupkit groups delete {args.group}' once it is empty ({exc})"
            ) from exc
    print(f"Deleted the committed offsets of group {args.group!r} for "
          + ", ".join(f"{tp.topic}-{tp.partition}" for tp in partitions) + ".")
    return OK
