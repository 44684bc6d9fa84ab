"""Pause Python's cyclic garbage collector while a fetched answer is decoded.

Decoding one Fetch answer allocates tens of thousands of records (each one object the collector
tracks, plus its header list) and creates no reference cycles. With the collector running, its
passes over the young generation and the records still buffered cost about as much as the
decoding itself; paused, the objects are examined once when it resumes. The pause is
process-wide, so it is counted: the collector resumes when the last overlapping pause ends,
and only if it was enabled when the first one began (a collector the application had disabled
stays disabled; an application that toggles it while a pause is on has its change undone).
Between answers the collector runs as usual, so cyclic garbage is still collected.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holders = 0
_resume = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run the body with automatic cyclic collection off (reference counting goes on)."""
    global _holders, _resume
    with _lock:
        if _holders == 0:
            _resume = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _resume:
                gc.enable()
