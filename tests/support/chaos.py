"""The chaos cases' harness: member processes behind the fault-injecting proxy, and the checks.

A case runs two ``chaos_worker`` processes whose every connection goes through a RecordingProxy
in front of the real broker; it injects one fault and checks, from what the workers logged and
what passed the proxy, that
- every record produced was processed (at-least-once: none lost);
- no partition was held by two members in one generation;
- the committed offset of a partition never went backwards (every OffsetCommit the broker
  accepted, in the order the broker answered them), and ends at the log end.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs

from assignors import TopicPartition
from groupkit.admin import Admin
from groupkit.protocol.headers import decode_request_frame, decode_response_frame
from groupkit.protocol.messages.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from tests.support import worker_log
from tests.support.recording_proxy import Exchange

ROOT = Path(__file__).resolve().parents[2]
OFFSET_COMMIT_KEY = 8
#: The user property under which each case records its one-line figure.
CHAOS_PROPERTY = "chaos"

#: Short timeouts so every fault resolves in seconds (Tansu accepts a 3 s session). The request
#: timeout outlasts a stall (1.5 sessions), so a stalled request is waited for, not abandoned.
MEMBER_SETTINGS: dict[str, Any] = {
    "session_timeout_ms": 3000, "heartbeat_interval_ms": 300, "rebalance_timeout_ms": 3000,
    "request_timeout_ms": 6000, "auto_offset_reset": "earliest", "auto_commit_interval_ms": 200,
    "assignors": ["cooperative-sticky", "range"], "delay_s": 0.002,
}


class Member:
    """A chaos_worker process; ``lines()`` reads what it logged so far."""

    def __init__(self, tmp: Path, name: str, bootstrap: str, group: str, topic: str,
                 settings: dict[str, Any] | None = None) -> None:
        self.name = name
        self.log = tmp / f"{name}.jsonl"
        self.stderr_path = tmp / f"{name}.stderr"
        with self.stderr_path.open("w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.support.chaos_worker", str(self.log), bootstrap,
                 group, topic, f"chaos-{name}", json.dumps(settings or MEMBER_SETTINGS)],
                cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=err,
                stderr=subprocess.STDOUT)

    def lines(self) -> list[worker_log.Line]:
        return worker_log.read_lines(self.log)

    def held(self) -> set[int]:
        last = list(worker_log.holding(self.lines()).values())
        return set(last[0]["held"]) if last else set()

    def processed(self) -> list[tuple[int, int]]:
        return worker_log.processed(self.lines())

    def signal(self, sig: signal.Signals) -> None:
        self.proc.send_signal(sig)

    def stop(self, timeout: float) -> int | None:
        """SIGTERM (an orderly stop: commit, leave); SIGKILL if it outlives ``timeout``."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None

    def output(self) -> str:
        return self.stderr_path.read_text() if self.stderr_path.exists() else ""


def log_ends(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    """Each partition's log end (high watermark)."""
    with Admin(bootstrap_servers=bootstrap) as admin:
        ends = admin.log_end_offsets([TopicPartition(topic, p) for p in range(partitions)])
    return {tp.partition: offset for tp, offset in ends.items()}


@attrs.frozen
class Commit:
    """One partition's offset in an OffsetCommit the broker accepted, in answer order."""

    answered: int
    client_id: str | None
    generation: int
    partition: int
    offset: int


def accepted_commits(exchanges: list[Exchange], group: str) -> list[Commit]:
    """Every partition offset the broker accepted for ``group``, in the order it answered."""
    commits: list[Commit] = []
    for ex in exchanges:
        if ex.api_key != OFFSET_COMMIT_KEY or ex.response is None or ex.response_seq is None:
            continue
        _, request = decode_request_frame(ex.request)
        assert isinstance(request, OffsetCommitRequest)
        if request.group_id != group:
            continue
        _, response = decode_response_frame(ex.response, OffsetCommitResponse, ex.api_version)
        ok = {(t.name, p.partition_index) for t in response.topics for p in t.partitions
              if p.error_code == 0}
        for topic in request.topics:
            for part in topic.partitions:
                if (topic.name, part.partition_index) in ok:
                    commits.append(Commit(ex.response_seq, ex.client_id,
                                          request.generation_id_or_member_epoch,
                                          part.partition_index, part.committed_offset))
    return sorted(commits, key=lambda c: c.answered)


def backwards_commits(commits: list[Commit]) -> list[tuple[Commit, Commit]]:
    """Pairs (earlier, later) where a partition's accepted offset went down."""
    last: dict[int, Commit] = {}
    bad = []
    for commit in commits:
        before = last.get(commit.partition)
        if before is not None and commit.offset < before.offset:
            bad.append((before, commit))
        last[commit.partition] = commit
    return bad


@attrs.frozen
class Outcome:
    """What one case measured, for its printed line and the table in docs/reliability.md."""

    case: str
    records: int
    processed: int
    duplicates: int
    generations: int
    commits: int
    recovery_s: float
    total_s: float

    def line(self) -> str:
        return (f"chaos {self.case:<22} records={self.records} lost=0 "
                f"duplicates={self.duplicates} generations={self.generations} "
                f"commits={self.commits} recovered_in={self.recovery_s:.1f}s "
                f"total={self.total_s:.1f}s")


__all__ = [
    "CHAOS_PROPERTY", "MEMBER_SETTINGS", "Commit", "Member", "Outcome", "accepted_commits",
    "backwards_commits", "log_ends",
]
