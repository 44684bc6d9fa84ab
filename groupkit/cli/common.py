"""What every cluster command shares: connection options, the Admin they open, exit statuses
and output (JSON, or tables drawn by rich).

rich is imported only inside the functions that draw, so ``import groupkit`` and the commands
that print nothing never load it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from groupkit.cli.properties import client_settings, read_properties

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from groupkit.admin import Admin

#: Environment variable read when --bootstrap-server is not given.
BOOTSTRAP_ENV = "GROUPKIT_BOOTSTRAP_SERVERS"
#: Exit statuses: success, an error, a usage error or a refusal.
OK, FAILED, USAGE = 0, 1, 2
#: The states in which Kafka lets a group's offsets be reset or the group be deleted.
INACTIVE_STATES = ("Empty", "Dead")
#: Shown where a value is unknown (as kafka-consumer-groups.sh does).
UNKNOWN = "-"


class CommandError(Exception):
    """A command cannot go on; the message is one sentence saying what to do."""

    exit_status = FAILED


class UsageError(CommandError):
    """The command line asks for something impossible or incomplete (exit status 2)."""

    exit_status = USAGE


class Refused(CommandError):
    """The command refuses to act in the cluster's present state (exit status 2)."""

    exit_status = USAGE


def connection_options() -> argparse.ArgumentParser:
    """A parent parser with the options every cluster command takes."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--bootstrap-server", metavar="HOST:PORT[,HOST:PORT...]",
                        help=f"brokers to connect to (default: ${BOOTSTRAP_ENV})")
    parent.add_argument("--command-config", metavar="FILE",
                        help="Java-style properties for the connection: security.protocol,"
                             " sasl.mechanism, sasl.jaas.config, ssl.* (PEM files), client.id,"
                             " request.timeout.ms, api.version")
    parent.add_argument("--api-version", metavar="RELEASE",
                        help="the brokers' Kafka release (e.g. 2.3): cap every API at the"
                             " versions it speaks, for brokers that advertise versions they"
                             " cannot serve (default: auto, negotiated per connection)")
    parent.add_argument("--timeout", type=int, metavar="MS",
                        help="how long each call may wait for the brokers, in ms (default:"
                             " 60000 per call, 30000 per request, or default.api.timeout.ms and"
                             " request.timeout.ms from --command-config)")
    parent.add_argument("--debug", action="store_true",
                        help="log the client's debug lines and show tracebacks of errors")
    return parent


def output_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--output table|json``."""
    parser.add_argument("--output", choices=("table", "json"), default="table",
                        help="a table for people (default) or JSON for programs")


def admin_settings(args: argparse.Namespace) -> dict[str, Any]:
    """Admin settings from --command-config, then --bootstrap-server or the environment."""
    settings: dict[str, Any] = {}
    if args.command_config:
        settings = client_settings(read_properties(args.command_config), args.command_config)
    bootstrap = args.bootstrap_server or os.environ.get(BOOTSTRAP_ENV) \
        or settings.get("bootstrap_servers")
    if not bootstrap:
        raise UsageError(f"give the brokers with --bootstrap-server HOST:PORT or set"
                         f" {BOOTSTRAP_ENV}")
    settings["bootstrap_servers"] = bootstrap
    pin = getattr(args, "api_version", None)  # namespaces made by hand may lack it
    if pin is not None:
        settings["api_version"] = pin
    if args.timeout is not None:
        if args.timeout < 1:
            raise UsageError(f"--timeout takes milliseconds > 0, not {args.timeout}")
        # Each whole call and each request in it, as kafka-consumer-groups.sh's --timeout.
        settings["request_timeout_ms"] = settings["default_api_timeout_ms"] = args.timeout
    return settings


@contextmanager
def open_admin(args: argparse.Namespace) -> Iterator[Admin]:
    """An Admin for the command's cluster, closed when the command ends."""
    from groupkit.admin import Admin

    admin = Admin(**admin_settings(args))
    try:
        yield admin
    finally:
        admin.close()


def print_json(value: Any) -> None:
    """Write ``value`` as indented JSON and a newline to stdout."""
    json.dump(value, sys.stdout, indent=2)
    sys.stdout.write("\n")
    sys.stdout.flush()


def console(file: Any = None) -> Console:
    """A rich Console on stdout; off a terminal, wide enough that no column is cut or folded."""
    from rich.console import Console

    out = file if file is not None else sys.stdout
    wide = None if out.isatty() else 10_000
    return Console(file=out, width=wide, markup=False, highlight=False, emoji=False)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None
          ) -> Table:
    """A borderless table in the style of kafka-consumer-groups.sh: upper-case headers,
    ``-`` for unknown (None) values, numbers right-aligned."""
    from rich import box
    from rich.table import Table

    numeric = [all(isinstance(r[i], int) or r[i] is None for r in rows) and bool(rows)
               for i in range(len(headers))]
    grid = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, title=title,
                 title_justify="left")
    for header, right in zip(headers, numeric, strict=True):
        # On a narrow terminal long values (member ids) fold inside their cell, never cut.
        grid.add_column(header, overflow="fold", justify="right" if right else "left")
    for row in rows:
        grid.add_row(*(UNKNOWN if v is None else str(v) for v in row))
    return grid


def topic_partitions(specs: Sequence[str], counts: dict[str, int]) -> list[Any]:
    """``["orders:0,2", "audit"]`` -> TopicPartitions; a bare topic means all its partitions.

    ``counts`` maps each existing topic to its partition count; an unknown topic or partition
    is a UsageError naming it.
    """
    from assignors import TopicPartition

    found: list[TopicPartition] = []
    for spec in specs:
        topic, sep, parts = spec.partition(":")
        if not topic:
            raise UsageError(f"--topic takes TOPIC or TOPIC:P,P..., not {spec!r}")
        if topic not in counts:
            raise UsageError(f"topic {topic!r} does not exist; check the name with the"
                             " broker's topic list")
        if not sep:
            found += [TopicPartition(topic, p) for p in range(counts[topic])]
            continue
        for text in parts.split(","):
            if not text.strip().isdigit():
                raise UsageError(f"partitions in {spec!r} must be numbers separated by commas")
            partition = int(text)
            if partition >= counts[topic]:
                raise UsageError(f"topic {topic!r} has partitions 0-{counts[topic] - 1}, not"
                                 f" {partition}")
            found.append(TopicPartition(topic, partition))
    return list(dict.fromkeys(found))
