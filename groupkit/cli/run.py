"""``groupkit run MODULE:CLASS``: run a GroupConsumer or ShareWorker subclass as one member or a
pool."""

from __future__ import annotations

import argparse
import ast
import logging
import os
import sys
from typing import Any

from groupkit.cli.common import BOOTSTRAP_ENV


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``run`` command."""
    parser = sub.add_parser(
        "run", help="run a GroupConsumer or ShareWorker subclass as a group member, or a pool"
                    " of them",
        description="Import MODULE (from the current directory, as Python would) and run its"
                    " GroupConsumer or ShareWorker subclass CLASS. With --processes N > 1, a"
                    " supervisor runs N worker processes (see groupkit.workers); share-group"
                    " workers may outnumber the partitions.")
    parser.add_argument("target", metavar="MODULE:CLASS", help="e.g. myapp.workers:OrderWorker")
    parser.add_argument("--processes", type=int, default=1,
                        help="worker processes (default 1: one member in the foreground)")
    parser.add_argument("--bootstrap-server", "--bootstrap-servers", dest="bootstrap_servers",
                        help="host:port[,host:port...] of the brokers (default:"
                             " $GROUPKIT_BOOTSTRAP_SERVERS, else the class's setting)")
    parser.add_argument("--command-config", metavar="FILE",
                        help="Java-style client properties (TLS, SASL), as for 'groupkit"
                             " groups'; --set wins over them")
    parser.add_argument("--metrics-port", type=int,
                        help="serve /metrics and /healthz on this port (0: any free port)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override a setting, e.g. --set session_timeout_ms=6000 (values are"
                             " Python literals, else strings); repeatable")
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    parser.set_defaults(func=run)


def parse_sets(pairs: list[str]) -> dict[str, Any]:
    """``["a=1", "b=x"]`` -> ``{"a": 1, "b": "x"}``: a Python literal when it parses as one."""
    from groupkit.errors import ConfigError

    settings: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"--set takes NAME=VALUE, not {pair!r}")
        try:
            value: Any = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text
        settings[name.strip()] = value
    return settings


def load_target(target: str) -> type:
    """Import ``MODULE:CLASS`` with the current directory first on the path."""
    from groupkit.errors import ConfigError
    from groupkit.workers.worker import load_class

    if ":" not in target:
        raise ConfigError(f"name the worker as MODULE:CLASS (e.g. app:OrderWorker), not {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return load_class(target)
    except (ImportError, AttributeError, TypeError) as exc:
        raise ConfigError(f"cannot load {target}: {exc}") from exc


def _connection_settings(args: argparse.Namespace) -> dict[str, Any]:
    """Settings from --command-config (none without it)."""
    if not args.command_config:
        return {}
    from groupkit.cli.properties import client_settings, read_properties

    return client_settings(read_properties(args.command_config), args.command_config)


def run(args: argparse.Namespace) -> int:
    """Run the member or the pool; return the pool's exit status."""
    from groupkit.errors import ConfigError

    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s [%(process)d] %(name)s: %(message)s")
    try:
        cls = load_target(args.target)
        # Precedence: --bootstrap-server, --set, $GROUPKIT_BOOTSTRAP_SERVERS, --command-config.
        settings = _connection_settings(args)
        if os.environ.get(BOOTSTRAP_ENV):
            settings["bootstrap_servers"] = os.environ[BOOTSTRAP_ENV]
        settings.update(parse_sets(args.set))
        if args.bootstrap_servers:
            settings["bootstrap_servers"] = args.bootstrap_servers
        from groupkit.workers.pool import POOL_SETTINGS

        # One process runs in the foreground, unless a pool setting asks for supervision.
        if args.processes == 1 and not set(settings) & set(POOL_SETTINGS):
            if args.metrics_port is not None:
                settings["metrics_port"] = args.metrics_port
            cls(**settings).run()
            return 0
        from groupkit.workers import Pool

        if args.metrics_port is not None:
            settings["metrics_port"] = args.metrics_port
        summary = Pool(cls, processes=args.processes, **settings).run()
    except ConfigError as exc:
        logging.getLogger("groupkit.cli").error("%s", exc)
        return 2
    return summary.exit_status
