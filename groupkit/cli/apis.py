"""``groupkit apis``: the Kafka APIs and versions groupkit speaks."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``apis`` command."""
    parser = sub.add_parser("apis", help="list the Kafka APIs and versions groupkit speaks")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print one line per API: key, name, version range, first flexible version."""
    from groupkit.protocol.registry import load_all

    for cls in sorted(load_all().values(), key=lambda c: c.API_KEY):
        name = cls.__name__.removesuffix("Request")
        flex = f", flexible from v{cls.FLEXIBLE_FROM}" if cls.FLEXIBLE_FROM is not None else ""
        print(f"{cls.API_KEY:>3}  {name:<20} v{cls.MIN_VERSION}-v{cls.MAX_VERSION}{flex}")
    return 0
