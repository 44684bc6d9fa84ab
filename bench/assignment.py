"""groupkit's assignors against kafka-python's on the same groups, each run in its own process.

Cases (members x partitions; topics of 1,000 partitions each):
  small      100 x 1,000        uniform: every member subscribes to every topic
  medium     1,000 x 10,000     uniform
  large      2,000 x 1,000,000  uniform
  nonuniform 500 x 20,000       member i subscribes to topics i % 20, (7i + 3) % 20, (i // 3) % 20,
                                and every fifth member also to the first 10 topics

For each case, assignor and implementation it prints: seconds for a fresh assignment, seconds
for the rebalance after the first member leaves (the others rejoin with their assignment: sticky
user data, as each client writes it), peak RSS growth in MB, balance (max - min partitions per
member, after the rebalance) and moves (partitions that changed owner among the members that
stayed). Peers past --peer-limit seconds print "over the limit".

    .venv/bin/python bench/assignment.py [--cases small,medium] [--assignors sticky] [--peer-limit 60]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from types import SimpleNamespace

CASES = {
    "small": (100, 1_000, True),
    "medium": (1_000, 10_000, True),
    "large": (2_000, 1_000_000, True),
    "nonuniform": (500, 20_000, False),
}
ASSIGNORS = ["range", "roundrobin", "sticky"]
PER_TOPIC = 1_000


def topics_of(case: str) -> tuple[dict[str, int], list[list[str]]]:
    """Partition counts and each member's subscription for ``case``."""
    members, partitions, uniform = CASES[case]
    names = [f"topic-{i:04d}" for i in range(partitions // PER_TOPIC)]
    counts = dict.fromkeys(names, PER_TOPIC)
    if uniform:
        return counts, [names] * members
    n = len(names)
    subscriptions = []
    for i in range(members):
        chosen = {names[i % n], names[(7 * i + 3) % n], names[(i // 3) % n]}
        if i % 5 == 0:
            chosen.update(names[: n // 2])
        subscriptions.append(sorted(chosen))
    return counts, subscriptions


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Groupkit:
    """groupkit's assignors, fed MemberSubscriptions."""

    def __init__(self, name: str, counts: dict[str, int]) -> None:
        from assignors import ClusterView, lookup

        self.assignor = lookup(name)
        self.cluster = ClusterView(counts)

    def members(self, subscriptions: dict[str, list[str]], previous: dict | None) -> object:
        from assignors import MemberSubscription
        from assignors.sticky_data import encode_sticky_user_data

        if previous is None:
            return {m: MemberSubscription(t) for m, t in subscriptions.items()}
        return {
            m: MemberSubscription(t, user_data=encode_sticky_user_data(previous[m], 1))
            for m, t in subscriptions.items()
        }

    def assign(self, members: object) -> dict[str, list[tuple[str, int]]]:
        result = self.assignor.assign(self.cluster, members)
        return {m: a.partitions for m, a in result.items()}


class KafkaPython:
    """kafka-python's assignors, fed what its coordinator would pass them."""

    def __init__(self, name: str, counts: dict[str, int]) -> None:
        from kafka.coordinator.assignors.range import RangePartitionAssignor
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
        from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

        peers = {
            "range": RangePartitionAssignor,
            "roundrobin": RoundRobinPartitionAssignor,
            "sticky": StickyPartitionAssignor,
        }
        self.assignor = peers[name]()
        self.cluster = SimpleNamespace(
            topics=lambda exclude_internal_topics=True: set(counts),
            partitions_for_topic=lambda t: set(range(counts[t])) if t in counts else None,
        )

    def members(self, subscriptions: dict[str, list[str]], previous: dict | None) -> object:
        from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
        from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

        members = []
        for m, topics in subscriptions.items():
            user_data = b""
            if previous is not None:
                by_topic: dict[str, list[int]] = {}
                for topic, partition in previous[m]:
                    by_topic.setdefault(topic, []).append(partition)
                user_data = StickyAssignorUserData(list(by_topic.items()), 1).encode()
            metadata = ConsumerProtocolSubscription(version=0, topics=topics, user_data=user_data)
            members.append(SimpleNamespace(member_id=m, group_instance_id=None, metadata=metadata))
        return members

    def assign(self, members: object) -> dict[str, list[tuple[str, int]]]:
        result = self.assignor.assign(self.cluster, members)
        return {m: [(tp.topic, tp.partition) for tp in a.partitions()] for m, a in result.items()}


def worker(impl: str, name: str, case: str) -> None:
    """One measurement; prints a JSON line after the fresh assignment and after the rebalance."""
    counts, topic_lists = topics_of(case)
    subscriptions = {f"member-{i:05d}": t for i, t in enumerate(topic_lists)}
    runner = (Groupkit if impl == "groupkit" else KafkaPython)(name, counts)
    members = runner.members(subscriptions, None)
    base = rss_mb()
    start = time.perf_counter()
    first = runner.assign(members)
    out = {"fresh_s": time.perf_counter() - start, "peak_mb": peak_mb() - base}
    print(json.dumps(out), flush=True)
    del subscriptions["member-00000"]
    members = runner.members(subscriptions, first)
    start = time.perf_counter()
    second = runner.assign(members)
    out["leave_s"] = time.perf_counter() - start
    out["peak_mb"] = peak_mb() - base
    sizes = [len(p) for p in second.values()]
    out["balance"] = max(sizes) - min(sizes)
    before = {tuple(tp): m for m, parts in first.items() for tp in parts}
    out["moves"] = sum(
        1
        for m, parts in second.items()
        for tp in parts
        if before.get(tuple(tp), m) not in (m, "member-00000")
    )
    print(json.dumps(out), flush=True)


def measure(impl: str, name: str, case: str, limit: float | None) -> dict:
    """Run one measurement in a subprocess; what it printed before any time limit."""
    command = [sys.executable, __file__, "--worker", impl, name, case]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            out, err = proc.communicate(timeout=limit)
            over = False
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            over = True
    lines = [line for line in out.splitlines() if line.startswith("{")]
    result = json.loads(lines[-1]) if lines else {}
    if over:
        result["note"] = f"over the limit ({limit:.0f} s)"
    elif proc.returncode:
        last = err.strip().splitlines()[-1] if err.strip() else f"exit {proc.returncode}"
        result["note"] = f"error: {last}"
    return result


def cell(result: dict, key: str, fmt: str) -> str:
    """``result[key]`` formatted, or a dash in the same width when the run did not get there."""
    if key in result:
        return format(result[key], fmt)
    return "-".rjust(int(fmt.rstrip("dfs").split(".")[0]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated: " + ", ".join(CASES))
    parser.add_argument("--assignors", default=",".join(ASSIGNORS), help="comma-separated")
    parser.add_argument("--peer-limit", type=float, default=60.0, help="seconds per kafka-python run")
    parser.add_argument("--no-peer", action="store_true", help="measure groupkit only")
    parser.add_argument("--worker", nargs=3, metavar=("IMPL", "ASSIGNOR", "CASE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    header = f"{'case':<11}{'m x p':>16} {'assignor':<11}{'impl':<13}{'fresh s':>9}{'rebal s':>9}"
    header += f"{'peak MB':>9}{'balance':>8}{'moves':>8}  note"
    print(header)
    for case in args.cases.split(","):
        members, partitions, _ = CASES[case]
        for name in args.assignors.split(","):
            impls = ["groupkit"] if args.no_peer else ["groupkit", "kafka-python"]
            fresh = {}
            for impl in impls:
                result = measure(impl, name, case, None if impl == "groupkit" else args.peer_limit)
                fresh[impl] = result.get("fresh_s")
                note = result.get("note", "")
                if impl == "kafka-python" and fresh.get("groupkit") and fresh[impl]:
                    ratio = fresh[impl] / fresh["groupkit"]
                    note = f"{ratio:.1f}x groupkit's fresh time {note}"
                print(
                    f"{case:<11}{f'{members:,} x {partitions:,}':>16} {name:<11}{impl:<13}"
                    f"{cell(result, 'fresh_s', '9.3f')}{cell(result, 'leave_s', '9.3f')}"
                    f"{cell(result, 'peak_mb', '9.1f')}{cell(result, 'balance', '8d')}"
                    f"{cell(result, 'moves', '8d')}  {note}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
