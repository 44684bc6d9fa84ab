"""Chaos against the real broker: faults at chosen requests, and members killed or frozen.

Each case runs two groupkit members in processes of their own, every connection through the
fault-injecting proxy (tests/support/recording_proxy.py). Member a forms the group alone; then
the fault is armed for a's next request of one API (reset, stall for 1.5 sessions, or blackhole
its connection) and member b joins, or, once a and b share the partitions, a is SIGKILLed or
SIGSTOPped until b has taken all its partitions over (past its session). The case waits until
the group is whole again, produces more, and waits until everything is processed and committed. Whatever happened, every record is processed (none lost), no partition is held by
two members in one generation, the committed offsets never go backwards and end at the log end.
Each case's one-line figure is printed at the end of the run (tests/conftest.py); docs/reliability.md
keeps the table.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support.broker_data import committed, create_topic, produce
from tests.support.chaos import (
    CHAOS_PROPERTY,
    MEMBER_SETTINGS,
    Member,
    Outcome,
    accepted_commits,
    backwards_commits,
    log_ends,
)
from tests.support.recording_proxy import Fault, RecordingProxy
from tests.support.waits import eventually
from tests.support.worker_log import generations, held_twice

pytestmark = pytest.mark.broker

API_KEYS = {"JoinGroup": 11, "SyncGroup": 14, "Heartbeat": 12, "OffsetCommit": 8, "Fetch": 1}
CASES = [f"{api}-{action}" for api in API_KEYS for action in ("reset", "stall", "blackhole")]
CASES += ["member-SIGKILL", "member-SIGSTOP"]
PARTITIONS = 4
BATCH = 200
SESSION_S = MEMBER_SETTINGS["session_timeout_ms"] / 1000
# Past the session, so the stalled member is fenced; within the request timeout, so the client
# waits for its answer. A request the network delivers after the client gave up on it can land
# after a newer commit on a new connection, and no client can order those (see
# docs/reliability.md); the blackhole cases cover a client giving up.
STALL_S = 1.5 * SESSION_S
assert MEMBER_SETTINGS["request_timeout_ms"] / 1000 > STALL_S
WAIT = 60.0


def _holds(member: Member, partitions: set[int]) -> None:
    assert member.held() == partitions, f"{member.name} holds {sorted(member.held())}"


def _share(a: Member, b: Member, everything: set[int]) -> None:
    held_a, held_b = a.held(), b.held()
    # Disjoint too: a stopped member that wakes up still shows what it held before.
    assert held_a and held_b and not held_a & held_b and held_a | held_b == everything, (
        f"a holds {sorted(held_a)}, b holds {sorted(held_b)}")


def _processed_more(member: Member, before: int, more: int) -> None:
    assert len(member.processed()) >= before + more, f"{member.name} processed too little"


@pytest.mark.parametrize("case", CASES)
def test_no_record_lost_no_partition_shared_no_commit_backwards(
        case: str, kafka_broker: LocalBroker, unique_name, tmp_path: Path,  # noqa: F811
        record_property: Callable[[str, object], None]) -> None:
    direct = kafka_broker.bootstrap_servers
    topic, group = unique_name("t"), unique_name("g")
    create_topic(direct, topic, PARTITIONS)
    produce(direct, topic, range(BATCH), PARTITIONS)
    started = time.monotonic()
    kind, action = case.split("-")
    everything = set(range(PARTITIONS))
    with RecordingProxy(kafka_broker.host, kafka_broker.port) as proxy:
        a = Member(tmp_path, "a", proxy.bootstrap_servers, group, topic)
        members = [a]
        try:
            eventually(lambda: _holds(a, everything), WAIT, "a to hold every partition")
            if kind in API_KEYS:
                proxy.arm(Fault(API_KEYS[kind], action, STALL_S, client_id="chaos-a"))
            b = Member(tmp_path, "b", proxy.bootstrap_servers, group, topic)
            members.append(b)
            if kind in API_KEYS:
                produce(direct, topic, range(BATCH, 2 * BATCH), PARTITIONS)
                fault_at = proxy.wait_fired(1, WAIT)[0].at
            else:
                eventually(lambda: _share(a, b, everything), WAIT,
                           "a and b to share the partitions")
                before = len(a.processed())
                produce(direct, topic, range(BATCH, 2 * BATCH), PARTITIONS)
                # In the middle of its work: some processed, some not yet committed.
                eventually(lambda: _processed_more(a, before, 10), WAIT,
                           "a to work on new records")
                a.signal(signal.SIGKILL if action == "SIGKILL" else signal.SIGSTOP)
                fault_at = time.monotonic()
                # Past the session: b is given every partition only once a's session expired.
                eventually(lambda: _holds(b, everything), WAIT,
                           "b to take every partition over")
                if action == "SIGSTOP":
                    a.signal(signal.SIGCONT)
            # Recovered: the group is whole again (a back in it unless it was killed).
            if action == "SIGKILL":
                eventually(lambda: _holds(b, everything), WAIT, "b to hold every partition")
            else:
                eventually(lambda: _share(a, b, everything), WAIT,
                           "a and b to share the partitions")
            produce(direct, topic, range(2 * BATCH, 3 * BATCH), PARTITIONS)
            ends = log_ends(direct, topic, PARTITIONS)
            wanted = {(p, o) for p, end in ends.items() for o in range(end)}

            def all_done() -> None:
                done = {r for m in members for r in m.processed()}
                assert wanted <= done, f"{len(wanted - done)} records not processed yet"
                assert committed(direct, group, topic, PARTITIONS) == ends, "commits behind"

            eventually(all_done, WAIT, "every record processed and committed")
            recovered = time.monotonic() - fault_at
        finally:
            codes = {m.name: m.stop(30) for m in members}
        exchanges = proxy.exchanges()
    for m in members:
        if not (m is a and action == "SIGKILL"):
            assert codes[m.name] == 0, f"{m.name} exited with {codes[m.name]}:\n{m.output()}"
    processed = [r for m in members for r in m.processed()]
    assert set(processed) >= wanted, "a record was lost"
    lines = [line for m in members for line in m.lines()]
    assert held_twice(lines) == [], "a partition was held twice in one generation"
    commits = accepted_commits(exchanges, group)
    backwards = backwards_commits(commits)
    assert backwards == [], f"a committed offset went backwards: {backwards}"
    outcome = Outcome(case, len(wanted), len(processed), len(processed) - len(set(processed)),
                      generations(lines), len(commits), recovered,
                      time.monotonic() - started)
    record_property(CHAOS_PROPERTY, outcome.line())
