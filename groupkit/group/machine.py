"""The group membership state machine: sans-IO, driven by responses, failures and ``now``.

The runtime feeds it decoded responses (``on_response``), request failures
(``on_request_failed``) and the application's progress (``application_polled``,
``revocation_done``), calls ``poll(now)`` after each input and when ``next_deadline()`` comes,
and carries out what ``poll`` returns: requests to send and facts for the application. The
state changes themselves are in ``states.TRANSITIONS``; error codes are read only through
``error_actions.action_for``, and what the member does about each action only through
``states.REACTIONS`` (in ``reactions``).

The machine is built in layers, one job per module: ``membership`` (the member's record and
the moves every path shares), ``reactions`` (error codes), ``responses`` (the coordinator's
answers), and this module (the inputs, the timers, and what the runtime may read).
"""

from __future__ import annotations

from collections.abc import Hashable

from groupkit.errors import (
    CommitFailedError,
    FieldVersionError,
    IllegalStateError,
    UnsupportedVersionError,
)
from groupkit.group import requests
from groupkit.group.error_actions import Api
from groupkit.group.membership import InFlight
from groupkit.group.outputs import (
    CommitFence,
    Coordinator,
    Destination,
    Left,
    Output,
    RequestDecision,
)
from groupkit.group.reactions import Failure
from groupkit.group.requests import RESPONSE_TYPES, RequestKind
from groupkit.group.responses import AnsweringMember
from groupkit.group.states import (
    ACTIVE_STATES,
    HEARTBEAT_STATES,
    TERMINAL_STATES,
    MemberState,
    Trigger,
)
from groupkit.protocol.messages.find_coordinator import FindCoordinatorResponse
from groupkit.protocol.messages.group import (
    HeartbeatResponse,
    JoinGroupResponse,
    SyncGroupResponse,
)
from groupkit.protocol.schema import Response

S = MemberState
T = Trigger


class GroupMachine(AnsweringMember):
    """One member of one group. Not thread-safe: one runtime thread drives it.

    Built as ``GroupMachine(config, protocol, jitter=random_jitter)``; ``jitter`` is the random
    source of the retry back-off.
    """

    __slots__ = ()

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
    def finished(self) -> bool:
        """Whether the member is closed or stopped for good (terminal)."""
        return self._state in TERMINAL_STATES

    @property
    def rejoins_on_poll(self) -> bool:
        """Whether the member left after the poll interval expired and rejoins on a poll."""
        return self._state is S.UNJOINED

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
        if isinstance(error, UnsupportedVersionError | FieldVersionError) \
                and req.kind is not RequestKind.LEAVE:
            # The request cannot be sent or served at this version: every retry would fail
            # alike, so the member stops with the error that says why (as Java's coordinator
            # raises an UnsupportedVersionException from poll()).
            self._fail(error)
        elif req.kind is RequestKind.FIND:
            self._back_off(now)
        elif req.kind is RequestKind.LEAVE:
            if req.closing and self._state is S.LEAVING:
                self._finish_leave(f"LeaveGroup failed ({error}); the session will expire")
        else:
            self._coordinator_lost(now, f"{req.kind.value} failed: {error}", back_off=True)
        self._drive(now)

    def heartbeat_stood(self, token: int, sent_at: float, answered_at: float) -> None:
        """The heartbeat ``token``, sent again by the runtime while its answer repeats the last
        one (error 0), was so answered at ``answered_at`` and went out again at ``sent_at``:
        what a successful answer does (the session runs from it), and the next heartbeat is
        due an interval after that send, as if the machine had sent it."""
        if token != self._heartbeat or self._state is not S.STABLE:
            return
        self._failures = 0
        self._session_deadline = answered_at + self.config.session_timeout_ms / 1000
        self._heartbeat_due = sent_at + self.config.heartbeat_interval_ms / 1000

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

    def assignment_applied(self, now: float) -> None:
        """The application took what ``Assigned`` gave: nothing waits for it in the classic
        protocol (SyncGroup already completed the generation)."""

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
        decision = self._react(Failure(Api.OFFSET_COMMIT, code, attempt=attempt,
                                        fence_current=current), now)
        self._drive(now)
        return decision

    def on_offset_fetch_error(self, code: int, now: float, attempt: int = 1) -> RequestDecision:
        """Decide about an OffsetFetch that failed with ``code``."""
        decision = self._react(Failure(Api.OFFSET_FETCH, code, attempt=attempt), now)
        self._drive(now)
        return decision

    # --- timers and driving ----------------------------------------------------------------

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
                        InFlight(RequestKind.HEARTBEAT, self._generation_id, self._member_id))
                self._heartbeat = self._send_recorded(beat[1], beat[0], heartbeat=True)
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
