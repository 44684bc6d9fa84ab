"""The ``groupkit`` command line."""

from __future__ import annotations

import argparse
import sys


def _cmd_apis(args: argparse.Namespace) -> int:
    from groupkit.protocol.registry import REQUESTS

    for cls in sorted(REQUESTS.values(), key=lambda c: c.API_KEY):
        name = cls.__name__.removesuffix("Request")
        flex = f", flexible from v{cls.FLEXIBLE_FROM}" if cls.FLEXIBLE_FROM is not None else ""
        print(f"{cls.API_KEY:>3}  {name:<20} v{cls.MIN_VERSION}-v{cls.MAX_VERSION}{flex}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from groupkit.demo import run_demo

    summary = run_demo(partitions=args.partitions, rate=args.rate)
    return 0 if summary.lost == 0 else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="groupkit", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("apis", help="list the Kafka APIs and versions groupkit speaks")
    demo = sub.add_parser("demo", help="run a local broker and a group of workers sharing a topic")
    demo.add_argument("--partitions", type=int, default=6, help="partitions of the demo topic")
    demo.add_argument("--rate", type=float, default=200.0, help="records produced per second")
    args = parser.parse_args(argv)
    commands = {"apis": _cmd_apis, "demo": _cmd_demo}
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
