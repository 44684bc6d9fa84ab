"""A request a connection sends again by itself while its answer does not change.

An idle member sends the same requests over and over and gets the same answers back: its long
poll (a Fetch answered with nothing) and, once it is settled in its group, its heartbeat.
Whoever sends such a request may let it stand on its connection (``BrokerConnection.send(...,
standing=)``): each time its answer is the last answer again, byte for byte, the connection
sends the kept frame once more with a new correlation id, without completing the request's
Future and without its callbacks. A long poll stands at once (``every`` 0): the reader thread
sends it again as its answer comes. A heartbeat stands ``every`` heartbeat interval, counted
from one send to the next as the Java client counts it (Heartbeat.sentHeartbeat): an answer
that comes before the next send is due waits (``park``) for a timer thread of the standing's
own, which sleeps on a Bell until then and sends it; one that comes later is sent again at once
by the reader thread.

The Future completes with the first answer that differs, with the first answer after ``end()``
(at once with an answer waiting for its time), or fails with the connection (a request
timeout, a close). Every repeat is a request in flight like any other, timed by the watchdog.
Whoever stands a request ends it (``end``, any thread) whenever what it would send, or whether
it would send at all, changes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from groupkit.protocol.schema import Response
from groupkit.runtime.bell import Bell

if TYPE_CHECKING:
    from groupkit.runtime.connection import _Pending

__all__ = ["Standing"]


@attrs.define(eq=False)
class Standing:
    """A request its connection sends again while its answer repeats (see the module).

    ``tick``, if given, is called on the connection's thread after each repeat went out, with
    when the one before it went out and when it did (hooks count every round trip; a timed
    one's was answered at ``answered_at``). ``answer``, if given, is the answer the caller
    found changed nothing: the request stands only if that is the very answer the connection
    keeps as the last one (else it is sent once, as without ``standing``).
    """

    tick: Callable[[float, float], object] | None = None
    #: Seconds from one send to the next (0: at once, as each unchanged answer comes).
    every: float = 0.0
    answer: Response | None = None
    live: bool = True
    #: The kept frame re-sent (its correlation id written in place) and each repeat's timeout
    #: in seconds: set by the connection as the request goes out.
    frame: bytearray | None = None
    timeout: float = 0.0
    #: A timed standing's: when the repeat in flight (or the last one answered) went out, and
    #: when the last unchanged answer came (monotonic seconds, set by the connection).
    sent_at: float = 0.0
    answered_at: float = 0.0
    #: A timed standing's: the lock of the socket it stands on, which guards ``live`` and
    #: ``_parked``, and its timer's Bell (``start``).
    lock: threading.Lock | None = None
    _bell: Bell | None = None
    #: A repeat whose unchanged answer came before its next send is due, waiting for it.
    _parked: _Pending | None = None

    def end(self) -> None:
        """Send no more repeats (any thread): the next answer completes the Future, or, when a
        repeat waits for its time, that repeat's answer does at once (on this thread)."""
        lock = self.lock
        if lock is None:
            self.live = False
            return
        with lock:
            parked = self.stop()
        if parked is not None:
            parked.future.set_result(self.answer)

    # --- the connection's side -----------------------------------------------------------------

    def start(self, lock: threading.Lock, send: Callable[[_Pending], bool], name: str) -> None:
        """A timed standing's first send went out on the socket ``lock`` guards: start its
        timer thread, which calls ``send`` with each parked repeat at its time (False: the
        socket closed, and the answer is delivered instead)."""
        self.lock = lock
        self._bell = Bell()
        threading.Thread(target=self._time, args=(send,), daemon=True, name=name).start()

    def park(self, head: _Pending, response: Response) -> bool | None:
        """On the reader thread, ``head``'s answer unchanged: True when it now waits for the
        timer, False when the standing ended (the answer is delivered), None when the next
        send is due already (the reader sends it, then calls ``replan``)."""
        assert self.lock is not None
        with self.lock:
            now = time.monotonic()
            self.answered_at = now
            if not self.live:
                return False
            if now >= self.sent_at + self.every:
                return None
            self.answer = response
            self._parked = head
            return True

    def replan(self) -> None:
        """The reader sent a repeat itself: the timer, waiting for an answer, looks again."""
        if self._bell is not None:
            self._bell.ring()

    def done(self) -> None:
        """The Future completes (an answer that differs): no more repeats; the timer ends."""
        self.live = False
        if self._bell is not None:
            self._bell.ring()

    def stop(self) -> _Pending | None:
        """No more repeats (the caller holds ``lock``): the repeat waiting for its time, if any,
        for the caller to complete; the timer ends."""
        self.live = False
        parked, self._parked = self._parked, None
        if self._bell is not None:
            self._bell.ring()
        return parked

    def _time(self, send: Callable[[_Pending], bool]) -> None:
        """The timer thread: send each parked repeat when its time comes, until ended. Between
        two heartbeats it wakes once, at the next one's time (an answer that came early waits
        for it), or, when the answer is late, when the reader sent the next one (``replan``)."""
        lock, bell = self.lock, self._bell
        assert lock is not None and bell is not None
        wait: float | None = self.every
        while True:
            bell.wait(wait)
            with lock:
                if not self.live:
                    return
                now = time.monotonic()
                at = self.sent_at + self.every
                head = None
                if now >= at:
                    head, self._parked = self._parked, None
            if head is None:
                wait = at - now if at > now else None  # None: until the reader sends it
            elif send(head):
                wait = self.every
            else:
                head.future.set_result(self.answer)  # the socket closed: the answer is the news
