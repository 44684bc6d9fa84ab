"""A share-group member (KIP-932): sans-IO, driven by answers, failures and ``now``.

The coordinator computes the assignment (Kafka's share assignor may give one partition to
several members); the member heartbeats (ShareGroupHeartbeat) at the interval the coordinator
gives and takes each new assignment as it comes: there is no revocation to order and no offset
to commit, since the records themselves are acknowledged, on the partition leaders, by the
record side (``groupkit.share``). This follows the Java client's ShareMembershipManager and
ShareHeartbeatRequestManager (over AbstractMembershipManager and
AbstractHeartbeatRequestManager). The member makes up its id and keeps it for its life; epoch 0
joins (again, after a fence), -1 leaves. The state changes are in ``states.TRANSITIONS``, the
error codes in ``error_actions``. ``Assigned.units`` are (topic id, partition) pairs: the
runtime names the topics from its metadata.

It speaks the outputs every membership machine speaks (``groupkit.group.outputs``), so the
group runner drives it like the classic one.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable
from typing import TypeVar

import attrs

from groupkit.errors import (
    CommitFailedError,
    ErrorCode,
    FeatureUnsupportedError,
    GroupkitError,
    IllegalStateError,
    UnsupportedVersionError,
    error_for_code,
)
from groupkit.group import requests
from groupkit.group.backoff import Backoff, random_jitter
from groupkit.group.config import GroupConfig
from groupkit.group.error_actions import Action as ClassicAction, Api, action_for
from groupkit.group.outputs import (
    Assigned,
    CommitFence,
    Coordinator,
    CoordinatorChanged,
    CoordinatorLost,
    Destination,
    Fatal,
    GenerationJoined,
    Leaving,
    Left,
    Lost,
    Output,
    Rebalancing,
    Reported,
    RequestDecision,
    Send,
)
from groupkit.group.share.error_actions import ShareAction, heartbeat_action
from groupkit.group.share.states import (
    IN_GROUP,
    TERMINAL_STATES,
    ShareMemberState,
    ShareTrigger,
    next_state,
)
from groupkit.protocol.messages.find_coordinator import FindCoordinatorResponse
from groupkit.protocol.messages.share_group import (
    JOIN_SHARE_GROUP_EPOCH,
    LEAVE_SHARE_GROUP_EPOCH,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from groupkit.protocol.schema import Request, Response

S = ShareMemberState
T = ShareTrigger

#: ``Assigned.protocol_name`` of a share group (the broker's share assignor decides).
SHARE_PROTOCOL = "share"
#: The heartbeat interval until the coordinator gives one (Kafka's default,
#: group.share.heartbeat.interval.ms).
DEFAULT_INTERVAL_S = 5.0

ShareUnit = tuple[uuid.UUID, int]


def new_member_id() -> str:
    """A member id as the Java client makes one: a random uuid in URL-safe base64 without
    padding (Kafka's ``Uuid.toString``), 22 characters."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


@attrs.define
class ShareSubscription:
    """The topics the application subscribed to. The application thread replaces ``topics``
    (one reference swap) and then asks the runner for a heartbeat (``request_rejoin``)."""

    topics: frozenset[str] = frozenset()


@attrs.define
class ShareGroupMachine:
    """One member of one share group. Not thread-safe: one runtime thread drives it.

    ``jitter`` and ``make_member_id`` are the random sources (tests pass fixed ones). Of
    ``config`` it reads the group id, ``max_poll_interval_ms``, the retry back-off and
    ``client_rack``; a share group's session and heartbeat timing are the broker's.
    """

    config: GroupConfig
    subscription: ShareSubscription
    jitter: Callable[[], float] = random_jitter
    make_member_id: Callable[[], str] = new_member_id

    _state: ShareMemberState = attrs.field(init=False, default=S.UNSUBSCRIBED)
    _started: bool = attrs.field(init=False, default=False)
    _outputs: list[Output] = attrs.field(init=False, factory=list)
    _backoff: Backoff = attrs.field(init=False)
    _next_token: int = attrs.field(init=False, default=1)
    _member_id: str = attrs.field(init=False, default="")
    _epoch: int = attrs.field(init=False, default=JOIN_SHARE_GROUP_EPOCH)
    _poll_deadline: float | None = attrs.field(init=False, default=None)

    _coordinator: Coordinator | None = attrs.field(init=False, default=None)
    _find_token: int | None = attrs.field(init=False, default=None)
    _find_failures: int = attrs.field(init=False, default=0)
    _find_at: float = attrs.field(init=False, default=0.0)

    _heartbeat_token: int | None = attrs.field(init=False, default=None)
    _leave_token: int | None = attrs.field(init=False, default=None)
    _interval_s: float = attrs.field(init=False, default=DEFAULT_INTERVAL_S)
    _beat_at: float = attrs.field(init=False, default=0.0)
    _beat_failures: int = attrs.field(init=False, default=0)
    #: The topic names the coordinator was last told (None: tell it everything next time).
    _told_topics: frozenset[str] | None = attrs.field(init=False, default=None)
    _assigned: frozenset[ShareUnit] = attrs.field(init=False, default=frozenset())
    #: A join is under way: the first assignment answered after it is told even if unchanged.
    _joining: bool = attrs.field(init=False, default=False)

    def __attrs_post_init__(self) -> None:
        self._backoff = Backoff(
            self.config.retry_backoff_ms, self.config.retry_backoff_max_ms, self.jitter)
        self._member_id = self.make_member_id()

    # --- what the runtime may read -------------------------------------------------------------

    @property
    def state(self) -> ShareMemberState:
        return self._state

    @property
    def member_id(self) -> str:
        return self._member_id

    @property
    def generation_id(self) -> int:
        """The member epoch (0 while joining, -1 once it left)."""
        return self._epoch

    @property
    def coordinator(self) -> Coordinator | None:
        return self._coordinator

    @property
    def assigned(self) -> frozenset[ShareUnit]:
        """The (topic id, partition) pairs the coordinator last gave this member."""
        return self._assigned

    @property
    def finished(self) -> bool:
        return self._state in TERMINAL_STATES

    @property
    def rejoins_on_poll(self) -> bool:
        return self._state is S.STALE

    @property
    def heartbeat_due(self) -> float | None:
        return None  # an answer may carry an assignment: never deferred

    def commit_fence(self) -> CommitFence:
        raise CommitFailedError(
            "a share group commits no offsets: acknowledge records instead (ShareConsumer"
            ".acknowledge, commit_sync)")

    # --- inputs --------------------------------------------------------------------------------

    def start(self, now: float) -> None:
        """Subscribe: find the coordinator and join with epoch 0."""
        if self._started:
            raise IllegalStateError("ShareGroupMachine.start() was called twice; call it once")
        self._started = True
        self._poll_deadline = now + self.config.max_poll_interval_ms / 1000
        self._go(T.SUBSCRIBED)
        self._rejoin(now)
        self._drive(now)

    def poll(self, now: float) -> list[Output]:
        if self._state in IN_GROUP and self._poll_deadline is not None \
                and now >= self._poll_deadline:
            self._poll_expired()
        self._drive(now)
        out, self._outputs = self._outputs, []
        return out

    def next_deadline(self) -> float | None:
        if self._outputs:
            return float("-inf")
        if self._state not in IN_GROUP:
            return None
        due = [self._poll_deadline] if self._poll_deadline is not None else []
        if self._coordinator is None:
            if self._find_token is None:
                due.append(self._find_at)
        elif self._heartbeat_token is None:
            due.append(self._beat_at)
        return min(due) if due else None

    def on_response(self, token: int, response: Response, now: float) -> None:
        if token == self._heartbeat_token:
            self._heartbeat_token = None
            self._on_heartbeat(_expect(response, ShareGroupHeartbeatResponse), now)
        elif token == self._leave_token:
            self._leave_token = None
            self._finish_leave("left the share group on close")
        elif token == self._find_token:
            self._find_token = None
            self._on_find(_expect(response, FindCoordinatorResponse), now)
        self._drive(now)

    def on_request_failed(self, token: int, error: BaseException, now: float) -> None:
        if token == self._heartbeat_token:
            self._heartbeat_token = None
            if isinstance(error, UnsupportedVersionError):
                self._fail(self._unsupported(error))
            else:
                # Java: the next heartbeat is a full one, after the back-off, and the
                # coordinator counts as unknown until found again.
                self._told_topics = None
                self._beat_failures += 1
                self._beat_at = now + self._backoff.delay(self._beat_failures)
                self._coordinator_lost(f"ShareGroupHeartbeat failed: {error}")
        elif token == self._leave_token:
            self._leave_token = None
            self._finish_leave(f"the leave heartbeat failed ({error}); the coordinator drops"
                               " the member when its session times out")
        elif token == self._find_token:
            self._find_token = None
            self._find_failures += 1
            self._find_at = now + self._backoff.delay(self._find_failures)
        self._drive(now)

    def heartbeat_stood(self, token: int, sent_at: float, answered_at: float) -> None:
        """Nothing to do: no heartbeat of a share member stands (its answers are never
        deferred, so no ``Send`` of it has ``stands_every``)."""

    def application_polled(self, now: float) -> None:
        """The application polled: the poll interval starts again; a STALE member rejoins."""
        if self.finished or not self._started:
            return
        self._poll_deadline = now + self.config.max_poll_interval_ms / 1000
        if self._state is S.STALE:
            self._go(T.POLLED_AGAIN)
            self._rejoin(now)
        self._drive(now)

    def revocation_done(self, now: float) -> None:
        """Nothing waits for it: a share member gives partitions up as it is told."""

    def assignment_applied(self, now: float) -> None:
        """Nothing waits for it: the assignment is acknowledged by the next heartbeat."""

    def request_rejoin(self, now: float, reason: str) -> None:
        """The subscription changed: the next heartbeat, sent now, carries it."""
        if self._state in IN_GROUP:
            self._beat_at = now
        self._drive(now)

    def leave(self, now: float, reason: str = "the member is closing") -> None:
        """Close: send the leave heartbeat (epoch -1) and finish when it is answered."""
        if self.finished or self._state is S.LEAVING:
            return
        if self._state not in IN_GROUP or self._coordinator is None:
            self._finish_leave(reason)
            return
        self._go(T.LEAVE_STARTED)
        self._send_leave(reason, expect_answer=True)
        self._drive(now)

    def on_commit_error(self, fence: CommitFence, code: int, now: float,
                        attempt: int = 1) -> RequestDecision:
        raise IllegalStateError("a share group commits no offsets; this is a groupkit bug")

    def on_offset_fetch_error(self, code: int, now: float, attempt: int = 1) -> RequestDecision:
        raise IllegalStateError("a share group fetches no offsets; this is a groupkit bug")

    # --- answers -------------------------------------------------------------------------------

    def _on_find(self, resp: FindCoordinatorResponse, now: float) -> None:
        code, node_id, host, port = resp.error_code, resp.node_id, resp.host, resp.port
        message = resp.error_message
        for entry in resp.coordinators:  # v4+: one entry per key asked
            if entry.key == self.config.group_id:
                code, node_id, host, port, message = (
                    entry.error_code, entry.node_id, entry.host, entry.port, entry.error_message)
        if not code and not host:
            code = ErrorCode.COORDINATOR_NOT_AVAILABLE
        if code:
            if action_for(Api.FIND_COORDINATOR, code) is ClassicAction.FATAL:
                self._fail(error_for_code(code)(message or None))
                return
            self._find_failures += 1
            self._find_at = now + self._backoff.delay(self._find_failures)
            return
        self._find_failures = 0
        self._coordinator = Coordinator(node_id, host, port)
        self._outputs.append(CoordinatorChanged(node_id, host, port))

    def _on_heartbeat(self, resp: ShareGroupHeartbeatResponse, now: float) -> None:
        if resp.error_code:
            self._on_heartbeat_error(resp.error_code, resp.error_message, now)
            return
        self._beat_failures = 0
        interval = resp.heartbeat_interval_ms / 1000
        if interval > 0 and interval != self._interval_s:
            self._interval_s = interval  # Java: a new interval restarts the timer from now
            self._beat_at = now + interval
        if self._state not in IN_GROUP:
            return  # an answer that crossed a leave, a fence or a poll expiry
        if resp.member_id:
            self._member_id = resp.member_id  # the coordinator's word, as Java takes it
        if resp.member_epoch != self._epoch and resp.member_epoch > 0:
            self._outputs.append(GenerationJoined(
                self._member_id, resp.member_epoch, SHARE_PROTOCOL, False, 0))
        self._epoch = resp.member_epoch
        if resp.assignment is None:
            return  # null: unchanged
        units = frozenset((tp.topic_id, p) for tp in resp.assignment.topic_partitions
                          for p in tp.partitions)
        if units == self._assigned and not self._joining:
            # The assignment held, again (confluent-kafka's mock cluster repeats it in every
            # answer): nothing to acknowledge, the next heartbeat at the interval. Java's
            # AbstractMembershipManager.processAssignmentReceived moves on only for a target
            # not yet reconciled.
            return
        self._go(T.ASSIGNMENT_RECEIVED)
        if not self._joining:
            self._outputs.append(Rebalancing("the coordinator sent a new assignment"))
        self._joining = False
        added, revoked = units - self._assigned, self._assigned - units
        self._assigned = units
        self._outputs.append(Assigned(
            generation_id=self._epoch, member_id=self._member_id,
            protocol_name=SHARE_PROTOCOL, assignment=b"", units=frozenset(units),
            added=frozenset(added), revoked=frozenset(revoked)))
        self._beat_at = now  # ACKNOWLEDGING: the next heartbeat goes at once

    def _on_heartbeat_error(self, code: int, message: str | None, now: float) -> None:
        self._told_topics = None  # Java: after any error the next heartbeat is a full one
        self._beat_failures += 1
        self._beat_at = now + self._backoff.delay(self._beat_failures)
        error = error_for_code(code)(message or None)
        match heartbeat_action(code):
            case ShareAction.REDISCOVER:
                self._beat_failures = 0
                self._beat_at = now
                self._coordinator_lost(f"ShareGroupHeartbeat answered {error.name}")
            case ShareAction.BACK_OFF:
                pass
            case ShareAction.FENCE:
                self._beat_failures = 0
                self._fenced(f"ShareGroupHeartbeat answered {error.name} (member"
                             f" {self._member_id}, epoch {self._epoch})", now)
            case ShareAction.REPORT:
                # Java raises it from the application's next poll and keeps heartbeating.
                self._outputs.append(Reported(error))
            case _:
                if code == ErrorCode.UNSUPPORTED_VERSION:
                    error = self._unsupported(error)
                self._fail(error)

    # --- membership moves ----------------------------------------------------------------------

    def _rejoin(self, now: float) -> None:
        """Epoch 0, every field in the next heartbeat, sent now."""
        self._epoch = JOIN_SHARE_GROUP_EPOCH
        self._told_topics = None
        self._beat_at = now
        self._joining = True
        self._outputs.append(Rebalancing("joining the share group"))

    def _fenced(self, reason: str, now: float) -> None:
        """Lose the assignment and rejoin with epoch 0 and the same member id (Java's
        ``transitionToFenced`` then ``transitionToJoining``)."""
        self._go(T.FENCED)
        self._lose(reason)
        self._go(T.REJOINED)
        self._rejoin(now)

    def _lose(self, reason: str) -> None:
        if self._assigned:
            self._outputs.append(Lost(self._assigned, reason))
            self._assigned = frozenset()

    def _coordinator_lost(self, reason: str) -> None:
        if self._coordinator is not None:
            self._outputs.append(CoordinatorLost(reason))
        self._coordinator = None
        self._heartbeat_token = None  # its answer, should it come, is ignored

    def _poll_expired(self) -> None:
        """No poll within max_poll_interval_ms: leave (epoch -1) without waiting for the answer,
        lose the partitions, and stay STALE until the application polls again."""
        reason = (f"the application did not poll within max_poll_interval_ms"
                  f" ({self.config.max_poll_interval_ms} ms); the member left so its records go"
                  " to others, and rejoins on the next poll")
        self._go(T.POLL_EXPIRED)
        if self._coordinator is not None:
            self._send_leave(reason, expect_answer=False)
        self._lose(reason)
        self._outputs.append(Left(reason))

    def _send_leave(self, reason: str, *, expect_answer: bool) -> None:
        self._outputs.append(Leaving(reason))
        self._epoch = LEAVE_SHARE_GROUP_EPOCH
        self._heartbeat_token = None
        self._told_topics = None
        token = self._send(ShareGroupHeartbeatRequest(
            group_id=self.config.group_id, member_id=self._member_id,
            member_epoch=LEAVE_SHARE_GROUP_EPOCH), Destination.COORDINATOR, heartbeat=True)
        if expect_answer:
            self._leave_token = token

    def _finish_leave(self, reason: str) -> None:
        self._heartbeat_token = None
        self._leave_token = None
        self._assigned = frozenset()
        self._go(T.LEFT if self._state is S.LEAVING else T.STOPPED)
        self._outputs.append(Left(reason))

    def _fail(self, error: GroupkitError) -> None:
        if self.finished:
            return
        self._lose(f"the member stopped: {error}")
        self._heartbeat_token = None
        self._leave_token = None
        self._go(T.FAILED)
        self._outputs.append(Fatal(error))

    def _unsupported(self, error: BaseException) -> UnsupportedVersionError:
        where = ("the group coordinator" if self._coordinator is None else
                 f"the group coordinator {self._coordinator.host}:{self._coordinator.port}"
                 f" (node {self._coordinator.node_id})")
        return FeatureUnsupportedError(
            f"{where} does not offer ShareGroupHeartbeat (API 76), which share groups need"
            " (Apache Kafka 4.1+, with share groups enabled: share.version=1); use a"
            f" consumer group (Consumer, GroupConsumer) with this cluster ({error})",
            feature="share groups (KIP-932)", release="4.1")

    # --- sending -------------------------------------------------------------------------------

    def _drive(self, now: float) -> None:
        """Send what is due: FindCoordinator while the coordinator is unknown, else the
        heartbeat at its time (at once while ACKNOWLEDGING)."""
        if self._state not in IN_GROUP:
            return
        if self._coordinator is None:
            if self._find_token is None and now >= self._find_at:
                self._find_token = self._send(requests.find_coordinator(self.config),
                                              Destination.ANY_BROKER)
            return
        if self._heartbeat_token is None and now >= self._beat_at:
            self._send_heartbeat(now)

    def _send_heartbeat(self, now: float) -> None:
        topics = self.subscription.topics
        full = self._told_topics is None
        request = ShareGroupHeartbeatRequest(
            group_id=self.config.group_id, member_id=self._member_id, member_epoch=self._epoch,
            rack_id=self.config.client_rack if full else None,
            subscribed_topic_names=sorted(topics) if full or topics != self._told_topics
            else None)
        self._told_topics = topics
        self._heartbeat_token = self._send(request, Destination.COORDINATOR, heartbeat=True)
        self._beat_at = now + self._interval_s
        if self._state is S.ACKNOWLEDGING:
            self._go(T.ACKNOWLEDGED)

    def _send(self, request: Request, destination: Destination, *,
              heartbeat: bool = False) -> int:
        token = self._next_token
        self._next_token += 1
        self._outputs.append(Send(token, request, destination, heartbeat=heartbeat))
        return token

    def _go(self, trigger: ShareTrigger) -> None:
        self._state = next_state(self._state, trigger)


_R = TypeVar("_R", bound=Response)


def _expect(response: Response, cls: type[_R]) -> _R:
    if not isinstance(response, cls):
        raise IllegalStateError(
            f"a share member expected a {cls.__name__}, got {type(response).__name__}; this is"
            " a groupkit bug")
    return response
