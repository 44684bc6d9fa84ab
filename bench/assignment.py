"""groupkit's assignors against kafka-python's on the same groups, each run in its own process.

Cases (members x partitions):
  small      100 x 1,000        uniform: every member subscribes to every topic (1,000 partitions each)
  medium     1,000 x 10,000     uniform
  large      2,000 x 1,000,000  uniform
  nonuniform 500 x 20,000       member i subscribes to topics i % 20, (7i + 3) % 20, (i // 3) % 20,
                                and every fifth member also to the first 10 topics
  unequal    2,000 x 100,000    1,000 topics of 100 partitions; each member subscribes to 50 to 500
                                topics drawn at random (seeded, so every run sees the same group)

For each case, assignor and implementation it prints: seconds for a fresh assignment and for
the rebalance after the first member leaves, as wall time and as the process's CPU time (which
other work on the shared machine sways less); the others rejoin with their assignment (sticky
user data, as each client writes it, or for cooperative-sticky the owned partitions and
generation of Subscription v1+). Then peak RSS growth in MB, balance (max - min partitions per
member, after the rebalance) and moves (partitions that changed owner among the members that
stayed). ``groupkit-py`` is groupkit with GROUPKIT_NO_NATIVE=1 (the pure Python path). Peers past
--peer-limit seconds print "over the limit". With --repeat N each groupkit run is made N times
(each in a fresh process); the best is shown and the note gives the spread.

    .venv/bin/python bench/assignment.py [--cases small,medium] [--assignors sticky] [--peer-limit 60]
    .venv/bin/python bench/assignment.py --cases unequal --assignors sticky --profile 15
    .venv/bin/python bench/assignment.py --rows     # make bench's rows only
    .venv/bin/python bench/assignment.py --leader --assignors sticky,cooperative-sticky --repeat 3

--leader times the classic group leader's whole step instead of the assignor alone:
``ConsumerProtocol.assign`` on the JoinGroup metadata bytes of the ``large`` leave (decoding
1,999 Subscriptions, the assignor, the leader's checks, encoding 1,999 Assignments), each
member's bytes as groupkit's runtime sends them on its rejoin (``sticky``: the assignor's user
data, no owned partitions under EAGER; ``cooperative-sticky``: owned partitions, generation 1).
With --steps it also prints each part's CPU time (timing wrappers around what ``assign`` calls),
with --profile N that step's cProfile table. ``make bench`` shows it as "leader large ... leave".
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.table import Row  # noqa: E402

#: members, topics, partitions per topic, how members subscribe.
CASES = {
    "small": (100, 1, 1_000, "uniform"),
    "medium": (1_000, 10, 1_000, "uniform"),
    "large": (2_000, 1_000, 1_000, "uniform"),
    "nonuniform": (500, 20, 1_000, "nonuniform"),
    "unequal": (2_000, 1_000, 100, "random"),
}
ASSIGNORS = ["range", "roundrobin", "sticky", "cooperative-sticky"]
UNEQUAL_SEED = 31
#: The Java client's published figures for these shapes, where any exist (cited in
#: docs/benchmarks.md, "Assignors"). Measured on other machines: shown beside ours, never in a ratio.
JAVA_PUBLISHED = {
    "large": (
        "Java AbstractStickyAssignorTest.testLargeAssignmentAndGroupWithUniformSubscription "
        "(2,000 members x 500 topics x 2,000 partitions: a fresh assignment, then all but one "
        "member rejoin with their partitions): about 1.4 s for both assignments on the author's "
        "machine, 1.8-2.2 s on Apache CI (apache/kafka PR #10509, KAFKA-12464, 2021)"
    ),
    "unequal": (
        "no published Java figure for random unequal subscriptions; the nearest, "
        "testLargeAssignmentAndGroupWithNonEqualSubscription (2,000 members x 1,000,000 "
        "partitions, one member on a single topic, fresh + rejoin), took about 44 s locally "
        "(apache/kafka PR #11578, KAFKA-13514) and about 25 s on an M1 laptop (PR #13920)"
    ),
}


def topics_of(case: str) -> tuple[dict[str, int], list[list[str]]]:
    """Partition counts and each member's subscription for ``case``."""
    members, topics, per_topic, kind = CASES[case]
    names = [f"topic-{i:04d}" for i in range(topics)]
    counts = dict.fromkeys(names, per_topic)
    if kind == "uniform":
        return counts, [names] * members
    if kind == "random":
        rng = random.Random(UNEQUAL_SEED)
        return counts, [sorted(rng.sample(names, rng.randint(50, 500))) for _ in range(members)]
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

        self.name = name
        self.assignor = lookup(name)
        self.cluster = ClusterView(counts)

    def members(self, subscriptions: dict[str, list[str]], previous: dict | None) -> object:
        from assignors import MemberSubscription
        from assignors.sticky_data import encode_sticky_user_data

        if previous is None:
            return {m: MemberSubscription(t) for m, t in subscriptions.items()}
        if self.name == "cooperative-sticky":
            # What the runtime passes a cooperative leader: owned partitions and generation.
            return {
                m: MemberSubscription(t, owned_partitions=previous[m], generation=1)
                for m, t in subscriptions.items()
            }
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


def profiled(runner: Groupkit | KafkaPython, members: object, label: str, top: int) -> dict:
    """``runner.assign(members)`` under cProfile; prints the ``top`` entries by own time."""
    import cProfile
    import pstats

    profile = cProfile.Profile()
    result = profile.runcall(runner.assign, members)
    print(f"--- {label}: the {top} entries with the most own time", flush=True)
    pstats.Stats(profile, stream=sys.stdout).sort_stats("tottime").print_stats(top)
    return result


def worker(impl: str, name: str, case: str, profile: int = 0) -> None:
    """One measurement; prints a JSON line after the fresh assignment and after the rebalance.
    With ``profile`` it prints the assignments' cProfile tables instead of timing them."""
    counts, topic_lists = topics_of(case)
    subscriptions = {f"member-{i:05d}": t for i, t in enumerate(topic_lists)}
    runner = (KafkaPython if impl == "kafka-python" else Groupkit)(name, counts)
    members = runner.members(subscriptions, None)
    if profile:
        first = profiled(runner, members, f"{case} {name} fresh", profile)
        del subscriptions["member-00000"]
        profiled(runner, runner.members(subscriptions, first), f"{case} {name} leave", profile)
        return
    base = rss_mb()
    start, cpu = time.perf_counter(), time.process_time()
    first = runner.assign(members)
    out = {"fresh_s": time.perf_counter() - start, "fresh_cpu": time.process_time() - cpu,
           "peak_mb": peak_mb() - base}
    print(json.dumps(out), flush=True)
    del subscriptions["member-00000"]
    members = runner.members(subscriptions, first)
    start, cpu = time.perf_counter(), time.process_time()
    second = runner.assign(members)
    out["leave_s"] = time.perf_counter() - start
    out["leave_cpu"] = time.process_time() - cpu
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


def leader_members(name: str, case: str) -> tuple[object, list]:
    """A ConsumerProtocol leading ``case`` after its first member left, and the other members'
    JoinGroup metadata as groupkit's runtime sends it on the rejoin (see --leader)."""
    from assignors import ClusterView, MemberSubscription, TopicPartition, lookup
    from assignors.wire import encode_subscription
    from groupkit.group import GroupMember
    from groupkit.group.consumer_protocol import ConsumerProtocol

    counts, topic_lists = topics_of(case)
    ids = [f"member-{i:05d}" for i in range(len(topic_lists))]
    first = lookup(name).assign(
        ClusterView(counts), {m: MemberSubscription(t) for m, t in zip(ids, topic_lists, strict=True)})
    members = []
    for member_id, topics in zip(ids[1:], topic_lists[1:], strict=True):
        assignor = lookup(name)
        held = sorted(TopicPartition(*tp) for tp in first[member_id].partitions)
        if name == "sticky":
            assignor.on_assignment(first[member_id], 1)
            owned, generation = [], -1  # EAGER: revoked before the rejoin
        else:
            owned, generation = held, 1
        data = encode_subscription(
            topics, owned, generation, None, assignor.subscription_user_data(tuple(owned), generation))
        members.append(GroupMember(member_id, None, data))
    leader = ConsumerProtocol([name], cluster_view=lambda topics: ClusterView(counts))
    return leader, members


#: What ``ConsumerProtocol.assign`` calls, by the names its module has had: each one's CPU
#: time is summed under its step with --steps (the assignor's own ``assign`` is "assignor").
LEADER_STEPS = {
    "decode_subscription": "decode",
    "SubscriptionDecoder": "decode",
    "_check_exclusive": "checks",
    "_current_owners": "checks",
    "validate_cooperative": "checks",
    "_checked_by_number": "checks",
    "encode_assignment": "encode",
}


def timed_steps(leader: object) -> dict[str, float]:
    """Wrap what ``leader.assign`` calls (see LEADER_STEPS) to sum each step's CPU time."""
    import functools

    from groupkit.group import consumer_protocol

    spent: dict[str, float] = {}

    def timing(step: str, call):  # type: ignore[no-untyped-def]
        @functools.wraps(call)
        def timed(*args, **kwargs):  # type: ignore[no-untyped-def]
            start = time.process_time()
            try:
                return call(*args, **kwargs)
            finally:
                spent[step] = spent.get(step, 0.0) + time.process_time() - start
        return timed

    for attr, step in LEADER_STEPS.items():
        value = getattr(consumer_protocol, attr, None)
        if isinstance(value, type):
            value.decode = timing(step, value.decode)  # type: ignore[attr-defined]
        elif value is not None:
            setattr(consumer_protocol, attr, timing(step, value))
    assignor = leader.assignors[0]  # type: ignore[attr-defined]
    assignor.assign = timing("assignor", assignor.assign)
    return spent


def leader_worker(name: str, case: str, profile: int = 0, steps: bool = False) -> None:
    """One timing of ``ConsumerProtocol.assign`` on the leave (see --leader); prints a JSON line,
    or with ``profile`` the cProfile table of that step."""
    leader, members = leader_members(name, case)
    spent = timed_steps(leader) if steps else {}
    if profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.runcall(leader.assign, name, members)
        print(f"--- leader {case} {name} leave: the {profile} entries with the most own time")
        pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(profile)
        return
    base = rss_mb()
    start, cpu = time.perf_counter(), time.process_time()
    result = leader.assign(name, members)
    out = {"leave_s": time.perf_counter() - start, "leave_cpu": time.process_time() - cpu,
           "peak_mb": peak_mb() - base, "bytes": sum(map(len, result.values()))}
    import hashlib

    digest = hashlib.sha256()
    for member_id in sorted(result):
        digest.update(member_id.encode() + b"\0" + result[member_id])
    out["sha256"] = digest.hexdigest()[:16]
    out.update({f"{step}_cpu": seconds for step, seconds in spent.items()})
    print(json.dumps(out), flush=True)


def measure(impl: str, name: str, case: str, limit: float | None) -> dict:
    """Run one measurement in a subprocess; what it printed before any time limit."""
    command = [sys.executable, __file__, "--worker", impl, name, case]
    if impl.startswith("leader-"):
        command = [sys.executable, __file__, "--leader-worker", name, case]
        if impl.endswith("-steps"):
            command.append("--steps")
            impl = impl[: -len("-steps")]
        impl = impl[len("leader-"):]
    env = dict(os.environ)
    if impl == "groupkit-py":
        env["GROUPKIT_NO_NATIVE"] = "1"
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as proc:
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


def measure_best(impl: str, name: str, case: str, repeat: int, limit: float | None) -> dict:
    """``repeat`` runs of ``measure``: the best time of each kind, and the spread in the note."""
    runs = [measure(impl, name, case, limit) for _ in range(repeat)]
    best = dict(runs[0])
    spread = []
    timed = ["fresh_s", "leave_s", "fresh_cpu", "leave_cpu"]
    timed += sorted({k for r in runs for k in r if k.endswith("_cpu") and k not in timed})
    for key in timed:
        times = [r[key] for r in runs if key in r]
        if times:
            best[key] = min(times)
        if len(times) > 1 and key.endswith("_s"):
            spread.append(f"{key[:-2]} {min(times):.3f}-{max(times):.3f} "
                          f"(median {statistics.median(times):.3f})")
    if spread:
        best["note"] = (best.get("note", "") + f" {repeat} runs: " + ", ".join(spread)).strip()
    return best


def cell(result: dict, key: str, fmt: str) -> str:
    """``result[key]`` formatted, or a dash in the same width when the run did not get there."""
    if key in result:
        return format(result[key], fmt)
    return "-".rjust(int(fmt.rstrip("dfs").split(".")[0]))


#: The rows ``make bench`` shows: (case, assignor, which time).
BENCH_ROWS = [
    ("unequal", "sticky", "fresh_s"),
    ("unequal", "cooperative-sticky", "fresh_s"),
    ("large", "sticky", "leave_s"),
    ("large", "cooperative-sticky", "leave_s"),
]


def rows(repeat: int = 3, peer_limit: float = 60.0) -> list[Row]:
    """``make bench``'s assignor rows: best of ``repeat`` groupkit runs, the pure Python path
    once, and kafka-python's sticky once within ``peer_limit`` seconds (none for cooperative);
    then the leader's whole step on the large leave (``ConsumerProtocol.assign``, --leader)."""
    out = []
    for case, name, key in BENCH_ROWS:
        ours = measure_best("groupkit", name, case, repeat, None)
        runs = {"groupkit-py": measure("groupkit-py", name, case, None)}
        if name == "sticky":
            runs["kafka-python"] = measure("kafka-python", name, case, peer_limit)
        peers: dict[str, float | None] = {impl: run.get(key) for impl, run in runs.items()}
        what = "fresh" if key == "fresh_s" else "leave"
        out.append(Row(f"assign {case} {name} {what}", "s", ours.get(key), peers, False))
        cpu = ours.get(key.replace("_s", "_cpu"))
        notes = [ours.get("note", ""), f"CPU {cpu:.3f} s" if cpu is not None else ""]
        notes += [f"{impl}: {run['note']}" for impl, run in runs.items() if run.get("note")]
        print(f"  assign {case} {name} {what}: {'; '.join(n for n in notes if n)}", flush=True)
    for name in ("sticky", "cooperative-sticky"):
        # The leader's whole step on the same leave (--leader): groupkit and its Python path.
        ours = measure_best("leader-groupkit", name, "large", repeat, None)
        python = measure("leader-groupkit-py", name, "large", None)
        label = f"leader large {name} leave"
        out.append(Row(label, "s", ours.get("leave_s"), {"groupkit-py": python.get("leave_s")}, False))
        cpu = ours.get("leave_cpu")
        notes = [ours.get("note", ""), f"CPU {cpu:.3f} s" if cpu is not None else ""]
        print(f"  {label}: {'; '.join(n for n in notes if n)}", flush=True)
    return out


def leader_table(args: argparse.Namespace) -> None:
    """--leader: ConsumerProtocol.assign on the large leave, per assignor (and Python path)."""
    if args.profile:
        for name in args.assignors.split(","):
            leader_worker(name, "large", args.profile)
        return
    print(f"{'step':<30}{'assignor':<19}{'impl':<13}{'wall s':>8}{'cpu s':>8}{'peak MB':>9}"
          f"{'bytes':>11}  sha256 of the result, note")
    for name in args.assignors.split(","):
        for impl in ["groupkit"] + (["groupkit-py"] if args.python else []):
            which = f"leader-{impl}" + ("-steps" if args.steps else "")
            result = measure_best(which, name, "large", args.repeat, None)
            print(f"{'leader large leave':<30}{name:<19}{impl:<13}{cell(result, 'leave_s', '8.3f')}"
                  f"{cell(result, 'leave_cpu', '8.3f')}{cell(result, 'peak_mb', '9.1f')}"
                  f"{cell(result, 'bytes', '11d')}  {result.get('sha256', '-')} "
                  f"{result.get('note', '')}", flush=True)
            if args.steps:
                runs = ", ".join(f"{step} {result[f'{step}_cpu']:.3f}"
                                 for step in ("decode", "assignor", "checks", "encode")
                                 if f"{step}_cpu" in result)
                print(f"{'':<30}CPU s per step (least of the runs): {runs}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated: " + ", ".join(CASES))
    parser.add_argument("--assignors", default=",".join(ASSIGNORS), help="comma-separated")
    parser.add_argument("--peer-limit", type=float, default=60.0, help="seconds per kafka-python run")
    parser.add_argument("--no-peer", action="store_true", help="measure groupkit only")
    parser.add_argument("--python", action="store_true",
                        help="also measure groupkit's pure Python path (GROUPKIT_NO_NATIVE=1)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per groupkit measurement")
    parser.add_argument("--rows", action="store_true",
                        help="print only make bench's assignor rows (best of --repeat, default 3)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="print cProfile's top N entries of each groupkit assignment instead")
    parser.add_argument("--leader", action="store_true",
                        help="time ConsumerProtocol.assign on the large leave instead (see above)")
    parser.add_argument("--steps", action="store_true",
                        help="with --leader: also each step's CPU time (runs with timing wrappers)")
    parser.add_argument("--worker", nargs=3, metavar=("IMPL", "ASSIGNOR", "CASE"), help=argparse.SUPPRESS)
    parser.add_argument("--leader-worker", nargs=2, metavar=("ASSIGNOR", "CASE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    if args.leader_worker:
        leader_worker(*args.leader_worker, steps=args.steps)
        return
    if args.leader:
        leader_table(args)
        return
    if args.rows:
        from bench.table import print_rows

        print_rows(rows(repeat=args.repeat if args.repeat > 1 else 3, peer_limit=args.peer_limit))
        for case, figure in JAVA_PUBLISHED.items():
            print(f"Java, published ({case}): {figure}")
        return
    if args.profile:
        for case in args.cases.split(","):
            for name in args.assignors.split(","):
                worker("groupkit", name, case, args.profile)
        return
    header = f"{'case':<11}{'m x p':>18} {'assignor':<19}{'impl':<13}{'fresh s':>9}{'rebal s':>9}"
    header += f"{'cpu s':>8}{'cpu s':>8}{'peak MB':>9}{'balance':>8}{'moves':>8}  note"
    print(header)
    for case in args.cases.split(","):
        members, topics, per_topic, _ = CASES[case]
        for name in args.assignors.split(","):
            impls = ["groupkit"] + (["groupkit-py"] if args.python else [])
            if not args.no_peer and name != "cooperative-sticky":
                impls.append("kafka-python")
            fresh = {}
            for impl in impls:
                if impl == "kafka-python":
                    result = measure(impl, name, case, args.peer_limit)
                else:
                    result = measure_best(impl, name, case, args.repeat, None)
                fresh[impl] = result.get("fresh_s")
                note = result.get("note", "")
                if impl != "groupkit" and fresh.get("groupkit") and fresh[impl]:
                    ratio = fresh[impl] / fresh["groupkit"]
                    note = f"{ratio:.1f}x groupkit's fresh time {note}"
                print(
                    f"{case:<11}{f'{members:,} x {topics * per_topic:,}':>18} {name:<19}{impl:<13}"
                    f"{cell(result, 'fresh_s', '9.3f')}{cell(result, 'leave_s', '9.3f')}"
                    f"{cell(result, 'fresh_cpu', '8.3f')}{cell(result, 'leave_cpu', '8.3f')}"
                    f"{cell(result, 'peak_mb', '9.1f')}{cell(result, 'balance', '8d')}"
                    f"{cell(result, 'moves', '8d')}  {note}",
                    flush=True,
                )
        if case in JAVA_PUBLISHED:
            print(f"{'':<11}{'':>18} Java, published: {JAVA_PUBLISHED[case]}", flush=True)


if __name__ == "__main__":
    main()
