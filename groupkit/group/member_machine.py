"""What every membership machine offers the runtime: the one interface the group runner drives.

Each membership protocol is a sans-IO machine with its own state table: the classic one
(``GroupMachine``: JoinGroup/SyncGroup/Heartbeat), the consumer group protocol of KIP-848
(``ConsumerGroupMachine``: ConsumerGroupHeartbeat) and share groups (KIP-932). They speak the
same outputs (``groupkit.group.outputs``), so one runner drives any of them and nothing above it
knows which: what differs (who computes the assignment, how a commit is fenced, which requests
go out) is a property of the machine, never a branch in the runner.

The runner calls ``start`` once, feeds every input with ``now`` (monotonic seconds), calls
``poll(now)`` after each input and at ``next_deadline()``, and carries out the outputs: it
sends ``Send`` requests and reports their answers with ``on_response``/``on_request_failed``,
handles the runtime outputs (``RUNTIME_OUTPUTS``) itself and queues the rest for the
application, which answers ``Revoked`` with ``revocation_done`` and ``Assigned`` with
``assignment_applied``.
"""

from __future__ import annotations

import enum
from typing import Protocol

from groupkit.group.config import GroupConfig
from groupkit.group.outputs import CommitFence, Output, RequestDecision
from groupkit.protocol.schema import Response


class MemberMachine(Protocol):
    """One member of one group, driven by one runtime thread (not thread-safe)."""

    @property
    def config(self) -> GroupConfig:
        """The member's settings (the runner reads ``group_id`` from them)."""
        ...

    @property
    def state(self) -> enum.Enum:
        """Where the member stands, a value of the machine's own state enum."""
        ...

    @property
    def member_id(self) -> str:
        """The member id ("" before the member has one)."""
        ...

    @property
    def generation_id(self) -> int:
        """The generation (classic) or member epoch (consumer protocol) the member is in."""
        ...

    @property
    def finished(self) -> bool:
        """Whether the member reached a terminal state (closed or fatal): no input moves it."""
        ...

    @property
    def rejoins_on_poll(self) -> bool:
        """Whether the member waits for the application's next poll to rejoin (it left after
        the poll interval expired): the runner then wakes as soon as the application polls."""
        ...

    @property
    def heartbeat_due(self) -> float | None:
        """When the next heartbeat goes out once the one in flight is answered; None when the
        member does not heartbeat or its answers are never deferred (``Send.answer_may_wait``)."""
        ...

    def commit_fence(self) -> CommitFence:
        """The identity an OffsetCommit carries now, or CommitFailedError (no round trip) when
        the coordinator would refuse it."""
        ...

    def start(self, now: float) -> None:
        """Begin: find the coordinator and join. Called once."""
        ...

    def poll(self, now: float) -> list[Output]:
        """Fire the timers due at ``now``, send what is due, and return every pending output."""
        ...

    def next_deadline(self) -> float | None:
        """When ``poll`` must next run without an input (-inf: now; None: only an input)."""
        ...

    def on_response(self, token: int, response: Response, now: float) -> None:
        """The answer to the ``Send`` with ``token`` arrived."""
        ...

    def on_request_failed(self, token: int, error: BaseException, now: float) -> None:
        """The ``Send`` with ``token`` got no answer (connection lost, timed out, refused)."""
        ...

    def heartbeat_stood(self, token: int, sent_at: float, answered_at: float) -> None:
        """The heartbeat ``token`` (a ``Send`` with ``stands_every``) was answered as the last one
        at ``answered_at`` and went out again, the same, at ``sent_at``: it stays in flight.
        Called now and then while the runtime sends it by itself (at the latest by the
        deadline the machine gives), and before its next answer is reported; ignored when
        ``token`` is not the heartbeat in flight."""
        ...

    def application_polled(self, now: float) -> None:
        """The application polled: the poll interval starts again (a member waiting for it
        rejoins)."""
        ...

    def revocation_done(self, now: float) -> None:
        """The application gave up what a ``Revoked`` listed (and committed for it)."""
        ...

    def assignment_applied(self, now: float) -> None:
        """The application took what an ``Assigned`` gave (its listener ran)."""
        ...

    def request_rejoin(self, now: float, reason: str) -> None:
        """The application changed something the group must hear about (the subscription, a
        cooperative revoke's second round)."""
        ...

    def leave(self, now: float, reason: str) -> None:
        """Close: leave the group (the application has released and committed already)."""
        ...

    def on_commit_error(self, fence: CommitFence, code: int, now: float,
                        attempt: int = 1) -> RequestDecision:
        """Decide about an OffsetCommit sent with ``fence`` that failed with ``code``."""
        ...

    def on_offset_fetch_error(self, code: int, now: float, attempt: int = 1) -> RequestDecision:
        """Decide about an OffsetFetch that failed with ``code``."""
        ...
