"""bench/group.py's member subprocess: what it has done before the clock starts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.group import CLIENT_MODULES, CLIENTS

ROOT = Path(__file__).resolve().parent.parent


# Runs bench/group.py as ``python -m bench.group member ...`` would, and prints at exit which
# of the clients' modules the process had loaded.
_RUN_MEMBER = """
import atexit, json, runpy, sys
watched = json.loads(sys.argv[1])
atexit.register(lambda: print(json.dumps([m for m in watched if m in sys.modules]),
                              file=sys.stderr))
sys.argv = ["bench.group", *sys.argv[2:]]
runpy.run_module("bench.group", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("client", CLIENTS)
def test_member_imports_its_client_before_go(client: str) -> None:
    """A member that is never told "go" has still imported its client library, so the join
    rows (timed from "go") do not count import time."""
    watched = sorted({m for modules in CLIENT_MODULES.values() for m in modules})
    proc = subprocess.run(
        [sys.executable, "-c", _RUN_MEMBER, json.dumps(watched), "member", client,
         "127.0.0.1:9", "group", "topic", "0"],
        input="", capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == ['{"ready": true}']
    loaded = set(json.loads(proc.stderr.splitlines()[-1]))
    assert set(CLIENT_MODULES[client]) <= loaded
    others = {m for c, modules in CLIENT_MODULES.items() if c != client for m in modules}
    assert not (others - set(CLIENT_MODULES[client])) & loaded
