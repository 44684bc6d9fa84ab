"""A wakeup for one waiting thread that costs less than ``threading.Condition.wait``.

``Condition.wait`` makes a new lock, queues it, and runs some twenty lines of Python on every
wait; a thread that sleeps until its next deadline and wakes a few times a second (the group
runner of an idle member) pays that each time, with cold caches. A :class:`Bell` is one lock
held while nobody has rung: ``wait`` blocks acquiring it, ``ring`` releases it. Rings are not
counted: any number of them before a ``wait`` make that one ``wait`` return at once, so the
waiter must look at what it waits for after every wakeup (as with a Condition).
"""

from __future__ import annotations

import threading

__all__ = ["Bell"]

#: The longest timeout a lock's acquire takes (a longer one raises OverflowError).
_TIMEOUT_MAX = threading.TIMEOUT_MAX


class Bell:
    """Wakes one waiting thread; ``ring`` may be called from any thread, any number of times."""

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()  # held: not rung

    def ring(self) -> None:
        """Make the current or next ``wait`` return (at once if nothing waits yet)."""
        if self._lock.locked():
            try:  # noqa: SIM105 - contextlib.suppress would add a Python frame per ring
                self._lock.release()
            except RuntimeError:
                pass  # another thread rang between the look and the release: rung either way

    def wait(self, timeout: float | None = None) -> bool:
        """Block until rung or ``timeout`` seconds pass (``None``: no limit); True when rung.

        A ring is used up by the ``wait`` that sees it.
        """
        if timeout is None:
            return self._lock.acquire()
        if not timeout > 0:  # also NaN: look, do not block
            return self._lock.acquire(False)
        return self._lock.acquire(True, timeout if timeout < _TIMEOUT_MAX else _TIMEOUT_MAX)
