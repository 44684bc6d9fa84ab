"""What a classic member does about a request its coordinator answered with an error code.

The error table (``error_actions.action_for``) names an action for the code, ``states.REACTIONS``
the member's reaction to that action, and ``ReactingMember._react`` carries the reaction out:
back off, rejoin, rediscover the coordinator, refuse a commit, stop. For an OffsetCommit or
OffsetFetch it also returns the runtime's ``RequestDecision`` (retry after a delay, or fail).
"""

from __future__ import annotations

import attrs

from groupkit.errors import CommitFailedError, error_for_code
from groupkit.group.error_actions import Action, Api, action_for
from groupkit.group.membership import Membership
from groupkit.group.outputs import RequestDecision
from groupkit.group.states import ACTIVE_STATES, MemberState, Reaction, reaction_for

S = MemberState
R = Reaction


@attrs.frozen
class Failure:
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


class ReactingMember(Membership):
    """A member that carries out ``states.REACTIONS`` (the response handlers build on it)."""

    __slots__ = ()

    def _react(self, failure: Failure, now: float) -> RequestDecision:
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
