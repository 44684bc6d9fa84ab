"""What a consumer-protocol member does about an error code its coordinator answered.

The error table (``error_actions``) names an action for each code of ConsumerGroupHeartbeat,
OffsetCommit and OffsetFetch; ``ReactingMember`` carries it out: back off, rediscover the
coordinator, be fenced and rejoin with epoch 0, or stop; for an OffsetCommit or OffsetFetch it
returns the runtime's ``RequestDecision`` (retry after a delay, or fail).
"""

from __future__ import annotations

from groupkit.errors import BrokerError, CommitFailedError, ErrorCode, error_for_code
from groupkit.group.kip848.error_actions import Action, heartbeat_action
from groupkit.group.kip848.membership import Membership
from groupkit.group.outputs import RequestDecision


class ReactingMember(Membership):
    """A member that carries out the error table's actions (the answer handlers build on it)."""

    __slots__ = ()

    def _on_heartbeat_error(self, code: int, message: str | None, now: float) -> None:
        # Java's onErrorResponse: every error resets the sent fields (the next heartbeat is a
        # full one) and counts a failed attempt before the code decides the rest.
        self._sent.reset()
        self._beat_failures += 1
        self._beat_at = now + self._backoff.delay(self._beat_failures)
        action = heartbeat_action(code)
        error = error_for_code(code)(message or None)
        match action:
            case Action.REDISCOVER:
                self._beat_failures = 0
                self._beat_at = now
                self._coordinator_lost(now, f"ConsumerGroupHeartbeat answered {error.name}")
            case Action.BACK_OFF:
                pass
            case Action.FENCE:
                self._beat_failures = 0
                self._beat_at = now
                self._fenced(f"ConsumerGroupHeartbeat answered {error.name} (member"
                             f" {self._member_id}, epoch {self._epoch})")
            case _:
                if code == ErrorCode.UNSUPPORTED_VERSION:
                    error = self._unsupported(error)
                self._fail(error)

    # --- commits and fetches -------------------------------------------------------------------

    def _request_decision(self, action: Action, error: BrokerError, attempt: int,
                          now: float) -> RequestDecision:
        match action:
            case Action.BACK_OFF:
                return RequestDecision(action, self._backoff.delay(attempt), None)
            case Action.REDISCOVER:
                if self._coordinator is not None:
                    self._coordinator_lost(now, f"a commit or offset fetch answered {error.name}")
                return RequestDecision(action, self._backoff.delay(attempt), None)
            case Action.REFUSE_COMMIT:
                return RequestDecision(action, None, CommitFailedError(
                    f"the commit was refused ({error}); the member's epoch is no longer the"
                    " group's"))
            case _:
                return RequestDecision(action, None, error)
