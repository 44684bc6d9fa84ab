"""The broker's guard: runs the broker and stops it, and removes its log, when its owner goes.

Started by ``LocalBroker`` as ``python -I -S _guard.py LOG GRACE BROKER-ARGS...`` (standard
library only, so it starts fast and never imports groupkit). Its stdin is a pipe whose only
writer is the owner: end of file there means the owner called ``stop()`` or died, even by
SIGKILL, and the guard then stops the broker (SIGTERM, SIGKILL after GRACE seconds) and deletes
LOG. On Linux the broker also gets the parent-death signal (SIGKILL), so it cannot outlive a
killed guard either. The guard is single-threaded, which is what that signal needs (it fires
when the forking thread ends) and what makes ``preexec_fn`` safe.

It reports on stdout: the broker's pid on the first line, then ``exit CODE`` if the broker
ends by itself; it then keeps the log until the owner lets go, so the owner can read its tail.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the broker's child process before exec: SIGKILL it when the guard dies."""
    if sys.platform != "linux":
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _wait_readable(fds: list[int], timeout: float | None) -> list[int]:
    while True:
        try:
            return select.select(fds, [], [], timeout)[0]
        except InterruptedError:
            continue


def _stop(broker: subprocess.Popen[bytes], grace: float) -> None:
    if broker.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        broker.send_signal(signal.SIGTERM)
    try:
        broker.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            broker.kill()
        broker.wait()


def main(argv: list[str]) -> int:
    log_path, grace, args = argv[0], float(argv[1]), argv[2:]
    owner = sys.stdin.fileno()
    # SIGTERM, SIGHUP or SIGINT to the guard mean "stop", as when the owner lets go.
    stop_requested = False

    def request_stop(*_: object) -> None:
        nonlocal stop_requested
        stop_requested = True

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, request_stop)
    try:
        with open(log_path, "ab") as log:
            broker = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log,
                                      stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        print(broker.pid, flush=True)
        exited = _watch(owner, broker, lambda: stop_requested)
        if exited:
            print(f"exit {broker.returncode}", flush=True)
            while not stop_requested and not _owner_gone(owner, 1.0):
                pass
        _stop(broker, grace)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(log_path)
    return 0


def _owner_gone(owner: int, timeout: float) -> bool:
    """Whether the owner's pipe reached end of file (any byte written is ignored)."""
    if owner in _wait_readable([owner], timeout):
        return os.read(owner, 4096) == b""
    return False


def _watch(owner: int, broker: subprocess.Popen[bytes], stopping: Callable[[], bool]) -> bool:
    """Wait until the owner lets go (False) or the broker exits by itself (True)."""
    pidfd = -1
    with contextlib.suppress(AttributeError, OSError):
        pidfd = os.pidfd_open(broker.pid)
    try:
        fds = [owner] + ([pidfd] if pidfd >= 0 else [])
        while not stopping():
            ready = _wait_readable(fds, 1.0 if pidfd >= 0 else 0.2)
            if broker.poll() is not None:
                return True
            if owner in ready and os.read(owner, 4096) == b"":
                return False
        return False
    finally:
        if pidfd >= 0:
            os.close(pidfd)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
