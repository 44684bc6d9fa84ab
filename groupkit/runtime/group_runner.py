"""The background thread that keeps one member in its group: its membership machine's only
driver, whichever protocol the machine speaks (``groupkit.group.member_machine``).

It sends the machine's requests (coordinator-bound ones on a connection of their own, so a
Heartbeat never waits behind a Fetch), feeds answers back, and sleeps on a Bell until the
machine's next deadline or a new input, so an idle member costs no CPU. It never runs user code
and never takes a lock the application holds: the application talks to it through an inbox
(``application_polled``, ``revocation_done``, ``request_rejoin``, ``leave``, ``commit_error``)
and reads facts (assigned, revoked, lost, left, fatal) from ``events()``.
"""

from __future__ import annotations

import collections
import enum
import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, TimeoutError as FutureTimeout
from functools import partial
from typing import TYPE_CHECKING, Any

import attrs

from groupkit.errors import (
    CommitFailedError,
    GroupkitError,
    IllegalStateError,
    RequestTimeoutError,
    error_for_code,
)
from groupkit.group import (
    Assigned,
    CommitFence,
    Coordinator,
    CoordinatorChanged,
    CoordinatorLost,
    Destination,
    Fatal,
    Output,
    RequestDecision,
    Send,
)
from groupkit.group.member_machine import MemberMachine
from groupkit.group.outputs import GenerationJoined, Leaving, Rebalancing
from groupkit.protocol.schema import Response
from groupkit.runtime.bell import Bell
from groupkit.runtime.connection import BrokerConnection
from groupkit.runtime.standing import Standing
from groupkit.runtime.standing_beat import StandingBeat, ticker

if TYPE_CHECKING:
    # The events are built only for hooks, and their module loads with the first one (as
    # the connections' do): a member without hooks never imports it.
    from groupkit.hooks import Event, Hook

log = logging.getLogger(__name__)

_Input = Callable[[float], None]

#: Connection purposes the runner asks ``connect`` for.
COORDINATOR = "coordinator"
HEARTBEAT = "heartbeat"


@attrs.define(eq=False)
class GroupRunner:
    """Runs ``machine`` (any membership protocol's) on a daemon thread.

    ``any_broker`` gives a connection for FindCoordinator; ``connect(coordinator, purpose)``
    gives a connection reserved for coordinator traffic, one for ``"coordinator"`` (join, sync,
    leave) and one for ``"heartbeat"``: a broker answers a connection's requests in order, so a
    Heartbeat never waits behind a SyncGroup the coordinator holds. Connections are pooled and
    closed by the caller; they reconnect by themselves, so after a coordinator change the
    runner just asks ``connect`` again.
    ``wakeup`` is called (on the runner thread) whenever an event for the application is
    queued, so a blocked ``poll`` can return. ``joining`` is called (on the runner thread, so
    it must not block) whenever a rebalance step begins (a JoinGroup goes out), e.g. to fetch
    the metadata the assignor needs while the coordinator holds the join.
    """

    machine: MemberMachine
    any_broker: Callable[[], BrokerConnection]
    connect: Callable[[Coordinator, str], BrokerConnection]
    hooks: Sequence[Hook] = ()
    wakeup: Callable[[], None] = lambda: None
    joining: Callable[[], None] = lambda: None
    clock: Callable[[], float] = time.monotonic

    #: Guards the inbox, the events and the fields the application's side sets; the runner
    #: thread sleeps on ``_bell`` (cheaper than a Condition for a thread waking a few times a
    #: second) and every input rings it.
    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)
    _bell: Bell = attrs.field(init=False, factory=Bell)
    _inbox: collections.deque[tuple[_Input, Future[Any] | None]] = attrs.field(
        init=False, factory=collections.deque)
    #: Successful Heartbeat answers (token, response, arrival time), which need not wake the
    #: runner: taken with the inbox at its next wakeup, due by ``_later_due`` at the latest.
    _later: collections.deque[tuple[int, Response, float]] = attrs.field(
        init=False, factory=collections.deque)
    _later_due: float = attrs.field(init=False, default=math.inf)
    #: The machine's ``heartbeat_due`` after the runner's last step (inf: None): a successful
    #: answer waits no later than this.
    _answer_due: float = attrs.field(init=False, default=math.inf)
    #: When the waiting runner wakes by itself (-inf while it runs: it looks at all inputs
    #: before it waits again).
    _wake_at: float = attrs.field(init=False, default=-math.inf)
    _events: collections.deque[Output] = attrs.field(init=False, factory=collections.deque)
    _thread: threading.Thread | None = attrs.field(init=False, default=None)
    _stopping: bool = attrs.field(init=False, default=False)
    _finished: threading.Event = attrs.field(init=False, factory=threading.Event)
    _deadline: float | None = attrs.field(init=False, default=None)
    _connections: dict[str, BrokerConnection] = attrs.field(init=False, factory=dict)
    _coordinator: Coordinator | None = attrs.field(init=False, default=None)
    _fence: CommitFence | None = attrs.field(init=False, default=None)
    _state: enum.Enum = attrs.field(init=False)
    #: Whether the member waits for the application's next poll to rejoin (read under the lock).
    _rejoins_on_poll: bool = attrs.field(init=False)
    #: When each request in flight went out, the request (for the hooks' API name), and
    #: whether it was a heartbeat.
    _sent_at: dict[int, tuple[float, object, bool]] = attrs.field(init=False, factory=dict)
    _rebalance_since: float | None = attrs.field(init=False, default=None)
    #: When the application last polled, until the runner hands it to the machine.
    _polled_at: float | None = attrs.field(init=False, default=None)
    #: The last heartbeat answer, when it changed nothing (set on the reader thread): the
    #: next heartbeat may stand on it (``standing_beat``).
    _quiet: Response | None = attrs.field(init=False, default=None)
    #: The heartbeat standing on its connection (or the last one, until its token is done).
    _beat: StandingBeat | None = attrs.field(init=False, default=None)

    def __attrs_post_init__(self) -> None:
        self._state = self.machine.state
        self._rejoins_on_poll = self.machine.rejoins_on_poll

    # --- the application's side (any thread) ---------------------------------------------------

    def start(self) -> None:
        """Start the thread; the member looks for its coordinator and joins."""
        if self._thread is not None:
            raise IllegalStateError("GroupRunner.start() was called twice; call it once")
        self._post(self.machine.start)
        self._thread = threading.Thread(
            target=self._run, daemon=True, name=f"groupkit-group-{self.machine.config.group_id}")
        self._thread.start()

    def events(self) -> list[Output]:
        """Take the facts queued for the application, oldest first."""
        if not self._events:
            return []  # an event queued meanwhile also calls ``wakeup``: the poll looks again
        with self._lock:
            out = list(self._events)
            self._events.clear()
        return out

    def requeue(self, events: Sequence[Output]) -> None:
        """Put back events taken by ``events()`` but not handled, ahead of newer ones."""
        with self._lock:
            self._events.extendleft(reversed(events))

    @property
    def started(self) -> bool:
        """Whether ``start()`` was called (a classic pattern subscription starts the runner
        once its first match is in)."""
        return self._thread is not None

    @property
    def state(self) -> enum.Enum:
        """The member's state as of the runner's last step (its machine's own state enum)."""
        return self._state

    @property
    def coordinator(self) -> Coordinator | None:
        """The coordinator the member talks to now, if known."""
        return self._coordinator

    @property
    def finished(self) -> bool:
        """Whether the member reached a terminal state (closed or fatal)."""
        return self._finished.is_set()

    def commit_fence(self) -> CommitFence:
        """The generation/member identity for an OffsetCommit now, or CommitFailedError."""
        fence = self._fence
        if fence is None:
            raise CommitFailedError(
                f"cannot commit while the member is {self._state.name}: the group is"
                " rebalancing; commit the records of the next assignment instead")
        return fence

    def application_polled(self) -> None:
        """The application called poll: restart the poll interval (and rejoin if it expired).

        Like Java's ``AbstractCoordinator.pollHeartbeat``, which records the poll and wakes the
        heartbeat thread only when there is something to do: the time is noted, and the
        runner gives it to the machine at its next step, before any timer fires (so a poll
        is never mistaken for an expired interval). Only a member that left when its poll
        interval expired (``rejoins_on_poll``: the poll is what rejoins) wakes the runner at
        once, so an application polling a joined member often costs the runner no wakeup.
        """
        beat = self._beat
        if beat is not None:
            beat.standing.ride()  # awake anyway: a heartbeat whose time has come goes now
        with self._lock:
            if self._stopping:
                return
            self._polled_at = self.clock()
            if self._rejoins_on_poll:
                self._bell.ring()

    def revocation_done(self) -> None:
        """The application has given up what a ``Revoked`` listed."""
        self._post(self.machine.revocation_done)

    def assignment_applied(self) -> None:
        """The application has taken what an ``Assigned`` gave (its listener ran)."""
        self._post(self.machine.assignment_applied)

    def request_rejoin(self, reason: str) -> None:
        """Start a rebalance (e.g. the second round of a cooperative one)."""
        self._post(lambda now: self.machine.request_rejoin(now, reason))

    def commit_error(self, fence: CommitFence, code: int, attempt: int,
                     timeout: float) -> RequestDecision:
        """Let the machine decide about a failed commit (it may rejoin); waits for its answer."""
        future: Future[RequestDecision] = Future()

        def decide(now: float) -> None:
            future.set_result(self.machine.on_commit_error(fence, code, now, attempt))

        self._post(decide, future)
        return _result(future, timeout)

    def offset_fetch_error(self, code: int, attempt: int, timeout: float) -> RequestDecision:
        """Let the machine decide about a failed OffsetFetch; waits for its answer."""
        future: Future[RequestDecision] = Future()

        def decide(now: float) -> None:
            future.set_result(self.machine.on_offset_fetch_error(code, now, attempt))

        self._post(decide, future)
        return _result(future, timeout)

    def leave(self, timeout: float, reason: str = "the consumer is closing") -> bool:
        """Leave the group and stop the thread; True when done within ``timeout`` seconds."""
        if self._thread is None:
            return True
        deadline = time.monotonic() + timeout
        self._post(lambda now: self.machine.leave(now, reason))
        done = self._finished.wait(timeout)
        # One timeout for both: the thread may be stuck connecting (it is a daemon).
        self.stop(max(0.0, deadline - time.monotonic()))
        return done

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread without leaving the group."""
        with self._lock:
            self._stopping = True
            self._bell.ring()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _post(self, item: _Input, future: Future[Any] | None = None) -> None:
        """Queue ``item`` for the runner thread; ``future`` (if any) fails if it never runs."""
        with self._lock:
            if self._stopping:
                if future is not None:
                    future.set_exception(IllegalStateError(
                        "the group runner has stopped; the consumer is closed"))
                return
            self._inbox.append((item, future))
            self._bell.ring()

    # --- the runner thread ---------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while True:
                with self._lock:
                    # ``_rejoins_on_poll`` is read under the lock here and in
                    # application_polled, so a poll noted as the member leaves is never left
                    # waiting.
                    while not self._inbox and not self._stopping and not (
                            self._polled_at is not None and self._rejoins_on_poll):
                        wake_at = min(math.inf if self._deadline is None else self._deadline,
                                      self._later_due)
                        timeout = wake_at - self.clock()
                        if timeout <= 0:
                            break
                        self._wake_at = wake_at
                        self._lock.release()
                        try:
                            rung = self._bell.wait(None if wake_at == math.inf else timeout)
                        finally:
                            self._lock.acquire()
                        if not rung:
                            break  # the deadline came and nothing rang: step
                    self._wake_at = -math.inf
                    if self._stopping:
                        break
                    later = list(self._later)
                    self._later.clear()
                    self._later_due = math.inf
                    items = list(self._inbox)
                    self._inbox.clear()
                    polled, self._polled_at = self._polled_at, None
                now = self.clock()
                beat = self._beat
                if beat is not None:
                    beat.fold(self.machine)  # before any answer or timer: the session moves
                for token, response, arrived in later:
                    self._respond(token, response, arrived)
                for item, future in items:
                    if future is None:
                        item(now)
                        continue
                    try:
                        item(now)
                    except Exception as exc:
                        future.set_exception(exc)
                if polled is not None:
                    self.machine.application_polled(polled)
                self._step(self.clock())
        except Exception as exc:
            log.exception("the group runner of %s stopped on an internal error",
                          self.machine.config.group_id)
            error = exc if isinstance(exc, GroupkitError) else IllegalStateError(
                f"the group runner stopped on an internal error: {exc!r}")
            self._queue(Fatal(error))
            self._finished.set()
        finally:
            with self._lock:
                self._stopping = True
                pending = list(self._inbox)
                self._inbox.clear()
            for _, future in pending:
                if future is not None:
                    future.set_exception(IllegalStateError(
                        "the group runner stopped before answering; the consumer is closed"))
            self._connections = {}
            self._end_beat()  # no heartbeat outlives the runner

    def _step(self, now: float) -> None:
        # One poll: carrying out its outputs gives the machine no input (failures to send are
        # posted to the inbox), and should anything be due at once, ``next_deadline`` says so
        # and ``_run`` steps again without waiting.
        for out in self.machine.poll(now):
            self._carry_out(out, now)
        machine = self.machine
        state = machine.state
        if state is not self._state:
            if self.hooks:
                from groupkit.hooks import MemberStateChanged

                self._emit(MemberStateChanged(machine.config.group_id, self._state.name,
                                              state.name))
            with self._lock:
                self._state = state
                self._rejoins_on_poll = machine.rejoins_on_poll
        try:
            self._fence = machine.commit_fence()
        except CommitFailedError:
            self._fence = None
        if machine.finished:
            self._finished.set()
        # A standing heartbeat goes on only while the machine is as it was (``holds``).
        beat = self._beat
        standing = False
        if beat is not None and beat.standing.live:
            standing = beat.holds(machine)
            if not standing:
                beat.standing.end()
        self._deadline = self.machine.next_deadline()
        due = self.machine.heartbeat_due
        if due is not None and now < due and not standing \
                and (self._deadline is None or due < self._deadline):
            # With a Heartbeat in flight the machine waits only for its answer; the runner
            # wakes when the next one is due anyway, to read a successful answer then
            # (see ``_answered``) and send on time.
            self._deadline = due
        # An answer waiting, or yet to come, is read by the machine's next heartbeat at the
        # latest, also when the machine brought that forward (a subscription change). Stored
        # before ``_later`` is looked at: an answer queued after the look reads the new value.
        self._answer_due = math.inf if due is None else due
        if self._later:
            with self._lock:
                self._later_due = min(self._later_due, self._answer_due)

    def _carry_out(self, out: Output, now: float) -> None:
        if isinstance(out, Send):
            self._send(out, now)
        elif isinstance(out, CoordinatorChanged):
            self._connections = {}
            self._end_beat()
            self._coordinator = Coordinator(out.node_id, out.host, out.port)
            self._info("discovered group coordinator %s:%d (node %d)", out.host, out.port,
                       out.node_id)
        elif isinstance(out, CoordinatorLost):
            self._connections = {}
            self._end_beat()
            self._coordinator = None
            self._info("group coordinator lost: %s; rediscovering it", out.reason)
        elif isinstance(out, Rebalancing):
            if self._rebalance_since is None:
                self._rebalance_since = now
                if self.hooks:
                    from groupkit.hooks import RebalanceStarted

                    self._emit(RebalanceStarted(self.machine.config.group_id, out.reason))
            self._info("(re-)joining group: %s", out.reason)
            try:
                self.joining()
            except Exception:
                log.exception("the joining callback failed")
        elif isinstance(out, GenerationJoined):
            if self.hooks:
                from groupkit.hooks import Joined

                self._emit(Joined(self.machine.config.group_id, out.member_id,
                                  out.generation_id, out.protocol_name, out.leader))
            self._info("joined %s", out.description)
        elif isinstance(out, Leaving):
            self._info("leaving group: %s", out.reason)
        else:
            if isinstance(out, Assigned):
                self._info("synced generation %d: %d partition(s) assigned (%s)",
                           out.generation_id, len(out.units), out.protocol_name)
                if self.hooks:
                    from groupkit.hooks import Synced

                    self._emit(Synced(self.machine.config.group_id, out.generation_id,
                                      len(out.units)))
                if self._rebalance_since is not None:
                    if self.hooks:
                        from groupkit.hooks import RebalanceFinished

                        self._emit(RebalanceFinished(self.machine.config.group_id,
                                                     out.generation_id,
                                                     now - self._rebalance_since))
                    self._rebalance_since = None
            self._queue(out)

    def _send(self, out: Send, now: float) -> None:
        request = out.request
        if out.heartbeat and self.hooks:
            from groupkit.hooks import HeartbeatSent

            self._emit(HeartbeatSent(self.machine.config.group_id, self.machine.generation_id))
        try:
            conn = self._route(out.destination, HEARTBEAT if out.heartbeat else COORDINATOR)
        except GroupkitError as exc:
            self._post(partial(self.machine.on_request_failed, out.token, exc))
            return
        self._sent_at[out.token] = (now, request, out.heartbeat)
        due = self.machine.heartbeat_due if out.answer_may_wait else None
        standing = None
        if due is not None:
            self._answer_due = due  # before the answer can come (see ``_step``)
            if out.stands_every and self._quiet is not None:
                standing = self._stand(out, due)
        conn.send(request, timeout_ms=out.timeout_ms, standing=standing,
                  callback=partial(self._answered, out.token, due, out.quiet_if, standing))

    def _stand(self, out: Send, due: float) -> Standing:
        """A settled member's heartbeat, its last answer quiet: it stands on its connection
        (``standing_beat``), if that connection kept that very answer."""
        standing = Standing(every=out.stands_every, answer=self._quiet)
        machine = self.machine
        if self.hooks:
            standing.tick = ticker(self.hooks, machine.config.group_id, _api_name(out.request),
                                   machine.generation_id, standing)
        self._beat = StandingBeat(out.token, standing, machine.state, due)
        return standing

    def _end_beat(self) -> None:
        """End the standing heartbeat, if any (on the runner thread, without its lock): the
        answer in flight, or the one waiting for its next send at once, comes as usual."""
        beat = self._beat
        if beat is not None and beat.standing.live:
            beat.standing.end()

    def _route(self, destination: Destination, purpose: str) -> BrokerConnection:
        if destination is Destination.ANY_BROKER:
            return self.any_broker()
        conn = self._connections.get(purpose)
        if conn is None:
            if self._coordinator is None:
                raise IllegalStateError("no coordinator is known for a coordinator request")
            conn = self._connections[purpose] = self.connect(self._coordinator, purpose)
        return conn

    def _answered(self, token: int, due: float | None,
                  quiet_if: Callable[[Response], bool] | None, standing: Standing | None,
                  future: Future[Any]) -> None:
        """Runs on a connection's reader thread: hand the outcome to the runner thread.

        A successful answer to a Heartbeat only moves the session deadline on and lets the
        next Heartbeat go at ``due``: it waits for the runner's next wakeup, due by then (the
        Java heartbeat thread likewise handles answers in its own loop), so a heartbeat
        costs the runner one wakeup, not two. It still carries the time it arrived. A
        consumer-protocol heartbeat's answer waits only if ``quiet_if`` finds it changes
        nothing, and no later than the machine now wants its next heartbeat (``_answer_due``:
        a subscription change brings that forward). A standing heartbeat's answer is the one
        that ended it: the unchanged one kept for the next send came when the standing says.
        A quiet answer is kept (``_quiet``): the next heartbeat may stand on it.
        """
        try:
            # One look at the done future (``exception()`` and then ``result()`` would take
            # its lock twice on every answer).
            response = future.result()
        except BaseException as exc:
            error = exc
            if due is not None:
                self._quiet = None
            self._post(lambda now: self._failed(token, error, now))
            return
        if due is None or response.error_code or (quiet_if is not None
                                                   and not quiet_if(response)):
            if due is not None:
                self._quiet = None
            self._post(lambda now: self._respond(token, response, now))
            return
        self._quiet = response
        arrived = self.clock() if standing is None or response is not standing.answer \
            else standing.answered_at
        with self._lock:
            if self._stopping:
                return
            due = min(due, self._answer_due)
            self._later.append((token, response, arrived))
            self._later_due = min(self._later_due, due)
            if due < self._wake_at:
                self._bell.ring()

    def _failed(self, token: int, error: BaseException, now: float) -> None:
        sent = self._sent_at.pop(token, None)
        if self._beat is not None and self._beat.token == token:
            self._beat = None
        self.machine.on_request_failed(token, error, now)
        if sent is not None and self.hooks:
            from groupkit.hooks import GroupRequestDone

            self._emit(GroupRequestDone(self.machine.config.group_id, _api_name(sent[1]),
                                        type(error).__name__, now - sent[0]))

    def _respond(self, token: int, response: Response, now: float) -> None:
        sent, _, heartbeat = self._sent_at.pop(token, (now, None, False))
        beat = self._beat
        if beat is not None and beat.token == token:
            sent = beat.standing.sent_at or sent  # its last repeat's, if it stood
            self._beat = None
        self.machine.on_response(token, response, now)
        if self.hooks:
            from groupkit.hooks import GroupRequestDone, HeartbeatAnswered

            group_id = self.machine.config.group_id
            code = getattr(response, "error_code", 0)
            self._emit(GroupRequestDone(group_id, _api_name(response),
                                        error_for_code(code).name if code else "", now - sent))
            if heartbeat:
                self._emit(HeartbeatAnswered(group_id, code, now - sent))

    def _queue(self, out: Output) -> None:
        with self._lock:
            self._events.append(out)
        try:
            self.wakeup()
        except Exception:
            log.exception("the wakeup callback failed")

    def _emit(self, event: Event) -> None:
        from groupkit.hooks import emit

        emit(self.hooks, event)

    def _info(self, message: str, *args: object) -> None:
        """An INFO line of the member's life (the ones Java's AbstractCoordinator logs),
        naming the group and the member id so an operator can follow one member."""
        if log.isEnabledFor(logging.INFO):
            log.info("[group %s, member %s] " + message, self.machine.config.group_id,
                     self.machine.member_id or "(none yet)", *args)


def _api_name(message: object) -> str:
    """The API a request or response belongs to, as the hooks name it ("Heartbeat")."""
    return type(message).__name__.removesuffix("Request").removesuffix("Response")


def _result(future: Future[RequestDecision], timeout: float) -> RequestDecision:
    try:
        return future.result(timeout)
    except FutureTimeout:
        raise RequestTimeoutError(
            f"the group runner did not answer within {timeout:.1f} s; it is busy reconnecting"
            " to the coordinator: retry the commit") from None
