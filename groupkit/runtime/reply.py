"""The Future of one request's answer, made and completed without a Condition.

A ``concurrent.futures.Future`` builds a ``threading.Condition`` (a Python object over an
RLock) when it is made, and enters it, in Python, on every use. A connection makes one per
request and completes it on its reader thread, so for an idle member (a heartbeat and a fetch
every half second) that was about half the Python run per request. A :class:`Reply` keeps its
state under a plain lock and makes the Condition only when something must wait for it: a
``result``/``exception`` call before the answer is in, or ``concurrent.futures.wait`` and
``as_completed``, which use Future's private state (kept here exactly as Future keeps it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from concurrent.futures._base import FINISHED, LOGGER, RUNNING
from typing import Any

__all__ = ["Reply"]

#: Makes each Reply's Condition once, whichever thread asks first.
_MAKING = threading.Lock()


class Reply(Future[Any]):
    """A running (sent, so not cancellable) request's Future; the connection completes it."""

    # Until the answer is in; set on the instance by set_result/set_exception.
    _state = RUNNING
    _result = None
    _exception = None
    _cond: threading.Condition | None = None

    def __init__(self, callback: Callable[[Future[Any]], object] | None = None) -> None:
        """``callback``, if given, is added before anything can complete the Reply."""
        # No Future.__init__: its Condition is made on demand (see ``_condition``).
        self._lock = threading.Lock()
        self._waiters = []
        self._done_callbacks: list[Any] = [] if callback is None else [callback]

    # Future's is a plain attribute; here it is made on first use.
    @property
    def _condition(self) -> threading.Condition:  # type: ignore[override]
        """Future's Condition, over this Reply's lock: what Future's own methods and
        ``concurrent.futures.wait`` use, made the first time one of them runs."""
        cond = self._cond
        if cond is None:
            with _MAKING:
                cond = self._cond
                if cond is None:
                    cond = self._cond = threading.Condition(self._lock)
        return cond

    def cancel(self) -> bool:
        """A sent request cannot be taken back (as for any running Future): False."""
        return False

    def cancelled(self) -> bool:
        return False

    def running(self) -> bool:
        return self._state == RUNNING

    def done(self) -> bool:
        return self._state == FINISHED

    def result(self, timeout: float | None = None) -> Any:
        if self._state == FINISHED and self._exception is None:
            return self._result
        return super().result(timeout)  # waits, or raises the exception

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if self._state == FINISHED:
            return self._exception
        return super().exception(timeout)

    def add_done_callback(self, fn: Any) -> None:
        with self._lock:
            if self._state != FINISHED:
                self._done_callbacks.append(fn)
                return
        try:
            fn(self)
        except Exception:
            # As Future does: a failing callback is logged (and, in ``_complete``, the others
            # still run).
            LOGGER.exception("exception calling callback for %r", self)

    def set_exception(self, exception: BaseException | None) -> None:
        self._complete(None, exception)

    def _complete(self, result: Any, exception: BaseException | None = None) -> None:
        with self._lock:
            if self._state == FINISHED:
                # Raised outside the lock: Future's repr takes it (Future's lock is an RLock).
                already = True
            else:
                already = False
                self._result = result
                self._exception = exception
                self._state = FINISHED
                for waiter in self._waiters:  # concurrent.futures.wait, as_completed
                    if exception is None:
                        waiter.add_result(self)
                    else:
                        waiter.add_exception(self)
                if self._cond is not None:
                    self._cond.notify_all()
        if already:
            raise InvalidStateError(f"{FINISHED}: {self!r}")
        for fn in self._done_callbacks:
            try:
                fn(self)
            except Exception:
                LOGGER.exception("exception calling callback for %r", self)

    #: ``_complete`` itself, not a method that calls it: one call less per answer (the
    #: connection's reader thread completes every request, on a cold wakeup when idle).
    set_result = _complete
