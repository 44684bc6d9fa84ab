"""Lines of Python an idle groupkit member runs per second, thread by thread, for code trees.

CPU figures of an idle member move with the machine's load by more than most single cuts;
the lines of Python it runs do not. Each tree (a directory holding a ``groupkit`` package, as
for ``bench.idle``) gets one member in a process of its own, set as bench/idle.py's poll loop
(session 6000 ms, heartbeat 500 ms, ``poll(0.5)``) on one shared Tansu broker, with a
``sys.settrace``/``threading.settrace`` counter of line events per thread installed before
any thread starts. After the member holds its partition and has polled a few times, the
counts over ``--seconds`` are printed per thread, with the number of calls (Python frames
entered), and with ``--top N`` the N functions that ran the most lines. Tracing slows the
member, so its CPU here says nothing; its lines and calls do.

    .venv/bin/python -m bench.idle_lines [--seconds 20] [--top 0] [--worker] [--hook] [TREE ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

from bench.group import HEARTBEAT_MS, POLL_S, SESSION_MS, make_topic

ROOT = Path(__file__).resolve().parent.parent

# The member: a line counter on every thread, then bench/idle.py's member (or worker); after
# it settles, the counts over the window as JSON on stdout.
_MEMBER = f"""
import collections, json, sys, threading, time
lines = collections.Counter()
calls = collections.Counter()
where = collections.Counter()
counting = False

def local(frame, event, arg):
    if event == "line" and counting:
        key = threading.get_ident()
        lines[key] += 1
        code = frame.f_code
        where[(key, code.co_filename.rsplit("/", 2)[-2:][-1], code.co_name)] += 1
    return local

def tracer(frame, event, arg):
    if counting:
        calls[threading.get_ident()] += 1
    return local

threading.settrace(tracer)
sys.settrace(tracer)
seconds, worker, hook = float(sys.argv[3]), sys.argv[4] == "worker", sys.argv[5] == "hook"

def count():
    global counting
    time.sleep(3.0)  # the first fetches, the offsets lookup, the first heartbeats
    counting = True
    started = time.monotonic()
    time.sleep(seconds)
    counting = False
    wall = time.monotonic() - started
    names = {{t.ident: t.name for t in threading.enumerate()}}
    print(json.dumps({{
        "wall": wall,
        "names": {{str(k): names.get(k, "?") for k in lines}},
        "threads": {{str(k): [lines[k], calls[k]] for k in lines}},
        "where": [[str(k), f, c, n] for (k, f, c), n in where.most_common()],
    }}), flush=True)

if worker:
    from groupkit.group_consumer import GroupConsumer

    class Idle(GroupConsumer):
        def process(self, record):
            pass

        def on_assigned(self, partitions):
            if partitions:
                t = threading.Thread(target=count, daemon=True, name="counter")
                t.start()

    Idle(bootstrap_servers=sys.argv[1], group_id=sys.argv[2], topics=[sys.argv[2]],
         auto_offset_reset="earliest", session_timeout_ms={SESSION_MS},
         heartbeat_interval_ms={HEARTBEAT_MS}, assignors=["range"],
         hooks=[lambda event: None] if hook else []).run()
else:
    from groupkit.consumer import Consumer

    consumer = Consumer(bootstrap_servers=sys.argv[1], group_id=sys.argv[2],
                        auto_offset_reset="earliest", enable_auto_commit=False,
                        session_timeout_ms={SESSION_MS}, heartbeat_interval_ms={HEARTBEAT_MS},
                        assignors=["range"], hooks=[lambda event: None] if hook else [])
    consumer.subscribe([sys.argv[2]])
    while not consumer.assignment():
        consumer.poll({POLL_S})
    threading.Thread(target=count, daemon=True, name="counter").start()
    while True:
        consumer.poll({POLL_S})
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", default=[str(ROOT)])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--top", type=int, default=0,
                        help="also print the N functions that ran the most lines, per tree")
    parser.add_argument("--worker", action="store_true",
                        help="members are GroupConsumers (groupkit run), not a poll loop")
    parser.add_argument("--hook", action="store_true",
                        help="give each member a hook that does nothing (metrics would)")
    args = parser.parse_args(argv)

    from groupkit.testing import LocalBroker

    with LocalBroker() as broker:
        members = []
        for tree in args.trees:
            topic = f"lines-{uuid.uuid4().hex[:6]}"
            make_topic(broker.bootstrap_servers, topic, 1)
            members.append(subprocess.Popen(
                [sys.executable, "-c", _MEMBER, broker.bootstrap_servers, topic,
                 str(args.seconds), "worker" if args.worker else "",
                 "hook" if args.hook else ""],
                stdout=subprocess.PIPE, text=True, cwd="/",
                env={**os.environ, "PYTHONPATH": str(Path(tree).resolve())}))
        try:
            results = [json.loads(m.stdout.readline()) for m in members]  # type: ignore[union-attr]
        finally:
            for m in members:
                m.kill()
                m.wait()
    mode = "GroupConsumer" if args.worker else f"poll({POLL_S})"
    print(f"bench/idle_lines.py: {args.seconds:.0f} s, heartbeat {HEARTBEAT_MS} ms, {mode}"
          f"{', one no-op hook' if args.hook else ''}; lines and calls of Python per second")
    for tree, result in zip(args.trees, results, strict=True):
        wall = result["wall"]
        names = _roles(result)
        threads: dict[str, list[int]] = {}
        for k, (n, c) in result["threads"].items():
            if names[k] != "counter":
                mine = threads.setdefault(names[k], [0, 0])
                mine[0] += n
                mine[1] += c
        total = sum(n for n, _ in threads.values())
        print(f"{tree}: {total / wall:.0f} lines/s, {sum(c for _, c in threads.values()) / wall:.0f}"
              " calls/s")
        for name in sorted(threads):
            n, c = threads[name]
            print(f"    {name:24s} {n / wall:7.1f} lines/s  {c / wall:6.1f} calls/s")
        for k, file, func, n in result["where"][:args.top]:
            print(f"      {n / wall:7.1f}  {names[k]:18s} {file}:{func}")
    return 0


def _roles(result: dict) -> dict[str, str]:
    """Thread id -> what it does: the two connections' readers share a name (one broker), so
    a reader is named by what it ran (the heartbeat reader hands answers to the runner, or
    parks a standing heartbeat's for its timer). Several readers of short-lived connections
    would be summed as "fetch reader"."""
    names = {}
    for k, name in result["names"].items():
        if name.startswith("groupkit-reader-"):
            group = any(w[0] == k and (w[1] == "group_runner.py"
                                       or (w[1] == "standing.py" and w[2] == "park"))
                        for w in result["where"])
            name = "heartbeat reader" if group else "fetch reader"
        elif name.startswith("groupkit-group-"):
            name = "runner"
        elif name.startswith("groupkit-watchdog-"):
            name = "watchdogs"
        elif name == "MainThread":
            name = "application"
        names[k] = name
    return names


if __name__ == "__main__":
    sys.exit(main())
