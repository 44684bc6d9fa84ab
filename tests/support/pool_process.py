"""``groupkit run`` (a real supervisor and real worker processes) started by a test, and the
``pools`` fixture that starts them and kills whatever is left afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import worker_log

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60.0


class PoolProcess:
    """``groupkit run`` in a process of its own; its log goes to a file read by the test."""

    def __init__(self, tmp: Path, target: str, processes: int, bootstrap: str, group: str,
                 topic: str, *sets: str) -> None:
        self.dir = tmp / "records"
        self.dir.mkdir(exist_ok=True)
        self.log_path = tmp / "pool.log"
        args = [str(Path(sys.executable).with_name("groupkit")), "run", f"tests.support.pool_workers:{target}",
                "--processes", str(processes), "--bootstrap-servers", bootstrap,
                "--set", f"group_id={group}", "--set", f"topics=[{topic!r}]",
                "--set", "graceful_timeout_s=20", "--set", "backoff_initial_s=0.2"]
        for s in sets:
            args += ["--set", s]
        env = {**os.environ, "POOL_TEST_DIR": str(self.dir)}
        with self.log_path.open("w") as log:
            self.proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)

    def log(self) -> str:
        return self.log_path.read_text()

    def lines(self) -> list[worker_log.Line]:
        """Every line the pool's workers logged (tests/support/worker_log.py)."""
        return [line for path in self.dir.glob("*.jsonl")
                for line in worker_log.read_lines(path)]

    def holders(self) -> dict[int, set[int]]:
        """Each worker pid's latest holding."""
        return {pid: set(line["held"]) for pid, line in worker_log.holding(self.lines()).items()}

    def processed(self) -> list[tuple[int, int]]:
        return worker_log.processed(self.lines())

    def stop(self, timeout: float = WAIT) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        """Kill the pool's whole session (supervisor and workers) if it is still there."""
        if self.proc.poll() is None:
            with _quiet():
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        with _quiet():
            os.killpg(self.proc.pid, signal.SIGKILL)  # workers left by a dead supervisor


class _quiet:  # noqa: N801 (a tiny context manager)
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is ProcessLookupError or exc[0] is PermissionError


@pytest.fixture
def pools(tmp_path: Path) -> Iterator[Callable[..., PoolProcess]]:
    started: list[PoolProcess] = []

    def start(*args: Any) -> PoolProcess:
        pool = PoolProcess(tmp_path, *args)
        started.append(pool)
        return pool

    yield start
    for pool in started:
        pool.kill()
