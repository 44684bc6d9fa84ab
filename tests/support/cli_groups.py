"""Pieces the CLI's broker tests share: the CLI run in this process, and a live group of a
groupkit member and a kafka-python member (neither commits, so the group's offsets stay what
the test set)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from groupkit.admin import Admin
from groupkit.cli import main
from tests.support.peers import GroupkitMember, KafkaPythonMember
from tests.support.waits import wait_for

WAIT = 30.0


def run_cli(capsys: Any, *argv: str) -> tuple[int, str, str]:
    """Run ``groupkit ARGV`` in this process; returns (status, stdout, stderr)."""
    capsys.readouterr()
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def cli_json(capsys: Any, *argv: str) -> Any:
    status, out, err = run_cli(capsys, *argv, "--output", "json")
    assert status == 0, err
    return json.loads(out)


@contextmanager
def active_group(bootstrap: str, group: str, topic: str) -> Iterator[None]:
    """A groupkit member and a kafka-python member in ``group`` (Stable, two members) until
    the block ends; both leave the group on the way out."""
    ours = GroupkitMember(bootstrap, group, [topic], "range", "groupkit-member")
    peer = KafkaPythonMember(bootstrap, group, [topic], "range", "kafka-python-member")
    ours.start()
    peer.start()
    try:
        with Admin(bootstrap_servers=bootstrap) as admin:
            def formed() -> bool:
                d = admin.describe_groups([group])[group]
                return d.state == "Stable" and len(d.members) == 2
            wait_for(formed, WAIT, f"group {group} to be Stable with two members")
        yield
    finally:
        peer.stop()
        ours.stop()


def member_ids_left(bootstrap: str, group: str) -> None:
    """Wait until ``group`` has no members (both left)."""
    with Admin(bootstrap_servers=bootstrap) as admin:
        wait_for(lambda: not admin.describe_groups([group])[group].members, WAIT,
                 f"group {group} to have no members")
