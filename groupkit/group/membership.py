"""A classic group member's record, and the moves every path of the machine shares.

``Membership`` holds what the member knows (coordinator, member id, generation, what it owns),
its timers and its requests in flight, and the moves the inputs, the response handlers
(``responses``) and the error reactions (``reactions``) all make: send a request, rejoin, lose
the coordinator, reset the generation, fail, finish a leave. Every state change goes through
``states.TRANSITIONS`` (``_go``). ``GroupMachine`` (``machine``) builds on it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import attrs

from groupkit.errors import GroupkitError
from groupkit.group import requests
from groupkit.group.backoff import Backoff, random_jitter
from groupkit.group.config import GroupConfig
from groupkit.group.outputs import (
    CommitFence,
    Coordinator,
    CoordinatorLost,
    Destination,
    Fatal,
    Leaving,
    Left,
    Lost,
    Output,
    Rebalancing,
    Revoked,
    Send,
)
from groupkit.group.protocol import GroupProtocol
from groupkit.group.requests import RequestKind
from groupkit.group.states import TERMINAL_STATES, MemberState, Trigger, next_state
from groupkit.protocol.messages.group import HeartbeatRequest
from groupkit.protocol.schema import Request

S = MemberState
T = Trigger


@attrs.frozen
class InFlight:
    """A request the member sent and waits for: its kind, and the identity it was sent with."""

    kind: RequestKind
    generation_id: int
    member_id: str
    closing: bool = False


@attrs.define
class Membership:
    """The record of one classic group member and the moves on it (see the module docstring).

    ``jitter`` is the random source of the retry back-off (``backoff.random_jitter`` by default).
    """

    config: GroupConfig
    protocol: GroupProtocol
    jitter: Callable[[], float] = random_jitter

    _state: MemberState = attrs.field(init=False, default=S.UNJOINED)
    _started: bool = attrs.field(init=False, default=False)
    _outputs: list[Output] = attrs.field(init=False, factory=list)
    _backoff: Backoff = attrs.field(init=False)
    _next_token: int = attrs.field(init=False, default=1)
    _inflight: dict[int, InFlight] = attrs.field(init=False, factory=dict)
    _main: int | None = attrs.field(init=False, default=None)
    _heartbeat: int | None = attrs.field(init=False, default=None)

    _coordinator: Coordinator | None = attrs.field(init=False, default=None)
    _member_id: str = attrs.field(init=False, default="")
    _generation_id: int = attrs.field(init=False, default=-1)
    _protocol_name: str | None = attrs.field(init=False, default=None)
    _leader_id: str | None = attrs.field(init=False, default=None)
    _offered: tuple[str, ...] = attrs.field(init=False, default=())
    _assignment: bytes | None = attrs.field(init=False, default=None)
    _owned: frozenset[Hashable] = attrs.field(init=False, factory=frozenset)
    _owned_protocol: str | None = attrs.field(init=False, default=None)
    _rejoin_needed: bool = attrs.field(init=False, default=False)
    _rejoin_reason: str = attrs.field(init=False, default="")
    _revoke_pending: bool = attrs.field(init=False, default=False)
    _failures: int = attrs.field(init=False, default=0)

    _retry_at: float | None = attrs.field(init=False, default=None)
    _request_deadline: float | None = attrs.field(init=False, default=None)
    _heartbeat_due: float = attrs.field(init=False, default=0.0)
    #: The last Heartbeat sent, sent again while the generation and member id stay: requests
    #: are frozen values, and the connection re-sends the same object's frame without encoding.
    #: With it, what ``_inflight`` records for each of its sends (frozen too, of the same
    #: generation and member id, so one serves them all).
    _beat: tuple[HeartbeatRequest, InFlight] | None = attrs.field(init=False, default=None)
    #: The last ``commit_fence()`` value, handed out again while it is still the member's.
    _fence: CommitFence | None = attrs.field(init=False, default=None)
    _session_deadline: float | None = attrs.field(init=False, default=None)
    _poll_deadline: float | None = attrs.field(init=False, default=None)

    def __attrs_post_init__(self) -> None:
        self._backoff = Backoff(
            self.config.retry_backoff_ms, self.config.retry_backoff_max_ms, self.jitter)

    # --- moves every path shares -----------------------------------------------------------

    def _reset_generation(self, reason: str) -> None:
        if self._owned:
            self._outputs.append(Lost(self._owned, reason))
        self._generation_id = -1
        self._owned = frozenset()
        self._owned_protocol = None
        self._assignment = None
        self._revoke_pending = False

    def _rejoin(self, now: float) -> None:
        """Rejoin now, giving up everything first if the current protocol is eager."""
        if self._state is S.REVOKING and self._revoke_pending:
            return
        if self._owned and not self.protocol.is_cooperative(self._owned_protocol or ""):
            self._outputs.append(Revoked(self._generation_id, self._owned))
            self._owned = frozenset()
            self._revoke_pending = True
            self._go(T.REVOKE_STARTED)
        elif self._revoke_pending:
            self._go(T.REVOKE_STARTED)
        else:
            self._send_join(now, self._rejoin_reason)

    def _coordinator_lost(self, now: float, reason: str, back_off: bool) -> None:
        if self._state in (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE):
            self._rejoin_needed = True
        if self._coordinator is not None:
            self._outputs.append(CoordinatorLost(reason))
        self._coordinator = None
        self._abandon()
        self._go(T.COORDINATOR_LOST)
        if back_off:
            self._back_off(now)
        else:
            self._retry_at = None

    def _delay_join(self, now: float) -> None:
        """Rejoin after a back-off, keeping the coordinator (it is busy, not gone)."""
        self._abandon()
        self._go(T.JOIN_DELAYED)
        self._back_off(now)

    def _back_off(self, now: float) -> None:
        self._failures += 1
        self._retry_at = now + self._backoff.delay(self._failures)

    def _fail(self, error: GroupkitError) -> None:
        if self._state in TERMINAL_STATES:
            return
        if self._owned:
            self._outputs.append(Lost(self._owned, f"the member stopped: {error}"))
        self._owned = frozenset()
        self._assignment = None
        self._revoke_pending = False
        self._abandon()
        self._go(T.FAILED)
        self._outputs.append(Fatal(error))

    def _finish_leave(self, reason: str) -> None:
        self._abandon()
        self._generation_id = -1
        self._member_id = ""
        self._go(T.LEAVE_FINISHED if self._state is S.LEAVING else T.STOPPED)
        self._outputs.append(Left(reason))

    def _abandon(self) -> None:
        """Forget the requests in flight to the coordinator (their answers will be ignored)."""
        for token in (self._main, self._heartbeat):
            if token is not None:
                self._inflight.pop(token, None)
        self._main = None
        self._heartbeat = None
        self._request_deadline = None

    # --- sending ---------------------------------------------------------------------------

    def _send_join(self, now: float, reason: str) -> None:
        protocols = list(self.protocol.join_protocols(self._owned, self._generation_id))
        self._offered = tuple(name for name, _ in protocols)
        self._rejoin_needed = False
        self._retry_at = None
        self._abandon()
        self._outputs.append(Rebalancing(reason))
        self._go(T.JOIN_SENT)
        timeout_ms = requests.join_timeout_ms(self.config)
        self._main = self._send(RequestKind.JOIN, requests.join_group(
            self.config, self.protocol.protocol_type, self._member_id, protocols, reason),
            timeout_ms)
        self._request_deadline = now + timeout_ms / 1000

    def _send_leave(self, reason: str, closing: bool) -> None:
        self._outputs.append(Leaving(reason))
        self._send(RequestKind.LEAVE, requests.leave_group(self.config, self._member_id, reason),
                   None, closing=closing)

    def _send(self, kind: RequestKind, request: Request, timeout_ms: int | None = None,
              destination: Destination = Destination.COORDINATOR, closing: bool = False) -> int:
        return self._send_recorded(InFlight(kind, self._generation_id, self._member_id, closing),
                                   request, timeout_ms, destination)

    def _send_recorded(self, inflight: InFlight, request: Request, timeout_ms: int | None = None,
                       destination: Destination = Destination.COORDINATOR,
                       heartbeat: bool = False) -> int:
        token = self._next_token
        self._next_token = token + 1
        self._inflight[token] = inflight
        # A Heartbeat's successful answer changes only the session: it may wait for the
        # runtime's next wakeup; a STABLE member's may stand (``Send.stands_every``).
        stands = self.config.heartbeat_interval_ms / 1000 \
            if heartbeat and self._state is S.STABLE else 0.0
        self._outputs.append(Send(token, request, destination, timeout_ms, heartbeat=heartbeat,
                                  answer_may_wait=heartbeat, stands_every=stands))
        return token

    def _go(self, trigger: Trigger) -> None:
        self._state = next_state(self._state, trigger)

