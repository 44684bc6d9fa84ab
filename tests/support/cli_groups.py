"""Pieces the CLI's broker tests share: topics written in several batches, the command run in
this process, and a live group of a groupkit member and a kafka-python member (neither commits,
so the group's offsets stay what the test set). Peer commits and reads: tests/support/peers.py."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from groupkit.admin import Admin
from groupkit.cli import main
from groupkit.consumer import Consumer
from groupkit.producer import Producer
from tests.support.consumer_helpers import FAST_GROUP, wait_for
from tests.support.peers import KafkaPythonMember

WAIT = 30.0


def write_batches(bootstrap: str, topic: str, batches: dict[int, list[int]]) -> dict[int, int]:
    """Create ``topic`` and write each partition's batches (one flush each); returns each
    partition's log end, the offset after its last record as the producer was told."""
    with Admin(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([topic], num_partitions=len(batches))
    ends = {p: 0 for p in batches}
    with Producer(bootstrap_servers=bootstrap) as producer:
        for p, sizes in batches.items():
            for size in sizes:
                futures = [producer.send(topic, b"r", partition=p) for _ in range(size)]
                producer.flush(WAIT)
                ends[p] = futures[-1].result(0).offset + 1
    return ends


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


class _GroupkitMember(threading.Thread):
    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        super().__init__(daemon=True, name=f"groupkit-{group}")
        self.consumer = Consumer(bootstrap_servers=bootstrap, group_id=group,
                                 client_id="groupkit-member", enable_auto_commit=False,
                                 assignors=["range"], **FAST_GROUP)
        self.consumer.subscribe([topic])
        self.stopping = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                self.consumer.poll(0.1)
        except BaseException as exc:  # reported by stop()
            self.error = exc

    def stop(self) -> None:
        self.stopping.set()
        self.join(WAIT)
        self.consumer.close(10)
        assert not self.is_alive() and self.error is None, self.error


@contextmanager
def active_group(bootstrap: str, group: str, topic: str) -> Iterator[None]:
    """A groupkit member and a kafka-python member in ``group`` (Stable, two members) until
    the block ends; both leave the group on the way out."""
    ours = _GroupkitMember(bootstrap, group, topic)
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
