"""The ``groupkit`` command line: one module per command group, each adding its subcommands.

Each module listed in ``_COMMANDS`` has ``register(subparsers)``, which adds its parsers and sets
``func`` (a callable taking the parsed namespace and returning the exit status) as a default.
Modules load only when the command line runs, so ``import groupkit`` never pays for them.
"""

from __future__ import annotations

import argparse
import importlib
import sys

_COMMANDS = ("groupkit.cli.apis", "groupkit.cli.demo", "groupkit.cli.run")


def build_parser() -> argparse.ArgumentParser:
    """The whole command line's parser, every command group registered."""
    parser = argparse.ArgumentParser(prog="groupkit", description="Kafka consumer groups for Python.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in _COMMANDS:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the command and return its exit status."""
    args = build_parser().parse_args(argv)
    status: int = args.func(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
