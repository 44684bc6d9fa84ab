"""``make bench``: every comparison benchmark in one run, and one table of ratios.

Runs, in this order: record decoding (bench/decode.py, every codec), producing
(bench/produce.py: acks=all, acks=0, lz4; and ``produce defaults``, groupkit and
confluent-kafka each at its defaults in a fresh process, timed from before the import), the
first record from a fresh process and group (bench/first.py, ``first fresh``, timed from
before the import) and the consumer group (bench/group.py: join, first
record, leave, kill, consume none/snappy with CPU and peak RSS, best of the rounds, idle CPU
and RSS), groupkit against aiokafka, confluent-kafka and kafka-python on the same input in the
same run, then the sticky assignors at scale (bench/assignment.py: unequal subscriptions
fresh, one member leaving a million-partition group, and the classic leader's whole step
around the assignor on that leave; groupkit's pure Python path and
kafka-python's sticky within a time limit beside them, the Java client's published figures
printed under the table), the rebalance of a member joining a busy group of 16 under each
group protocol, classic and consumer (KIP-848), on confluent-kafka's mock cluster
(bench/protocols.py, groupkit against confluent-kafka), and prints their rows as one table. A
ratio above 1x favours groupkit. Last, idempotent produce and transactional
read-process-write against confluent-kafka (bench/txn.py), and share groups (bench/share.py:
records accepted per second and CPU, groupkit's ShareConsumer against confluent-kafka's on the
mock cluster). ``--quick`` runs smaller inputs and fewer rounds.

    .venv/bin/python bench/all.py [--quick]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assignors import sticky_loops as assignor_loops  # noqa: E402
from bench import assignment, decode, first, group, produce, protocols, share, txn  # noqa: E402
from bench.table import print_rows  # noqa: E402
from groupkit.protocol import native_available  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs, fewer rounds")
    args = parser.parse_args()
    records = 200_000 if args.quick else 1_000_000
    repeat = 2 if args.quick else 3
    started = time.monotonic()
    cpus = len(__import__("os").sched_getaffinity(0))
    print(f"make bench: {records:,} records of 100 B per row, Python {platform.python_version()},"
          f" {platform.machine()}, {cpus} CPUs, C record loops "
          f"{'built' if native_available else 'NOT built'}, C assignor loops "
          f"{'built' if assignor_loops.NATIVE else 'NOT built'}", flush=True)
    rows = decode.measure(records, repeat)
    print(f"  decode done ({time.monotonic() - started:.0f} s)", flush=True)
    rows += produce.measure(records, max(1, repeat - 1))
    rows += produce.measure_defaults(repeat=repeat)
    print(f"  produce done ({time.monotonic() - started:.0f} s)", flush=True)
    rows += group.measure(["--records", str(records), "--members", "1,4,16",
                           "--idle-seconds", "10" if args.quick else "30",
                           "--repeat", str(repeat)])
    print(f"  group done ({time.monotonic() - started:.0f} s)", flush=True)
    rows += first.measure(repeat=3)
    print(f"  first fresh done ({time.monotonic() - started:.0f} s)", flush=True)
    rows += assignment.rows(repeat=repeat, peer_limit=20.0 if args.quick else 60.0)
    print(f"  assignment done ({time.monotonic() - started:.0f} s)", flush=True)
    rows += protocols.measure()
    print(f"  group protocols done ({time.monotonic() - started:.0f} s)", flush=True)
    # Idempotent produce and transactional read-process-write (bench/txn.py, issue 28).
    rows += txn.measure(records // 3, records // 20, max(1, repeat - 1))
    print(f"  txn done ({time.monotonic() - started:.0f} s)", flush=True)
    # Share groups (bench/share.py, issue 30): two members of each client, same records.
    rows += share.measure(records // 5, members=2)
    print(f"  share done ({time.monotonic() - started:.0f} s)", flush=True)
    print_rows(rows)
    for case, figure in assignment.JAVA_PUBLISHED.items():
        print(f"Java, published ({case}): {figure}")


if __name__ == "__main__":
    main()
