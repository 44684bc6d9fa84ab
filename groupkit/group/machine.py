"""The group membership state machine: sans-IO, driven by responses, failures and ``now``.

The runtime feeds it decoded responses (``on_response``), request failures
(``on_request_failed``) and the application's progress (``application_polled``,
``revocation_done``), calls ``poll(now)`` after each input and when ``next_deadline()`` comes,
and carries out what ``poll`` returns: requests to send and facts for the application. The
state changes themselves are in ``states.TRANSITIONS``; error codes are read only through
``error_actions.action_for``, and what the member does about each action only through
``states.REACTIONS`` (in ``_react``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable

import attrs

from groupkit.errors import (
    CommitFailedError,
    ErrorCode,
    GroupkitError,
    IllegalStateError,
    error_for_code,
)
from groupkit.group import requests
from groupkit.group.backoff import Backoff
from groupkit.group.config import GroupConfig
from groupkit.group.error_actions import Action, Api, action_for
from groupkit.group.outputs import (
    Assigned,
    CommitFence,
    Coordinator,
    CoordinatorChanged,
    CoordinatorLost,
    Destination,
    Fatal,
    Left,
    Lost,
    Output,
    RequestDecision,
    Revoked,
    Send,
)
from groupkit.group.protocol import GroupMember, GroupProtocol
from groupkit.group.requests import RESPONSE_TYPES, RequestKind
from groupkit.group.states import (
    ACTIVE_STATES,
    HEARTBEAT_STATES,
    TERMINAL_STATES,
    MemberState,
    Reaction,
    Trigger,
    next_state,
    reaction_for,
)
from groupkit.protocol.messages.find_coordinator import FindCoordinatorResponse
from groupkit.protocol.messages.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupResponse,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from groupkit.protocol.schema import Request, Response

S = MemberState
T = Trigger
R = Reaction

@attrs.frozen
class _Failure:
    """A request the broker answered with error ``code``, and what a reaction may need of it."""

    api: Api
    code: int
    #: The broker's error_message, if it sent one.
    message: str | None = None
    #: The member id a JoinGroup answer handed out (MEMBER_ID_REQUIRED).
    member_id: str = ""
    #: The runtime's attempt count of an OffsetCommit/OffsetFetch (the back-off grows with it).
    attempt: int = 1
    #: Whether an OffsetCommit was sent in the member's current generation, outside a rebalance.
    fence_current: bool = False


#: How the reasons in outputs and logs name each API.
_API_NAMES = {
    Api.FIND_COORDINATOR: "FindCoordinator",
    Api.JOIN_GROUP: "JoinGroup",
    Api.SYNC_GROUP: "SyncGroup",
    Api.HEARTBEAT: "Heartbeat",
    Api.OFFSET_COMMIT: "OffsetCommit",
    Api.OFFSET_FETCH: "OffsetFetch",
}


@attrs.frozen
class _InFlight:
    kind: RequestKind
    generation_id: int
    member_id: str
    closing: bool = False


@attrs.define
class GroupMachine:
    """One member of one group. Not thread-safe: one runtime thread drives it.

    ``jitter`` is the random source of the retry back-off (``random.random`` by default).
    """

    config: GroupConfig
    protocol: GroupProtocol
    jitter: Callable[[], float] = random.random

    _state: MemberState = attrs.field(init=False, default=S.UNJOINED)
    _started: bool = attrs.field(init=False, default=False)
    _outputs: list[Output] = attrs.field(init=False, factory=list)
    _backoff: Backoff = attrs.field(init=False)
    _next_token: int = attrs.field(init=False, default=1)
    _inflight: dict[int, _InFlight] = attrs.field(init=False, factory=dict)
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
    _beat: tuple[HeartbeatRequest, _InFlight] | None = attrs.field(init=False, default=None)
    #: The last ``commit_fence()`` value, handed out again while it is still the member's.
    _fence: CommitFence | None = attrs.field(init=False, default=None)
    _session_deadline: float | None = attrs.field(init=False, default=None)
    _poll_deadline: float | None = attrs.field(init=False, default=None)

    def __attrs_post_init__(self) -> None:
        self._backoff = Backoff(
            self.config.retry_backoff_ms, self.config.retry_backoff_max_ms, self.jitter)

    # --- what the runtime may read -------------------------------------------------------------

    @property
    def state(self) -> MemberState:
        """Where the member stands now."""
        return self._state

    @property
    def coordinator(self) -> Coordinator | None:
        """The coordinator in use, or None while it is being looked up."""
        return self._coordinator

    @property
    def member_id(self) -> str:
        """The id the coordinator gave this member ("" before it has one)."""
        return self._member_id

    @property
    def generation_id(self) -> int:
        """The generation joined last (-1 when there is none)."""
        return self._generation_id

    @property
    def protocol_name(self) -> str | None:
        """The protocol the group chose at the last join (e.g. an assignor name)."""
        return self._protocol_name

    @property
    def is_leader(self) -> bool:
        """Whether this member leads the current generation (it runs the assignor)."""
        return bool(self._member_id) and self._leader_id == self._member_id

    @property
    def assignment(self) -> bytes | None:
        """This member's assignment bytes for the current generation, if it has one."""
        return self._assignment

    @property
    def owned(self) -> frozenset[Hashable]:
        """The units this member holds now (empty while revoking or after a loss)."""
        return self._owned

    @property
    def heartbeat_due(self) -> float | None:
        """When the next Heartbeat goes out once the one in flight (if any) is answered; None
        when the member does not heartbeat."""
        return self._heartbeat_due if self._state in HEARTBEAT_STATES else None

    def commit_fence(self) -> CommitFence:
        """The identity to put on an OffsetCommit now.

        Raises ``CommitFailedError`` when the coordinator would refuse the commit, without a
        round trip. A member rejoining while it keeps units (cooperative) may commit them: its
        JoinGroup is unanswered, so its generation is still the group's, and the coordinator
        accepts commits in PreparingRebalance (KIP-429). Once the JoinGroup is answered, the
        coordinator refuses commits until SyncGroup completes (REBALANCE_IN_PROGRESS).

        A member that lost its coordinator keeps its generation, as the Java client does (it
        marks the coordinator unknown without resetting the generation): the commit waits for
        the coordinator within its own deadline and the coordinator fences it if it is stale.
        """
        st = self._state
        if (st is S.STABLE or st is S.REVOKING or st is S.COORDINATOR_UNKNOWN
                or (st is S.PREPARING_REBALANCE and self._owned)) and self._generation_id >= 0:
            # The same value until the generation or member id changes: the runner asks after
            # every step, and an idle member's step should not build one each time.
            fence = self._fence
            if fence is None or fence.generation_id != self._generation_id \
                    or fence.member_id != self._member_id:
                fence = self._fence = CommitFence(self._generation_id, self._member_id,
                                                  self.config.group_instance_id)
            return fence
        if self._generation_id < 0 and st in (S.UNJOINED, S.COORDINATOR_UNKNOWN):
            why = "it is not a member of the group yet (or any more)"
        else:
            why = "the group is rebalancing"
        raise CommitFailedError(
            f"cannot commit while the member is {st.name}: {why}; commit the"
            " records of the next assignment instead")

    # --- inputs --------------------------------------------------------------------------------

    def start(self, now: float) -> None:
        """Begin: find the coordinator and join. The poll interval starts counting now."""
        if self._started:
            raise IllegalStateError("GroupMachine.start() was called twice; call it once")
        self._started = True
        self._poll_deadline = now + self.config.max_poll_interval_ms / 1000
        self._go(T.STARTED)
        self._drive(now)

    def poll(self, now: float) -> list[Output]:
        """Fire the timers due at ``now``, send what is due, and return every pending output."""
        self._fire_timers(now)
        self._drive(now)
        out, self._outputs = self._outputs, []
        return out

    def next_deadline(self) -> float | None:
        """When ``poll`` must next run if no input arrives (``None``: only an input can help).

        Outputs not yet collected make it ``-inf``: call ``poll`` now.
        """
        if self._outputs:
            return float("-inf")
        # The earliest of the timers that run, kept in a local (no list and min(): an idle
        # member's runner asks after every step).
        st = self._state
        first = self._poll_deadline if st in ACTIVE_STATES else None
        at = self._retry_at
        if at is not None and self._main is None \
                and (st is S.COORDINATOR_UNKNOWN or st is S.PREPARING_REBALANCE) \
                and (first is None or at < first):
            first = at
        at = self._request_deadline
        if at is not None and self._main is not None and (first is None or at < first):
            first = at
        if st in HEARTBEAT_STATES:
            at = self._heartbeat_due
            if self._heartbeat is None and (first is None or at < first):
                first = at
            at = self._session_deadline
            if at is not None and (first is None or at < first):
                first = at
        return first

    def on_response(self, token: int, response: Response, now: float) -> None:
        """A response arrived for ``token``; answers to abandoned requests are ignored."""
        req = self._inflight.pop(token, None)
        if req is None:
            return
        expected = RESPONSE_TYPES[req.kind]
        if not isinstance(response, expected):
            raise IllegalStateError(
                f"request {token} was a {req.kind.value}, but the runtime passed a"
                f" {type(response).__name__}; pass the response decoded for that request")
        if token == self._main:
            self._main = None
            self._request_deadline = None
        elif token == self._heartbeat:
            self._heartbeat = None
        # The check above ties each response type to one request kind. The most frequent
        # answer, a Heartbeat's, is looked for first.
        if isinstance(response, HeartbeatResponse):
            self._on_heartbeat(req, response, now)
        elif isinstance(response, FindCoordinatorResponse):
            self._on_find(response, now)
        elif isinstance(response, JoinGroupResponse):
            self._on_join(response, now)
        elif isinstance(response, SyncGroupResponse):
            self._on_sync(response, now)
        elif req.closing and self._state is S.LEAVING:
            # Whatever its error code, the answer completes the leave: the member has already
            # given up its generation (the Java client likewise only logs a failed LeaveGroup).
            self._finish_leave("left the group on close")
        self._drive(now)

    def on_request_failed(self, token: int, error: BaseException, now: float) -> None:
        """The request for ``token`` got no answer (connection lost, timed out)."""
        req = self._inflight.pop(token, None)
        if req is None:
            return
        if token == self._main:
            self._main = None
            self._request_deadline = None
        elif token == self._heartbeat:
            self._heartbeat = None
        if req.kind is RequestKind.FIND:
            self._back_off(now)
        elif req.kind is RequestKind.LEAVE:
            if req.closing and self._state is S.LEAVING:
                self._finish_leave(f"LeaveGroup failed ({error}); the session will expire")
        else:
            self._coordinator_lost(now, f"{req.kind.value} failed: {error}", back_off=True)
        self._drive(now)

    def application_polled(self, now: float) -> None:
        """The application asked for records: restart the poll interval, rejoin if it expired."""
        if self._state in TERMINAL_STATES or not self._started:
            return
        self._poll_deadline = now + self.config.max_poll_interval_ms / 1000
        if self._state is S.UNJOINED:
            if self._coordinator is None:
                self._go(T.STARTED)
            else:
                self._send_join(now, "rejoining after the poll interval expired")
        self._drive(now)

    def request_rejoin(self, now: float, reason: str) -> None:
        """Ask for a rebalance (e.g. after a cooperative revoke).

        From STABLE the JoinGroup goes out at once (after a revoke for eager protocols); during
        a rebalance the member keeps heartbeating and rejoins once the current one completes.
        """
        if self._state not in ACTIVE_STATES:
            return
        self._rejoin_needed = True
        self._rejoin_reason = reason
        if self._state is S.STABLE:
            self._rejoin(now)
        self._drive(now)

    def revocation_done(self, now: float) -> None:
        """The application gave up what ``Revoked`` listed; JoinGroup may go out now."""
        if not self._revoke_pending:
            return
        self._revoke_pending = False
        if self._state is S.REVOKING:
            self._send_join(now, self._rejoin_reason)
        self._drive(now)

    def leave(self, now: float, reason: str = "the member is closing") -> None:
        """Close: leave the group (static members only if ``leave_group_on_close``).

        The runtime revokes (and commits) before calling this; no ``Revoked`` follows.
        """
        if self._state in TERMINAL_STATES or self._state is S.LEAVING:
            return
        send = (self._coordinator is not None and bool(self._member_id)
                and self._state in (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.STABLE,
                                    S.REVOKING)
                and (not self.config.is_static or self.config.leave_group_on_close))
        self._abandon()
        self._owned = frozenset()
        self._assignment = None
        self._revoke_pending = False
        if send:
            self._send_leave(reason, closing=True)
            self._go(T.LEAVE_SENT)
        else:
            self._finish_leave(reason)

    def on_commit_error(self, fence: CommitFence, code: int, now: float,
                        attempt: int = 1) -> RequestDecision:
        """Decide about an OffsetCommit that failed with ``code`` (sent with ``fence``).

        Membership errors refuse the commit with ``CommitFailedError`` and, unless the member
        has already moved past ``fence``'s generation, reset or rejoin as the code says. While
        a JoinGroup or SyncGroup is under way its answer settles the membership instead: the
        group may have moved to the next generation before this member heard of it.
        """
        current = (fence.generation_id == self._generation_id
                   and fence.member_id == self._member_id
                   and self._state in ACTIVE_STATES
                   and self._state not in (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE))
        decision = self._react(_Failure(Api.OFFSET_COMMIT, code, attempt=attempt,
                                        fence_current=current), now)
        self._drive(now)
        return decision

    def on_offset_fetch_error(self, code: int, now: float, attempt: int = 1) -> RequestDecision:
        """Decide about an OffsetFetch that failed with ``code``."""
        decision = self._react(_Failure(Api.OFFSET_FETCH, code, attempt=attempt), now)
        self._drive(now)
        return decision

    # --- response handlers ---------------------------------------------------------------------

    def _on_find(self, resp: FindCoordinatorResponse, now: float) -> None:
        code, node_id, host, port = resp.error_code, resp.node_id, resp.host, resp.port
        message = resp.error_message
        if resp.coordinators:
            code = ErrorCode.COORDINATOR_NOT_AVAILABLE
            for entry in resp.coordinators:
                if entry.key == self.config.group_id:
                    code, node_id, host, port, message = (
                        entry.error_code, entry.node_id, entry.host, entry.port,
                        entry.error_message)
        if not code and not host:
            # a v4+ answer with no entry, or one without an address: not usable yet
            code = ErrorCode.COORDINATOR_NOT_AVAILABLE
        if code:
            self._react(_Failure(Api.FIND_COORDINATOR, code, message=message or None), now)
            return
        self._failures = 0
        self._retry_at = None
        self._coordinator = Coordinator(node_id, host, port)
        self._outputs.append(CoordinatorChanged(node_id, host, port))
        self._session_deadline = now + self.config.session_timeout_ms / 1000
        self._heartbeat_due = now
        if self._revoke_pending or self._rejoin_needed or self._generation_id < 0 \
                or self._assignment is None:
            self._rejoin(now)
        else:
            self._go(T.HEARTBEAT_RESUMED)

    def _on_join(self, resp: JoinGroupResponse, now: float) -> None:
        code = resp.error_code
        if code:
            self._react(_Failure(Api.JOIN_GROUP, code, member_id=resp.member_id), now)
            return
        if (resp.protocol_type is not None and resp.protocol_type != self.protocol.protocol_type) \
                or resp.protocol_name not in self._offered:
            self._fail(error_for_code(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)(
                f"the coordinator chose {resp.protocol_type!r}/{resp.protocol_name!r}, which this"
                f" member did not offer ({self.protocol.protocol_type!r}/{list(self._offered)})"))
            return
        self._failures = 0
        self._member_id = resp.member_id
        self._generation_id = resp.generation_id
        self._protocol_name = resp.protocol_name
        self._leader_id = resp.leader
        assignments: list[SyncGroupRequestAssignment] = []
        if resp.leader == resp.member_id and not resp.skip_assignment:
            members = [GroupMember(m.member_id, m.group_instance_id, m.metadata)
                       for m in resp.members]
            try:
                result = self.protocol.assign(resp.protocol_name, members)
                assignments = requests.leader_assignments(members, result)
            except GroupkitError as exc:
                self._fail(exc)
                return
        self._go(T.JOINED)
        self._session_deadline = now + self.config.session_timeout_ms / 1000
        self._heartbeat_due = now + self.config.heartbeat_interval_ms / 1000
        timeout_ms = requests.join_timeout_ms(self.config)
        self._main = self._send(RequestKind.SYNC, requests.sync_group(
            self.config, self._generation_id, self._member_id, self.protocol.protocol_type,
            self._protocol_name, assignments), timeout_ms)
        self._request_deadline = now + timeout_ms / 1000

    def _on_sync(self, resp: SyncGroupResponse, now: float) -> None:
        code = resp.error_code
        if code:
            self._react(_Failure(Api.SYNC_GROUP, code), now)
            return
        name = self._protocol_name or ""
        if (resp.protocol_type is not None and resp.protocol_type != self.protocol.protocol_type) \
                or (resp.protocol_name is not None and resp.protocol_name != name):
            self._fail(error_for_code(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)(
                f"SyncGroup answered for {resp.protocol_type!r}/{resp.protocol_name!r}, but the"
                f" group joined with {self.protocol.protocol_type!r}/{name!r}"))
            return
        try:
            units = frozenset(self.protocol.on_assignment(name, resp.assignment,
                                                          self._generation_id))
        except GroupkitError as exc:
            self._fail(exc)
            return
        added, revoked = units - self._owned, self._owned - units
        if revoked and not self.protocol.is_cooperative(name):
            # The member kept these through the join because its last generation was
            # cooperative, but the group now chose an eager assignor (a member that only
            # speaks range joined), whose leader gave them to others in this same generation.
            # They are lost, not revoked: a revoke would commit for partitions another member
            # already owns in this generation. Java and librdkafka never meet this (one
            # protocol for all configured assignors); groupkit's default list mixes both.
            self._outputs.append(Lost(revoked, f"the group switched to the eager {name!r}"
                                               " assignor, which gave them to other members"))
            revoked = frozenset()
        self._owned, self._owned_protocol, self._assignment = units, name, resp.assignment
        self._failures = 0
        self._go(T.SYNCED)
        self._session_deadline = now + self.config.session_timeout_ms / 1000
        self._outputs.append(Assigned(
            generation_id=self._generation_id, member_id=self._member_id, protocol_name=name,
            assignment=resp.assignment, units=units, added=added, revoked=revoked))
        if self._rejoin_needed:
            self._rejoin(now)

    def _on_heartbeat(self, req: _InFlight, resp: HeartbeatResponse, now: float) -> None:
        if req.generation_id != self._generation_id or req.member_id != self._member_id:
            return
        code = resp.error_code
        if not code:
            self._failures = 0
            self._session_deadline = now + self.config.session_timeout_ms / 1000
            return
        self._react(_Failure(Api.HEARTBEAT, code), now)

    # --- reactions to error codes --------------------------------------------------------------

    def _react(self, failure: _Failure, now: float) -> RequestDecision:
        """Do what ``states.REACTIONS`` says about ``failure``; the decision is what the runtime
        does with an OffsetCommit/OffsetFetch (group requests are retried by the machine)."""
        action = action_for(failure.api, failure.code)
        reaction = reaction_for(failure.api, action)
        error = error_for_code(failure.code)(failure.message)
        reason = f"{_API_NAMES[failure.api]} answered {error.name}"
        retry_after = None
        if reaction in (R.RETRY_REQUEST, R.REDISCOVER_AND_RETRY):
            retry_after = self._backoff.delay(failure.attempt)
        match reaction:
            case R.RETRY_FIND:
                self._back_off(now)
            case R.DELAY_JOIN:
                self._delay_join(now)
            case R.DELAY_HEARTBEAT:
                self._failures += 1
                self._heartbeat_due = now + self._backoff.delay(self._failures)
            case R.ADOPT_MEMBER_ID:
                self._member_id = failure.member_id
                self._send_join(now, "rejoining with the member id the coordinator gave")
            case R.REDISCOVER:
                self._coordinator_lost(now, reason, back_off=True)
            case R.REDISCOVER_AND_RETRY:
                if self._coordinator is not None and self._state in ACTIVE_STATES:
                    self._coordinator_lost(now, reason, back_off=True)
            case R.MEMBERSHIP:
                self._membership_error(action, now, reason)
            case R.REBALANCE_NOTICED:
                # The coordinator answered, so it is alive; outside STABLE a rebalance is
                # already under way.
                self._session_deadline = now + self.config.session_timeout_ms / 1000
                if self._state is S.STABLE:
                    self._rejoin_needed = True
                    self._rejoin_reason = "the coordinator started a rebalance"
                    self._rejoin(now)
            case R.REFUSE_COMMIT:
                if failure.fence_current:
                    self._membership_error(action, now, reason)
                return RequestDecision(action, None, CommitFailedError(
                    f"the commit was refused ({error}); the group has rebalanced"))
            case R.STOP:
                self._fail(error)
                return RequestDecision(action, None, error)
            case R.FAIL_REQUEST:
                return RequestDecision(action, None, error)
            case R.RETRY_REQUEST:
                pass
        return RequestDecision(action, retry_after, None)

    def _membership_error(self, action: Action, now: float, reason: str) -> None:
        """Forget what ``action`` names as stale (REJOIN: nothing), then rejoin once the
        coordinator is known."""
        if action is not Action.REJOIN:
            if action is Action.RESET_MEMBER:
                self._member_id = ""
            self._reset_generation(reason)
        self._rejoin_needed = True
        self._rejoin_reason = reason
        if self._state is not S.COORDINATOR_UNKNOWN:
            self._rejoin(now)

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

    # --- timers and sending --------------------------------------------------------------------

    def _fire_timers(self, now: float) -> None:
        st = self._state
        if st in ACTIVE_STATES and self._poll_deadline is not None and now >= self._poll_deadline:
            self._poll_expired(now)
            return
        if self._main is not None and self._request_deadline is not None \
                and now >= self._request_deadline:
            kind = self._inflight[self._main].kind
            reason = f"{kind.value} got no answer within the rebalance timeout"
            if kind is RequestKind.JOIN and self._owned:
                # Past the rebalance timeout the coordinator has finished the rebalance without
                # this member, and others may hold its partitions in the new generation: they
                # are lost, not kept through the rejoin (Kafka would answer the rejoin with
                # UNKNOWN_MEMBER_ID; Java then calls onPartitionsLost).
                self._reset_generation(reason)
            self._coordinator_lost(now, reason, back_off=True)
            return
        if st in HEARTBEAT_STATES and self._session_deadline is not None \
                and now >= self._session_deadline:
            self._coordinator_lost(
                now, "no heartbeat answer within the session timeout", back_off=False)

    def _drive(self, now: float) -> None:
        """Send whatever the current state is waiting to send."""
        # The heartbeat states first: the member spends its life there, and neither other
        # branch leads into one (FindCoordinator and JoinGroup leave the state outside them).
        st = self._state
        if st in HEARTBEAT_STATES:
            if self._heartbeat is None and now >= self._heartbeat_due:
                beat = self._beat
                if beat is None or beat[1].generation_id != self._generation_id \
                        or beat[1].member_id != self._member_id:
                    beat = self._beat = (
                        requests.heartbeat(self.config, self._generation_id, self._member_id),
                        _InFlight(RequestKind.HEARTBEAT, self._generation_id, self._member_id))
                self._heartbeat = self._send_recorded(beat[1], beat[0])
                self._heartbeat_due = now + self.config.heartbeat_interval_ms / 1000
        elif st is S.COORDINATOR_UNKNOWN:
            if self._main is None and (self._retry_at is None or now >= self._retry_at):
                self._retry_at = None
                self._main = self._send(RequestKind.FIND, requests.find_coordinator(self.config),
                                        None, Destination.ANY_BROKER)
        elif st is S.PREPARING_REBALANCE and self._main is None \
                and (self._retry_at is None or now >= self._retry_at):
            self._send_join(now, self._rejoin_reason)

    def _poll_expired(self, now: float) -> None:
        reason = (f"the application did not poll within max_poll_interval_ms"
                  f" ({self.config.max_poll_interval_ms} ms); the member left so the group can"
                  " move on, and rejoins on the next poll")
        if self._coordinator is not None and self._member_id and not self.config.is_static \
                and self._state is not S.COORDINATOR_UNKNOWN:
            self._send_leave(reason, closing=False)
        self._abandon()
        self._reset_generation(reason)
        self._member_id = ""
        self._rejoin_needed = False
        self._retry_at = None
        self._go(T.POLL_TIMED_OUT)
        self._outputs.append(Left(reason))

    def _send_join(self, now: float, reason: str) -> None:
        protocols = list(self.protocol.join_protocols(self._owned, self._generation_id))
        self._offered = tuple(name for name, _ in protocols)
        self._rejoin_needed = False
        self._retry_at = None
        self._abandon()
        self._go(T.JOIN_SENT)
        timeout_ms = requests.join_timeout_ms(self.config)
        self._main = self._send(RequestKind.JOIN, requests.join_group(
            self.config, self.protocol.protocol_type, self._member_id, protocols, reason),
            timeout_ms)
        self._request_deadline = now + timeout_ms / 1000

    def _send_leave(self, reason: str, closing: bool) -> None:
        self._send(RequestKind.LEAVE, requests.leave_group(self.config, self._member_id, reason),
                   None, closing=closing)

    def _send(self, kind: RequestKind, request: Request, timeout_ms: int | None = None,
              destination: Destination = Destination.COORDINATOR, closing: bool = False) -> int:
        return self._send_recorded(_InFlight(kind, self._generation_id, self._member_id, closing),
                                   request, timeout_ms, destination)

    def _send_recorded(self, inflight: _InFlight, request: Request, timeout_ms: int | None = None,
                       destination: Destination = Destination.COORDINATOR) -> int:
        token = self._next_token
        self._next_token = token + 1
        self._inflight[token] = inflight
        self._outputs.append(Send(token, request, destination, timeout_ms))
        return token

    def _go(self, trigger: Trigger) -> None:
        self._state = next_state(self._state, trigger)

