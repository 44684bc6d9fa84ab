"""What a share-group member does about each error code of a ShareGroupHeartbeat answer.

After the Java client's AbstractHeartbeatRequestManager.onErrorResponse (as
ShareHeartbeatRequestManager uses it): the coordinator moved or is away -> find it again; it is
loading -> back off; the member is unknown to it or its epoch fenced -> rejoin with epoch 0
and the same member id; a topic it may not read -> tell the application and carry on; anything
else (authorization of the group, an invalid request, a full group, no such API) -> stop.
"""

from __future__ import annotations

import enum

from groupkit.errors import ErrorCode


class ShareAction(enum.Enum):
    """One reaction to a failed heartbeat; each value is its description."""

    REDISCOVER = "Forget the coordinator, find it again, heartbeat at once."
    BACK_OFF = "Send the heartbeat again after the retry back-off."
    FENCE = "The partitions are gone; rejoin now with epoch 0 and the same member id."
    REPORT = "Tell the application (an error from its next poll) and heartbeat after back-off."
    FATAL = "Stop the member; the application sees the error."


E = ErrorCode
A = ShareAction

#: error code -> action; a code not listed is FATAL (Java: an unexpected error is fatal).
HEARTBEAT_ACTIONS: dict[int, ShareAction] = {
    E.NOT_COORDINATOR: A.REDISCOVER,
    E.COORDINATOR_NOT_AVAILABLE: A.REDISCOVER,
    E.COORDINATOR_LOAD_IN_PROGRESS: A.BACK_OFF,
    E.REQUEST_TIMED_OUT: A.BACK_OFF,
    E.NETWORK_EXCEPTION: A.BACK_OFF,
    E.UNKNOWN_MEMBER_ID: A.FENCE,
    E.FENCED_MEMBER_EPOCH: A.FENCE,
    E.TOPIC_AUTHORIZATION_FAILED: A.REPORT,
}


def heartbeat_action(code: int) -> ShareAction:
    """The action for a ShareGroupHeartbeat answered with ``code`` (not 0)."""
    return HEARTBEAT_ACTIONS.get(code, ShareAction.FATAL)
