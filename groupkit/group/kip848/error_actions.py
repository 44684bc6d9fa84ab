"""The one table from (request, broker error code) to what a consumer-protocol member does.

ConsumerGroupHeartbeat rows follow the Java client's AbstractHeartbeatRequestManager
(``onErrorResponse``) and ConsumerHeartbeatRequestManager (``handleSpecificError``); the
OffsetCommit and OffsetFetch rows follow its CommitRequestManager. FindCoordinator shares the
classic member's rows (``groupkit.group.error_actions``). A code without a row stops the member
on a heartbeat (Java: "unexpected error ... fatal") and fails the one commit or fetch.
"""

from __future__ import annotations

import enum

from groupkit.errors import (
    ErrorCode,
    FeatureUnsupportedError,
    FieldVersionError,
    RequestDroppedError,
    UnsupportedVersionError,
)
from groupkit.group.outputs import Coordinator


class Action(enum.Enum):
    """What a consumer-protocol member does about an error code (``DESCRIPTIONS`` says more)."""

    BACK_OFF = "retry after the back-off"
    REDISCOVER = "rediscover the coordinator"
    FENCE = "fenced: lose the partitions and rejoin with epoch 0"
    RETRY_IF_NEWER_EPOCH = "retry with a newer epoch, else refuse"
    REFUSE_COMMIT = "refuse the commit"
    FAIL_REQUEST = "fail the request"
    FATAL = "fatal"


#: What each action means, for the docs page drawn from this table.
DESCRIPTIONS: dict[Action, str] = {
    Action.BACK_OFF: "Send the same request again after the exponential retry back-off.",
    Action.REDISCOVER: ("Forget the coordinator and find it again; the request follows at once"
                        " when it is known."),
    Action.FENCE: ("The coordinator no longer knows this member at this epoch: its partitions"
                   " are Lost and it rejoins at once as the same member id with epoch 0"
                   " (Java's transitionToFenced)."),
    Action.RETRY_IF_NEWER_EPOCH: ("STALE_MEMBER_EPOCH: a commit made for a revocation (or an"
                                  " offset fetch) is sent again if the member has since been"
                                  " given a newer epoch, as Java retries them; otherwise"
                                  " refused."),
    Action.REFUSE_COMMIT: ("The commit fails with CommitFailedError; the heartbeat will settle"
                           " the membership."),
    Action.FAIL_REQUEST: "The one request fails with the broker error; the membership is untouched.",
    Action.FATAL: "Retrying cannot help: the member stops and the application gets the error.",
}


A = Action
E = ErrorCode

#: ConsumerGroupHeartbeat code -> action.
HEARTBEAT_ACTIONS: dict[int, Action] = {
    E.NOT_COORDINATOR: A.REDISCOVER,
    E.COORDINATOR_NOT_AVAILABLE: A.REDISCOVER,
    E.COORDINATOR_LOAD_IN_PROGRESS: A.BACK_OFF,
    E.FENCED_MEMBER_EPOCH: A.FENCE,
    E.UNKNOWN_MEMBER_ID: A.FENCE,
    E.GROUP_AUTHORIZATION_FAILED: A.FATAL,
    E.INVALID_REQUEST: A.FATAL,
    E.GROUP_MAX_SIZE_REACHED: A.FATAL,
    E.UNSUPPORTED_ASSIGNOR: A.FATAL,
    E.UNSUPPORTED_VERSION: A.FATAL,
    E.UNRELEASED_INSTANCE_ID: A.FATAL,
    E.FENCED_INSTANCE_ID: A.FATAL,
    E.INVALID_REGULAR_EXPRESSION: A.FATAL,
}

#: OffsetCommit code -> action (a commit carrying the member epoch, OffsetCommit v9+).
COMMIT_ACTIONS: dict[int, Action] = {
    E.NOT_COORDINATOR: A.REDISCOVER,
    E.COORDINATOR_NOT_AVAILABLE: A.REDISCOVER,
    E.REQUEST_TIMED_OUT: A.REDISCOVER,
    E.COORDINATOR_LOAD_IN_PROGRESS: A.BACK_OFF,
    E.UNKNOWN_TOPIC_OR_PARTITION: A.BACK_OFF,
    E.STALE_MEMBER_EPOCH: A.RETRY_IF_NEWER_EPOCH,
    E.UNKNOWN_MEMBER_ID: A.REFUSE_COMMIT,
    E.FENCED_INSTANCE_ID: A.REFUSE_COMMIT,
    # Classic-protocol codes: a broker would not send them to a consumer-protocol member.
    E.ILLEGAL_GENERATION: A.REFUSE_COMMIT,
    E.REBALANCE_IN_PROGRESS: A.REFUSE_COMMIT,
    E.OFFSET_METADATA_TOO_LARGE: A.FAIL_REQUEST,
    E.INVALID_COMMIT_OFFSET_SIZE: A.FAIL_REQUEST,
    E.TOPIC_AUTHORIZATION_FAILED: A.FAIL_REQUEST,
    E.GROUP_AUTHORIZATION_FAILED: A.FAIL_REQUEST,
}

#: OffsetFetch code -> action.
OFFSET_FETCH_ACTIONS: dict[int, Action] = {
    E.NOT_COORDINATOR: A.REDISCOVER,
    E.COORDINATOR_NOT_AVAILABLE: A.REDISCOVER,
    E.COORDINATOR_LOAD_IN_PROGRESS: A.BACK_OFF,
    E.UNSTABLE_OFFSET_COMMIT: A.BACK_OFF,
    E.STALE_MEMBER_EPOCH: A.RETRY_IF_NEWER_EPOCH,
    E.UNKNOWN_MEMBER_ID: A.FAIL_REQUEST,
    E.GROUP_AUTHORIZATION_FAILED: A.FAIL_REQUEST,
}


def heartbeat_action(code: int) -> Action:
    """What a non-zero ``code`` on a ConsumerGroupHeartbeat makes the member do."""
    return HEARTBEAT_ACTIONS.get(code, A.FATAL)


def commit_action(code: int) -> Action:
    """What a non-zero ``code`` on an OffsetCommit does to the commit."""
    return COMMIT_ACTIONS.get(code, A.FAIL_REQUEST)


def offset_fetch_action(code: int) -> Action:
    """What a non-zero ``code`` on an OffsetFetch does to the fetch."""
    return OFFSET_FETCH_ACTIONS.get(code, A.FAIL_REQUEST)


def unsupported_error(coordinator: Coordinator | None,
                      error: BaseException) -> UnsupportedVersionError:
    """What a member tells the application when its coordinator cannot take its heartbeats:
    the broker, the API it lacks and the fix (Java says "Set group.protocol=classic"). A broker
    that has the API but drops the version in use (RequestDroppedError) is named as it is: its
    error already says which version and which ``api_version`` pin avoids it."""
    if isinstance(error, RequestDroppedError):
        return error
    where = ("the group coordinator" if coordinator is None else
             f"the group coordinator {coordinator.host}:{coordinator.port}"
             f" (node {coordinator.node_id})")
    if isinstance(error, FieldVersionError):
        return FeatureUnsupportedError(
            f"{where} speaks only ConsumerGroupHeartbeat v0, which cannot carry a topic"
            " pattern (v1, Kafka 4.0+, can): subscribe to topic names, or use a newer broker"
            f" ({error})", feature="a topic pattern with group_protocol='consumer'",
            release="4.0")
    return FeatureUnsupportedError(
        f"{where} does not offer ConsumerGroupHeartbeat (API 68), which"
        " group_protocol='consumer' needs (Apache Kafka 4.0+, or 3.7+ with the new group"
        " coordinator enabled); use group_protocol='classic' with this cluster"
        f" ({error})", feature="group_protocol='consumer' (KIP-848)", release="4.0")
