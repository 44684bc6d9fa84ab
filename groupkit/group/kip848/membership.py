"""A consumer-protocol member's record, and the moves every path of its machine shares.

``Membership`` holds what the member knows (member id and epoch, the coordinator found beside
the membership, the heartbeat timer and sent fields, the assignments through the
``Reconciler``), its requests in flight, and the moves the inputs, the answer handlers
(``responses``) and the error reactions (``reactions``) all make: join, rejoin with epoch 0,
reconcile, be fenced, lose the coordinator, leave, fail, send. Every state change goes through
``states.TRANSITIONS`` (``_go``). ``ConsumerGroupMachine`` (``machine``) builds on it.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable

import attrs

from groupkit.errors import GroupkitError, IllegalStateError, UnsupportedVersionError
from groupkit.group.backoff import Backoff, random_jitter
from groupkit.group.config import GroupConfig
from groupkit.group.kip848.error_actions import unsupported_error
from groupkit.group.kip848.heartbeat import (
    QuietAnswer,
    SentFields,
    SubscriptionHolder,
    TopicIdPartitions,
    leave_request,
)
from groupkit.group.kip848.reconciler import Reconciler, Step
from groupkit.group.kip848.states import (
    IN_GROUP,
    TERMINAL_STATES,
    MemberState,
    Trigger,
    next_state,
)
from groupkit.group.outputs import (
    Assigned,
    CommitFence,
    Coordinator,
    CoordinatorLost,
    Destination,
    Fatal,
    Left,
    Lost,
    Output,
    Rebalancing,
    Revoked,
    Send,
)
from groupkit.protocol.messages.consumer_group import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
)
from groupkit.protocol.schema import Request, Response

S = MemberState
T = Trigger

#: The name ``Assigned.protocol_name`` carries when the broker chose the assignor.
BROKER_ASSIGNOR = "broker"


def new_member_id() -> str:
    """A member id as the Java client makes one (KIP-1082: the member chooses it): a random
    uuid in URL-safe base64 without padding, 22 characters."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


@attrs.define
class Membership:
    """The record of one consumer-protocol member and the moves on it (see the module docstring).

    ``subscription`` is shared with the application (which sets it); ``remote_assignor`` is
    the server-side assignor to ask for (None: the broker's default). ``jitter`` and
    ``make_member_id`` are the random sources (tests pass fixed ones).
    """

    config: GroupConfig
    subscription: SubscriptionHolder
    remote_assignor: str | None = None
    jitter: Callable[[], float] = random_jitter
    make_member_id: Callable[[], str] = new_member_id

    _state: MemberState = attrs.field(init=False, default=S.UNSUBSCRIBED)
    _started: bool = attrs.field(init=False, default=False)
    _outputs: list[Output] = attrs.field(init=False, factory=list)
    _backoff: Backoff = attrs.field(init=False)
    _next_token: int = attrs.field(init=False, default=1)
    _member_id: str = attrs.field(init=False, default="")
    _epoch: int = attrs.field(init=False, default=JOIN_GROUP_MEMBER_EPOCH)
    _poll_deadline: float | None = attrs.field(init=False, default=None)

    # The coordinator, found beside the membership as Java's CoordinatorRequestManager does.
    _coordinator: Coordinator | None = attrs.field(init=False, default=None)
    _find_token: int | None = attrs.field(init=False, default=None)
    _find_failures: int = attrs.field(init=False, default=0)
    _find_at: float = attrs.field(init=False, default=0.0)

    # Heartbeats: the one in flight, the interval the coordinator gave, the back-off.
    _heartbeat_token: int | None = attrs.field(init=False, default=None)
    _leave_token: int | None = attrs.field(init=False, default=None)
    _interval_s: float = attrs.field(init=False, default=0.0)
    _beat_at: float = attrs.field(init=False, default=0.0)
    _beat_failures: int = attrs.field(init=False, default=0)
    _sent: SentFields = attrs.field(init=False, factory=SentFields)

    # Assignments (target, reconciled, held) and topic names; Metadata asked for the names.
    _rec: Reconciler = attrs.field(init=False, factory=Reconciler)
    _metadata_token: int | None = attrs.field(init=False, default=None)
    _metadata_failures: int = attrs.field(init=False, default=0)
    _metadata_at: float = attrs.field(init=False, default=0.0)
    _metadata_all: bool = attrs.field(init=False, default=False)

    _fence: CommitFence | None = attrs.field(init=False, default=None)

    def __attrs_post_init__(self) -> None:
        self._backoff = Backoff(
            self.config.retry_backoff_ms, self.config.retry_backoff_max_ms, self.jitter)
        self._member_id = self.make_member_id()


    # --- reconciliation (Java's AbstractMembershipManager; the bookkeeping is the Reconciler's)

    def _assignment_received(self, partitions: TopicIdPartitions) -> None:
        if self._rec.receive(partitions):
            if self._state is not S.RECONCILING:
                self._outputs.append(Rebalancing("the coordinator sent a new target assignment"))
            self._go(T.ASSIGNMENT_RECEIVED)
            self._reconcile()
        elif self._state in (S.RECONCILING, S.JOINING):
            self._go(T.NOTHING_TO_RECONCILE)

    def _reconcile(self) -> None:
        self._take(self._rec.reconcile(self._epoch, self._member_id, self._assignor_name))

    def _take(self, step: tuple[Step, Revoked | Assigned | None]) -> None:
        kind, output = step
        if output is not None:
            self._outputs.append(output)
        if kind is Step.RECONCILED:
            self._go(T.RECONCILED)

    @property
    def _assignor_name(self) -> str:
        return self.remote_assignor or BROKER_ASSIGNOR

    # --- membership moves ----------------------------------------------------------------------

    def _join(self) -> None:
        self._go(T.SUBSCRIBED)
        self._rejoin_as_new_epoch()

    def _rejoin_as_new_epoch(self) -> None:
        """Java's ``transitionToJoining``: epoch 0, every field in the next heartbeat, sent now."""
        self._epoch = JOIN_GROUP_MEMBER_EPOCH
        self._rec.forget_target()
        self._sent.reset()
        self._beat_at = 0.0
        self._outputs.append(Rebalancing("joining the group"))

    def _release(self, reason: str) -> None:
        """Give up everything without an orderly revoke: the partitions are Lost."""
        held = self._rec.release()
        if held:
            self._outputs.append(Lost(held, reason))

    def _fenced(self, reason: str) -> None:
        """FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID: lose everything, rejoin with epoch 0 and
        the same member id (Java's ``transitionToFenced``; it keeps the member id)."""
        self._go(T.FENCED)
        self._epoch = JOIN_GROUP_MEMBER_EPOCH
        self._release(reason)
        self._go(T.LOST_RELEASED)
        self._rejoin_as_new_epoch()

    def _coordinator_lost(self, now: float, reason: str) -> None:
        if self._coordinator is not None:
            self._outputs.append(CoordinatorLost(reason))
        self._coordinator = None
        if self._heartbeat_token is not None:
            self._heartbeat_token = None  # its answer, should it come, is ignored

    def _send_leave(self, expect_answer: bool = True) -> None:
        static = self.config.is_static and not self.config.leave_group_on_close
        self._epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH if static else LEAVE_GROUP_MEMBER_EPOCH
        self._heartbeat_token = None
        self._sent.reset()
        token = self._send(leave_request(self.config, self._member_id, self._epoch),
                           heartbeat=True)
        if expect_answer:
            self._leave_token = token

    def _finish_leave(self, reason: str) -> None:
        self._heartbeat_token = None
        self._leave_token = None
        self._rec.release()
        self._go(T.LEAVE_FINISHED if self._state is S.LEAVING else T.STOPPED)
        self._outputs.append(Left(reason))

    def _fail(self, error: GroupkitError) -> None:
        if self._state in TERMINAL_STATES:
            return
        if self._state in IN_GROUP or self._state is S.FENCED:
            self._release(f"the member stopped: {error}")
        self._heartbeat_token = None
        self._leave_token = None
        self._go(T.FAILED)
        self._outputs.append(Fatal(error))

    def _unsupported(self, error: BaseException) -> UnsupportedVersionError:
        return unsupported_error(self._coordinator, error)

    # --- sending ------------------------------------------------------------------------------

    def _send(self, request: Request, *, destination: Destination = Destination.COORDINATOR,
              heartbeat: bool = False, quiet_if: QuietAnswer | None = None) -> int:
        token = self._next_token
        self._next_token = token + 1
        self._outputs.append(Send(token, request, destination, heartbeat=heartbeat,
                                  answer_may_wait=quiet_if is not None, quiet_if=quiet_if,
                                  stands_every=0.0 if quiet_if is None else quiet_if.interval_s))
        return token

    def _go(self, trigger: Trigger) -> None:
        self._state = next_state(self._state, trigger)

    def _wrong_type(self, token: int, response: Response) -> IllegalStateError:
        return IllegalStateError(
            f"request {token} got a {type(response).__name__}, which answers another request;"
            " pass the response decoded for that request")
