"""The ``groupkit`` command line: one module per command group, each adding its subcommands.

Each module listed in ``_COMMANDS`` has ``register(subparsers)``, which adds its parsers and sets
``func`` (a callable taking the parsed namespace and returning the exit status) as a default.
Modules load only when the command line runs, so ``import groupkit`` never pays for them.

Parsing is argparse (the standard library: no dependency, subcommands and parent parsers are
all the commands need). Exit statuses: 0 success, 1 error, 2 usage error or refusal. An error
is one line on stderr saying what to do; ``--debug`` adds the traceback and debug logging.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import traceback

_COMMANDS = ("groupkit.cli.apis", "groupkit.cli.demo", "groupkit.cli.run", "groupkit.cli.groups")


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
    debug = bool(getattr(args, "debug", False))
    if hasattr(args, "debug"):
        # The client's own warnings (a closed connection, a retry) end in the one error line
        # this command prints; they show with --debug. The CLI's warnings always show.
        logging.basicConfig(level=logging.DEBUG if debug else logging.ERROR,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        if not debug:
            logging.getLogger("groupkit.cli").setLevel(logging.WARNING)
    try:
        status: int = args.func(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (``| head``): say nothing more, and let the interpreter's
        # final flush write to /dev/null instead of failing again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # every failure becomes one line (and a traceback with --debug)
        return _report(exc, debug)
    return status


def _report(exc: Exception, debug: bool) -> int:
    """Print ``exc`` for an operator and return its exit status."""
    from groupkit.cli.common import USAGE, CommandError
    from groupkit.errors import ConfigError, GroupkitError

    if debug:
        traceback.print_exc()
    if isinstance(exc, CommandError):
        print(f"groupkit: {exc}", file=sys.stderr)
        return exc.exit_status
    if isinstance(exc, ConfigError):
        print(f"groupkit: {exc}", file=sys.stderr)
        return USAGE
    if isinstance(exc, GroupkitError):
        print(f"groupkit: error: {exc}", file=sys.stderr)
        return 1
    print(f"groupkit: unexpected {type(exc).__name__}: {exc}; run again with --debug for the"
          " traceback and report it", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
