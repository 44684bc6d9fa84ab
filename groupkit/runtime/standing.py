"""A request a connection sends again by itself while its answer does not change.

An idle member sends the same requests over and over and gets the same answers back: its long
poll (a Fetch answered with nothing) and, once it is settled in its group, its heartbeat.
Whoever sends such a request may let it stand on its connection (``BrokerConnection.send(...,
standing=)``): each time its answer is the last answer again, byte for byte, the connection
sends the kept frame once more with a new correlation id, without completing the request's
Future and without its callbacks. A long poll stands at once (``every`` 0): the reader thread
sends it again as its answer comes. A heartbeat stands ``every`` heartbeat interval, counted
from one send to the next as the Java client counts it (Heartbeat.sentHeartbeat): an answer
that comes before the next send is due waits (``park``) for its time.

A waiting heartbeat goes with a thread that wakes anyway, as the Java client's application
poll wakes its heartbeat thread when a heartbeat is due (AbstractCoordinator.pollHeartbeat):
another standing request sent again (an idle consumer's long poll, ``ride_all``) or the
application's poll (``ride``) sends it once its time has come; a thread woken for nothing else
costs about as much again as the send. Failing that, the reader thread of its own connection,
which waits for the socket with a timeout while a heartbeat waits (``backstop``), sends it at
most ``slack`` after its time (Java's heartbeat thread looks every retry.backoff.ms, 100 ms).
One that comes later than its time is sent again at once by the reader.

The Future completes with the first answer that differs, with the first answer after ``end()``
(at once with an answer waiting for its time), or fails with the connection (a request
timeout, a close). Every repeat is a request in flight like any other, timed by the watchdog.
Whoever stands a request ends it (``end``, any thread) whenever what it would send, or whether
it would send at all, changes.
"""

from __future__ import annotations

import select
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import attrs

from groupkit.protocol.schema import Response

__all__ = ["InFlight", "Standing", "ride_all"]

#: The latest a waiting heartbeat goes after its time when no other thread takes it (at most
#: a tenth of its interval).
SLACK_S = 0.05

#: The timed standings that may wait for their time, for ``ride_all``.
_TIMED: list[Standing] = []


def ride_all() -> None:
    """Send every waiting heartbeat whose time has come (any thread that wakes anyway)."""
    for standing in _TIMED:
        standing.ride()


@attrs.define(eq=False)
class InFlight:
    """A request in flight on a connection (``BrokerConnection``; changed only to put a
    standing request in flight again once its answer took it off the socket's ``pending``).
    Kept here, beside the ``Standing`` that re-sends it, so that neither module imports the
    other back. A slotted attrs class: on CPython 3.11 it is made and read faster than a
    NamedTuple, whose field reads are not specialized."""

    correlation_id: int
    api_key: int
    version: int
    response_cls: type[Response]
    future: Future[Any]
    sent_at: float
    deadline: float
    handshake: bool = False
    #: A request equal to the one sent before it, so its answer may repeat too.
    repeat: bool = False
    #: Sent again by the connection while its answer repeats (see ``Standing``).
    standing: Standing | None = None


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
    #: ``_parked``, and how to send a repeat on it (``start``).
    lock: threading.Lock | None = None
    _send: Callable[[InFlight], bool] | None = None
    #: A timed standing's: its reader's poll of the socket and how late it sends a waiting
    #: repeat (``backstop``).
    _poller: select.poll | None = None
    _slack: float = 0.0
    #: A repeat whose unchanged answer came before its next send is due, waiting for it.
    _parked: InFlight | None = None

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

    def ride(self) -> None:
        """Send the waiting repeat if its time has come (any thread; cheap when none waits)."""
        if self._parked is None or time.monotonic() < self.sent_at + self.every:
            return
        lock = self.lock
        assert lock is not None and self._send is not None
        with lock:
            head = self._parked
            if head is None or time.monotonic() < self.sent_at + self.every:
                return
            self._parked = None
        if not self._send(head):
            head.future.set_result(self.answer)  # the socket closed: the answer is the news

    # --- the connection's side -----------------------------------------------------------------

    def start(self, lock: threading.Lock, send: Callable[[InFlight], bool],
              poller: select.poll) -> None:
        """A timed standing's first send went out on the socket ``lock`` guards; ``send`` puts
        a waiting repeat in flight there (False: the socket closed); its reader waits with
        ``poller`` (the socket's) while a repeat waits for its time (``backstop``)."""
        self.lock = lock
        self._send = send
        self._poller = poller
        self._slack = min(SLACK_S, self.every / 10)
        _TIMED.append(self)

    def park(self, head: InFlight, response: Response) -> bool | None:
        """On the reader thread, ``head``'s answer unchanged: True when it now waits for its
        time, False when the standing ended (the answer is delivered), None when the next send
        is due already (the reader sends it)."""
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

    def backstop(self) -> None:
        """On the reader thread, a repeat of this standing waiting for its time: wait for the
        socket (``start``'s poller) until then plus the slack at most, and send it if no other
        thread did meanwhile; return when it is sent (by anyone), the standing ended, or the
        socket has something to read."""
        poller = self._poller
        assert poller is not None
        while self._parked is not None:
            left = self.sent_at + self.every + self._slack - time.monotonic()
            if left <= 0:
                self.ride()
                return
            if poller.poll(left * 1000 + 1):
                return

    def done(self) -> None:
        """The Future completes (an answer that differs): no more repeats."""
        self.live = False
        if self.lock is not None:
            try:  # noqa: SIM105 - ended here, or by another thread meanwhile
                _TIMED.remove(self)
            except ValueError:
                pass

    def stop(self) -> InFlight | None:
        """No more repeats (the caller holds ``lock``): the repeat waiting for its time, if any,
        for the caller to complete."""
        parked, self._parked = self._parked, None
        self.done()
        return parked
