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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="groupkit", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("apis", help="list the Kafka APIs and versions groupkit speaks")
    sub.add_parser("demo", help="run the demo (for now: the supported APIs)")
    args = parser.parse_args(argv)
    if args.command in ("apis", "demo"):
        return _cmd_apis(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
