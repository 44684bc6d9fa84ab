"""A consumer-protocol group member (KIP-848): sans-IO, driven by answers, failures and ``now``.

The coordinator computes the assignment; the member heartbeats (ConsumerGroupHeartbeat) at
the interval the coordinator gives, and reconciles each new target assignment: it revokes what
it no longer holds (the application commits and runs ``on_partitions_revoked``), then takes
what is new (``on_partitions_assigned``), then acknowledges with the partitions it owns. The
coordinator hands a partition over only once its previous owner has acknowledged giving it
up, so applying each target assignment in that order is all a member does to keep every
partition with one owner at a time. This follows the Java client's ConsumerMembershipManager,
AbstractMembershipManager and (Consumer)HeartbeatRequestManager; the state changes are in
``states.TRANSITIONS``, the error codes in ``error_actions``, the heartbeat fields in
``heartbeat``. Topic ids are turned into names by Metadata (v10+) the member asks for itself.

The machine is built in layers, one job per module, as the classic one is: ``membership``
(the member's record and the moves every path shares), ``reactions`` (error codes),
``responses`` (the answers to FindCoordinator, ConsumerGroupHeartbeat and Metadata), and this
module (the inputs, the timers and sending, and what the runtime may read).
"""

from __future__ import annotations

from assignors import TopicPartition
from groupkit.errors import (
    CommitFailedError,
    FieldVersionError,
    IllegalStateError,
    UnsupportedVersionError,
    error_for_code,
)
from groupkit.group import requests
from groupkit.group.kip848.error_actions import Action, commit_action, offset_fetch_action
from groupkit.group.kip848.heartbeat import QuietAnswer
from groupkit.group.kip848.responses import AnsweringMember
from groupkit.group.kip848.states import (
    HEARTBEAT_NOW,
    IN_GROUP,
    TERMINAL_STATES,
    MemberState,
    Trigger,
)
from groupkit.group.outputs import (
    CommitFence,
    Coordinator,
    Destination,
    Leaving,
    Left,
    Output,
    RequestDecision,
)
from groupkit.protocol.messages.consumer_group import ConsumerGroupHeartbeatResponse
from groupkit.protocol.messages.find_coordinator import FindCoordinatorResponse
from groupkit.protocol.messages.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from groupkit.protocol.schema import Response

S = MemberState
T = Trigger


class ConsumerGroupMachine(AnsweringMember):
    """One member of one consumer-protocol group. Not thread-safe: one runtime thread drives it.

    Built as ``ConsumerGroupMachine(config, subscription, remote_assignor=None,
    jitter=random_jitter, make_member_id=new_member_id)``: ``subscription`` is shared with the
    application (which sets it); ``remote_assignor`` is the server-side assignor to ask for
    (None: the broker's default); ``jitter`` and ``make_member_id`` are the random sources.
    """

    __slots__ = ()

    # --- what the runtime may read -------------------------------------------------------------

    @property
    def state(self) -> MemberState:
        return self._state

    @property
    def member_id(self) -> str:
        return self._member_id

    @property
    def generation_id(self) -> int:
        """The member epoch (0 while joining; -1/-2 once it left)."""
        return self._epoch

    @property
    def coordinator(self) -> Coordinator | None:
        return self._coordinator

    @property
    def owned(self) -> frozenset[TopicPartition]:
        """The partitions the application holds (as handed out by Assigned and Revoked)."""
        return self._rec.owned

    @property
    def finished(self) -> bool:
        return self._state in TERMINAL_STATES

    @property
    def rejoins_on_poll(self) -> bool:
        return self._state is S.STALE

    @property
    def heartbeat_due(self) -> float | None:
        """When a STABLE member's next heartbeat goes (its answers may wait until then when
        they change nothing: ``QuietAnswer``); None in every other state, whose answers are
        never deferred."""
        return self._beat_due() if self._state is S.STABLE else None

    def commit_fence(self) -> CommitFence:
        """The member id and epoch an OffsetCommit and an OffsetFetch carry (v9+), or
        CommitFailedError when the member holds no epoch the coordinator would accept. While
        the coordinator is unknown the epoch is kept, as Java keeps it: the commit waits for
        the coordinator within its own deadline, and the coordinator fences it if it is
        stale."""
        if self._state in IN_GROUP and self._epoch > 0:
            fence = self._fence
            if fence is None or fence.generation_id != self._epoch \
                    or fence.member_id != self._member_id:
                fence = self._fence = CommitFence(self._epoch, self._member_id,
                                                  self.config.group_instance_id,
                                                  member_epoch=True)
            return fence
        raise CommitFailedError(
            f"cannot commit while the member is {self._state.name}: it holds no member epoch"
            " of the group; commit the records of its next assignment instead")

    # --- inputs --------------------------------------------------------------------------------

    def start(self, now: float) -> None:
        """Subscribe: join the group (epoch 0) once the coordinator is found."""
        if self._started:
            raise IllegalStateError("ConsumerGroupMachine.start() was called twice; call it once")
        self._started = True
        self._poll_deadline = now + self.config.max_poll_interval_ms / 1000
        self._join()
        self._drive(now)

    def poll(self, now: float) -> list[Output]:
        self._fire_timers(now)
        self._drive(now)
        out, self._outputs = self._outputs, []
        return out

    def next_deadline(self) -> float | None:
        if self._outputs:
            return float("-inf")
        st = self._state
        if st in TERMINAL_STATES:
            return None
        first: float | None = None

        def consider(at: float | None) -> None:
            nonlocal first
            if at is not None and (first is None or at < first):
                first = at

        if st in IN_GROUP:
            consider(self._poll_deadline)
        if self._wants_coordinator():
            if self._coordinator is None:
                if self._find_token is None:
                    consider(self._find_at)
            elif self._heartbeat_token is None and self._leave_token is None \
                    and (st in IN_GROUP or st is S.LEAVING):
                consider(self._beat_due())
        if self._needs_metadata() and self._metadata_token is None:
            consider(self._metadata_at)
        return first

    def on_response(self, token: int, response: Response, now: float) -> None:
        if token == self._heartbeat_token:
            self._heartbeat_token = None
            if not isinstance(response, ConsumerGroupHeartbeatResponse):
                raise self._wrong_type(token, response)
            self._on_heartbeat(response, now)
        elif token == self._leave_token:
            self._leave_token = None
            if self._state is S.LEAVING:
                self._finish_leave("left the group on close")
        elif token == self._find_token:
            self._find_token = None
            if not isinstance(response, FindCoordinatorResponse):
                raise self._wrong_type(token, response)
            self._on_find(response, now)
        elif token == self._metadata_token:
            self._metadata_token = None
            if not isinstance(response, MetadataResponse):
                raise self._wrong_type(token, response)
            self._on_metadata(response, now)
        self._drive(now)

    def on_request_failed(self, token: int, error: BaseException, now: float) -> None:
        """A request got no answer. A version the broker cannot serve (UnsupportedVersionError,
        RequestDroppedError, FieldVersionError) stops the member with the error that says why,
        as the classic machine does: every retry would fail alike. Only a leave finishes
        anyway."""
        if token == self._heartbeat_token:
            self._heartbeat_token = None
            if isinstance(error, UnsupportedVersionError | FieldVersionError):
                self._fail(self._unsupported(error))
            else:
                # Java: a failed attempt backs off, the next heartbeat carries every field, and
                # a retriable failure marks the coordinator unknown.
                self._sent.reset()
                self._beat_failures += 1
                self._beat_at = now + self._backoff.delay(self._beat_failures)
                self._coordinator_lost(now, f"ConsumerGroupHeartbeat failed: {error}")
        elif token == self._leave_token:
            self._leave_token = None
            if self._state is S.LEAVING:
                self._finish_leave(f"the leave heartbeat failed ({error}); the coordinator"
                                   " drops the member when its session expires")
        elif token == self._find_token:
            self._find_token = None
            if isinstance(error, UnsupportedVersionError | FieldVersionError):
                self._fail(error)  # as the classic machine: no retry can send it
            else:
                self._find_failures += 1
                self._find_at = now + self._backoff.delay(self._find_failures)
        elif token == self._metadata_token:
            self._metadata_token = None
            if isinstance(error, UnsupportedVersionError | FieldVersionError):
                self._fail(error)
            else:
                self._metadata_failures += 1
                self._metadata_at = now + self._backoff.delay(self._metadata_failures)
        self._drive(now)

    def heartbeat_stood(self, token: int, sent_at: float, answered_at: float) -> None:
        """The heartbeat ``token``, sent again by the runtime while its answer repeats a quiet
        one (``QuietAnswer``), was so answered and went out again at ``sent_at``: the next
        heartbeat is due an interval after that send, as if the machine had sent it."""
        if token != self._heartbeat_token or self._state is not S.STABLE:
            return
        self._beat_failures = 0
        self._beat_at = sent_at + self._interval_s

    def application_polled(self, now: float) -> None:
        """The application polled: restart the poll interval; a STALE member rejoins."""
        if self.finished or not self._started:
            return
        self._poll_deadline = now + self.config.max_poll_interval_ms / 1000
        if self._state is S.STALE:
            self._go(T.POLLED_AGAIN)
            self._rejoin_as_new_epoch()
        self._drive(now)

    def revocation_done(self, now: float) -> None:
        self._answered(now)

    def assignment_applied(self, now: float) -> None:
        self._answered(now)

    def _answered(self, now: float) -> None:
        """The application answered a Revoked or an Assigned: move the reconciliation on."""
        step = self._rec.answered(self._epoch, self._member_id, self._assignor_name)
        if self._state is S.RECONCILING:
            self._take(step)
        self._drive(now)

    def request_rejoin(self, now: float, reason: str) -> None:
        """The subscription changed: it goes out with the next heartbeat, sent now."""
        if self._state is S.UNSUBSCRIBED and self._started:
            self._join()
        elif self._state in IN_GROUP:
            self._beat_at = now
        self._drive(now)

    def leave(self, now: float, reason: str = "the member is closing") -> None:
        """Close: send the leave heartbeat (epoch -1; -2 for a static member, which keeps its
        place until its session expires, unless ``leave_group_on_close``).

        The runtime revokes (and commits) before calling this; no Revoked follows.
        """
        if self.finished or self._state in (S.PREPARE_LEAVING, S.LEAVING):
            return
        self._rec.release()
        if self._state not in IN_GROUP or self._coordinator is None:
            self._finish_leave(reason)
            return
        self._go(T.LEAVE_STARTED)
        self._go(T.RELEASED)
        self._outputs.append(Leaving(reason))
        self._send_leave()
        self._drive(now)

    def on_commit_error(self, fence: CommitFence, code: int, now: float,
                        attempt: int = 1) -> RequestDecision:
        """Decide about an OffsetCommit that failed with ``code`` (Java's CommitRequestManager).

        STALE_MEMBER_EPOCH is retried (with the member's newer epoch, the fence being read
        again) only while the member revokes partitions and has a newer epoch than ``fence``:
        Java retries the commit it makes before a revocation so, and fails a user's commit.
        """
        action = commit_action(code)
        error = error_for_code(code)()
        if action is Action.RETRY_IF_NEWER_EPOCH:
            if self._rec.revoking and self._state in IN_GROUP \
                    and self._epoch > fence.generation_id > 0:
                return RequestDecision(action, self._backoff.delay(attempt), None)
            action = Action.REFUSE_COMMIT
        decision = self._request_decision(action, error, attempt, now)
        self._drive(now)
        return decision

    def on_offset_fetch_error(self, code: int, now: float, attempt: int = 1) -> RequestDecision:
        """Decide about an OffsetFetch that failed with ``code``."""
        action = offset_fetch_action(code)
        error = error_for_code(code)()
        if action is Action.RETRY_IF_NEWER_EPOCH:
            action = Action.BACK_OFF if self._epoch > 0 else Action.FAIL_REQUEST
        decision = self._request_decision(action, error, attempt, now)
        self._drive(now)
        return decision

    # --- timers and sending --------------------------------------------------------------------

    def _poll_expired(self, now: float) -> None:
        """No poll within max_poll_interval_ms: leave (epoch -1/-2) without waiting for the
        answer, lose the partitions, and stay STALE until the application polls again."""
        reason = (f"the application did not poll within max_poll_interval_ms"
                  f" ({self.config.max_poll_interval_ms} ms); the member left so the group can"
                  " move on, and rejoins on the next poll")
        self._go(T.LEAVE_STARTED)
        self._go(T.RELEASED)
        if self._coordinator is not None:
            self._outputs.append(Leaving(reason))
            self._send_leave(expect_answer=False)
        self._go(T.LEFT_STALE)
        self._release(reason)
        self._outputs.append(Left(reason))

    def _wants_coordinator(self) -> bool:
        return self._state in IN_GROUP or self._state is S.LEAVING

    def _beat_due(self) -> float:
        """When the next heartbeat may go: at once in JOINING, ACKNOWLEDGING and LEAVING
        (Java's ``shouldHeartbeatNow``), else at the interval; never before the back-off of a
        failed attempt (Java skips that in the states above; groupkit keeps it, so a broker
        that keeps answering an error is not asked again at once)."""
        if self._state in HEARTBEAT_NOW and not self._beat_failures:
            return self._beat_at if self._state is S.JOINING else 0.0
        return self._beat_at

    def _needs_metadata(self) -> bool:
        return self._state is S.RECONCILING and bool(self._rec.unresolved())

    def _fire_timers(self, now: float) -> None:
        if self._state in IN_GROUP and self._poll_deadline is not None \
                and now >= self._poll_deadline:
            self._poll_expired(now)

    def _drive(self, now: float) -> None:
        """Send whatever is due now."""
        st = self._state
        if st in TERMINAL_STATES:
            return
        if self._wants_coordinator() and self._coordinator is None \
                and self._find_token is None and now >= self._find_at:
            self._find_token = self._send(requests.find_coordinator(self.config),
                                          destination=Destination.ANY_BROKER)
        if self._needs_metadata() and self._metadata_token is None and now >= self._metadata_at:
            self._send_metadata()
        if self._coordinator is None or self._heartbeat_token is not None \
                or self._leave_token is not None:
            return
        if st in IN_GROUP and now >= self._beat_due():
            self._send_heartbeat(now)

    def _send_heartbeat(self, now: float) -> None:
        joining = self._state is S.JOINING
        request = self._sent.build(self.config, self._member_id, self._epoch, joining,
                                   self.subscription.current, self.remote_assignor,
                                   self._rec.current)
        # A STABLE member's answer that changes nothing may wait for the runner's next wakeup
        # (when the next heartbeat is due), so an idle member wakes once per heartbeat.
        quiet = QuietAnswer(self._epoch, self._member_id, self._interval_s) \
            if self._state is S.STABLE else None
        self._heartbeat_token = self._send(request, heartbeat=True, quiet_if=quiet)
        # The interval counts from the send (Java resets the heartbeat timer when it builds
        # the request); JOINING waits for the answer, then heartbeats again at the interval.
        self._beat_at = now + self._interval_s
        if self._state is S.ACKNOWLEDGING:
            # Java's onHeartbeatRequestGenerated: the acknowledgement is on its way.
            if self._rec.target == self._rec.current:
                self._go(T.ACKNOWLEDGED)
            else:
                self._go(T.ASSIGNMENT_RECEIVED)
                self._reconcile()

    def _send_metadata(self) -> None:
        pattern = self.subscription.current.pattern
        topics = None if self._metadata_all or pattern is not None else [
            MetadataRequestTopic(name=name) for name in sorted(self.subscription.current.topics)]
        self._metadata_token = self._send(
            MetadataRequest(topics=topics, allow_auto_topic_creation=False),
            destination=Destination.ANY_BROKER)
