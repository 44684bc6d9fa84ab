"""Where an idle groupkit member's CPU goes, thread by thread, for one or more code trees.

Each tree (a directory holding a ``groupkit`` package, e.g. this checkout or a ``git archive``
export of an older commit with its built extension copied in) gets one member, joined to a
1-partition topic of its own on one shared Tansu broker; all members are measured in the same
window, so the machine's load falls on them alike. Settings as bench/group.py's ``idle`` row
(session 6000 ms, heartbeat 500 ms, range, no auto-commit, ``poll(0.5)`` in a loop; the
session and heartbeat can be set, e.g. to the Java client's 45000 and 3000). Per
thread, read from /proc (Linux): CPU seconds (schedstat, nanoseconds) and context switches
per second; a thread blocked on a lock or a socket switches once per wakeup, so the second
figure counts its wakeups.

With ``--worker`` each member is instead a ``GroupConsumer`` (what ``groupkit run`` runs), same
settings, its loop choosing its own poll timeout.

With ``--protocol consumer`` the members speak the consumer group protocol (KIP-848) on
confluent-kafka's mock cluster instead (Tansu has no ConsumerGroupHeartbeat), the session and
heartbeat interval set on the mock through librdkafka's C API (the broker owns them under that
protocol; ``tests/support/mock_cluster.py``).

    .venv/bin/python -m bench.idle [--seconds 60] [--worker] [--protocol consumer] [TREE ...]
        (default tree: this checkout)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from bench.group import HEARTBEAT_MS, POLL_S, SESSION_MS, make_topic
from bench.proc import thread_stats

ROOT = Path(__file__).resolve().parent.parent

# The member: join, report its threads' names once it holds the partition, poll forever.
_MEMBER = f"""
import json, sys, threading
from groupkit.consumer import Consumer
timing = dict(session_timeout_ms=int(sys.argv[3]), heartbeat_interval_ms=int(sys.argv[4]),
              assignors=["range"]) if sys.argv[6] == "classic" else dict(group_protocol="consumer")
consumer = Consumer(bootstrap_servers=sys.argv[1], group_id=sys.argv[2],
                    auto_offset_reset="earliest", enable_auto_commit=False, **timing)
consumer.subscribe([sys.argv[2]])
while not consumer.assignment():
    consumer.poll({POLL_S})
for _ in range(4):  # the first fetches and the offsets lookup start their threads
    consumer.poll({POLL_S})
print(json.dumps({{t.native_id: t.name for t in threading.enumerate()}}), flush=True)
while True:
    consumer.poll({POLL_S})
"""

# The same member as a GroupConsumer: it reports its threads' names 3 s after it is assigned.
_WORKER = """
import json, sys, threading
from groupkit.group_consumer import GroupConsumer

def tell():
    print(json.dumps({t.native_id: t.name for t in threading.enumerate()}), flush=True)

class Idle(GroupConsumer):
    def process(self, record):
        pass

    def on_assigned(self, partitions):
        if partitions:
            threading.Timer(3.0, tell).start()

timing = dict(session_timeout_ms=int(sys.argv[3]), heartbeat_interval_ms=int(sys.argv[4]),
              assignors=["range"]) if sys.argv[6] == "classic" else dict(group_protocol="consumer")
Idle(bootstrap_servers=sys.argv[1], group_id=sys.argv[2], topics=[sys.argv[2]],
     auto_offset_reset="earliest", hooks=[lambda event: None] if sys.argv[5] == "hook" else [],
     **timing).run()
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", default=[str(ROOT)])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--session-ms", type=int, default=SESSION_MS)
    parser.add_argument("--heartbeat-ms", type=int, default=HEARTBEAT_MS,
                        help="the Java client's default is 3000 (session 45000)")
    parser.add_argument("--hook", action="store_true",
                        help="with --worker: give each member a hook that does nothing (as a"
                             " pool worker's liveness hook or metrics would)")
    parser.add_argument("--worker", action="store_true",
                        help="members are GroupConsumers (groupkit run), not a poll loop")
    parser.add_argument("--protocol", choices=("classic", "consumer"), default="classic",
                        help="consumer: KIP-848 members on confluent-kafka's mock cluster")
    args = parser.parse_args(argv)

    with _broker(args.protocol, args.session_ms, args.heartbeat_ms) as (bootstrap, make):
        members = []
        for tree in args.trees:
            topic = f"idle-{uuid.uuid4().hex[:6]}"
            make(topic)
            members.append(subprocess.Popen(
                [sys.executable, "-c", _WORKER if args.worker else _MEMBER,
                 bootstrap, topic, str(args.session_ms), str(args.heartbeat_ms),
                 "hook" if args.hook else "", args.protocol],
                stdout=subprocess.PIPE, text=True, cwd="/",
                env={**os.environ, "PYTHONPATH": str(Path(tree).resolve())}))
        try:
            assert all(m.stdout is not None for m in members)
            names = [json.loads(m.stdout.readline()) for m in members]  # type: ignore[union-attr]
            before = [thread_stats(m.pid) for m in members]
            load, started = os.getloadavg()[0], time.monotonic()
            time.sleep(args.seconds)
            after = [thread_stats(m.pid) for m in members]
            wall = time.monotonic() - started
            print(f"bench/idle.py: {wall:.0f} s window, load average {load:.2f} at the start,"
                  f" {os.getloadavg()[0]:.2f} at the end; heartbeat {args.heartbeat_ms} ms,"
                  f" {'GroupConsumer' if args.worker else f'poll({POLL_S})'}, {args.protocol}"
                  f" protocol")
            for tree, member, named, was, now in zip(args.trees, members, names, before, after,
                                                        strict=True):
                total = sum(now[t][0] - was.get(t, (0.0, 0))[0] for t in now)
                print(f"{tree}: {total:.3f} s CPU = {100 * total / wall:.3f} % of a core")
                for tid in sorted(now):
                    cpu = now[tid][0] - was.get(tid, (0.0, 0))[0]
                    switches = (now[tid][1] - was.get(tid, (0.0, 0))[1]) / wall
                    if cpu >= 0.001 or switches >= 0.2:
                        name = named.get(str(tid), "MainThread" if tid == member.pid else "?")
                        print(f"    {name:40s} {cpu:7.3f} s  {switches:6.2f} switches/s")
        finally:
            for m in members:
                m.kill()
                m.wait()
    return 0


@contextlib.contextmanager
def _broker(protocol: str, session_ms: int, heartbeat_ms: int
            ) -> Iterator[tuple[str, Callable[[str], None]]]:
    """(bootstrap servers, make a 1-partition topic): Tansu for the classic protocol, the mock
    cluster with its KIP-848 timing set for the consumer protocol."""
    if protocol == "classic":
        from groupkit.testing import LocalBroker

        with LocalBroker() as broker:
            yield broker.bootstrap_servers, lambda topic: make_topic(
                broker.bootstrap_servers, topic, 1)
        return
    sys.path.insert(0, str(ROOT))
    from tests.support.mock_cluster import MockCluster

    with MockCluster(session_timeout_ms=session_ms, heartbeat_interval_ms=heartbeat_ms) as mock:
        yield mock.bootstrap_servers, lambda topic: mock.create_topic(topic, 1)


if __name__ == "__main__":
    sys.exit(main())
