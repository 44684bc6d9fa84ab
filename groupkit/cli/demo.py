"""``groupkit demo``: a local broker and a group of workers sharing a topic."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``demo`` command."""
    parser = sub.add_parser("demo", help="run a local broker and a group of workers sharing a topic")
    parser.add_argument("--partitions", type=int, default=6, help="partitions of the demo topic")
    parser.add_argument("--rate", type=float, default=200.0, help="records produced per second")
    parser.add_argument("--processes", type=int, default=0,
                        help="run the workers as a pool of this many processes (groupkit run),"
                             " with one metrics endpoint, and kill one; 0: threads")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the demo; exit 1 if any record was lost."""
    if args.processes:
        from groupkit.demo_pool import run_pool_demo

        pooled = run_pool_demo(args.processes, partitions=args.partitions, rate=args.rate)
        return 0 if pooled.lost == 0 and pooled.pool_exit_status == 0 else 1
    from groupkit.demo import run_demo

    summary = run_demo(partitions=args.partitions, rate=args.rate)
    return 0 if summary.lost == 0 else 1
