"""``groupkit groups lag G --watch`` in a real pseudo-terminal: the figure changes in place as
records arrive, the lag change per second appears, and Ctrl-C (the byte, through the terminal's
line discipline) ends it with exit status 0."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import sys
import time

import pytest

from groupkit.testing import LocalBroker
from tests.support.broker_data import commit_as_peer, make_batched_topic, write_batches
from tests.support.cli_groups import run_cli

ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")
WAIT = 30.0


class Terminal:
    """A child process on a pty; ``screen`` is everything it wrote, ANSI codes removed."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the pty is its controlling terminal
            # As a shell starts a command typed at its prompt: SIGINT handled by default and
            # not blocked, whatever the test process inherited (an ignored signal survives
            # exec, and then Python never turns Ctrl-C into KeyboardInterrupt).
            signal.pthread_sigmask(signal.SIG_SETMASK, [])
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.execve(argv[0], argv, env)
        self.raw = b""

    @property
    def screen(self) -> str:
        return ANSI.sub(b"", self.raw).decode(errors="replace")

    def wait_for(self, pattern: str, timeout: float = WAIT) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while (found := re.search(pattern, self.screen)) is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {pattern!r} on the terminal within {timeout} s:\n"
                                     f"{self.screen[-2000:]}")
            self._pump(left)
        return found

    def _pump(self, timeout: float) -> None:
        """Read what the child wrote within ``timeout`` s (nothing once it closed the pty)."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if ready:
            try:
                self.raw += os.read(self.fd, 65536)
            except OSError:  # the child closed the terminal
                time.sleep(0.01)

    def exit_status(self, timeout: float = WAIT) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._pump(0.05)
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        raise AssertionError(f"the command did not exit within {timeout} s")

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.fd)


@pytest.fixture
def terminal():
    opened: list[Terminal] = []

    def start(*args: str) -> Terminal:
        env = {"PATH": os.environ.get("PATH", ""), "TERM": "xterm-256color",
               "COLUMNS": "300", "LINES": "40"}
        t = Terminal([sys.executable, "-m", "groupkit.cli", *args], env)
        opened.append(t)
        return t

    yield start
    for t in opened:
        t.close()


def test_watch_refreshes_the_lag_in_place_until_ctrl_c(kafka_broker, unique_name,
                                                        terminal) -> None:
    bootstrap = kafka_broker.bootstrap_servers
    topic, group = unique_name("watched"), unique_name("g")
    make_batched_topic(bootstrap, topic, {0: [6], 1: [4]})
    commit_as_peer(bootstrap, group, {(topic, 0): 0, (topic, 1): 0})
    term = terminal("groups", "lag", group, "--watch", "0.3", "--bootstrap-server", bootstrap)
    term.wait_for(r"TOTAL-LAG 10\b")
    write_batches(bootstrap, topic, {0: [25]}, b"more")
    term.wait_for(r"TOTAL-LAG 35\b")
    # Once a refresh saw the 25 new records, partition 0's lag grew at a positive rate.
    term.wait_for(rf"{re.escape(topic)}\s+0\s+0\s+31\s+31\s+\+(?:[1-9]\d*\.\d|0\.[1-9])")
    assert "LAG/S" in term.screen
    os.write(term.fd, b"\x03")  # Ctrl-C as typed: the line discipline sends SIGINT
    assert term.exit_status() == 0
    assert "Traceback" not in term.screen


def test_watch_shows_a_failed_refresh_and_keeps_going(unique_name, terminal,
                                                      tmp_path) -> None:
    config = tmp_path / "fast.properties"
    config.write_text("request.timeout.ms=1000\nsocket.connection.setup.timeout.ms=500\n"
                      "retry.backoff.ms=50\n")
    with LocalBroker() as broker:
        topic, group = unique_name("gone"), unique_name("g")
        make_batched_topic(broker.bootstrap_servers, topic, {0: [3]})
        commit_as_peer(broker.bootstrap_servers, group, {(topic, 0): 1})
        term = terminal("groups", "lag", group, "--watch", "0.2", "--command-config",
                        str(config), "--bootstrap-server", broker.bootstrap_servers)
        term.wait_for(r"TOTAL-LAG 2\b")
    # The broker is gone: each refresh fails within the configured timeouts and says so.
    term.wait_for(r"refresh failed, trying again")
    os.write(term.fd, b"\x03")
    assert term.exit_status() == 0
    assert "Traceback" not in term.screen


def test_ctrl_c_reaches_the_command_even_when_the_test_process_ignores_sigint(
        terminal) -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        term = terminal("apis")  # any command; it is the harness under test here
        term.exit_status()
        sleeper = Terminal([sys.executable, "-c", "import time; print('ready', flush=True);"
                            " time.sleep(60)"], {"PATH": os.environ.get("PATH", "")})
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        sleeper.wait_for("ready")
        os.write(sleeper.fd, b"\x03")
        assert sleeper.exit_status(timeout=10) != 0
    finally:
        sleeper.close()


def test_watch_needs_a_positive_period(kafka_broker, capsys) -> None:
    status, _, err = run_cli(capsys, "groups", "lag", "g", "--watch", "0",
                             "--bootstrap-server", kafka_broker.bootstrap_servers)
    assert status == 2 and "--watch takes a period" in err
