"""How often a thread of this process was scheduled: its context switches, read from /proc.

A thread blocked on a lock or a socket switches out voluntarily each time it blocks, so the
count over a stretch of work is the number of times that work made it wait and be woken.
Involuntary switches (the scheduler preempting a running thread) are left out: they measure
the machine's load, not the code. Linux only (``available``).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

available = sys.platform.startswith("linux")


def switches(thread: threading.Thread) -> int:
    """Voluntary context switches of ``thread`` so far: how often it blocked."""
    assert thread.native_id is not None, "the thread has not started"
    total = 0
    status = Path(f"/proc/self/task/{thread.native_id}/status").read_text()
    for line in status.splitlines():
        if line.startswith("voluntary_ctxt_switches"):
            total += int(line.split()[1])
    return total


def thread_named(prefix: str) -> threading.Thread:
    """The one live thread whose name starts with ``prefix``."""
    found = [t for t in threading.enumerate() if t.name.startswith(prefix)]
    assert len(found) == 1, f"threads named {prefix}*: {[t.name for t in found]}"
    return found[0]
