"""The one table from (API, broker error code) to what a group member does about it.

Every error code that FindCoordinator, JoinGroup, SyncGroup, Heartbeat, OffsetCommit and
OffsetFetch can return has a row here, with the reference client's decision. LeaveGroup has no
rows: its answer, whatever the code, completes the leave (the Java client resets the member
before it sends LeaveGroup and only logs a failed answer).
Codes without a row (a newer broker's codes) get ``DEFAULT_ACTIONS``: group requests back off
when the code is retriable and stop otherwise; offset requests fail the single request.
"""

from __future__ import annotations

import enum

from groupkit.errors import error_for_code


class Api(enum.Enum):
    """The requests whose errors a group member must act on."""

    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    SYNC_GROUP = 14
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9


class Action(enum.Enum):
    """What the member does when a request fails with a code."""

    BACK_OFF = "back off"
    """Retry the same step after the exponential retry back-off."""
    REDISCOVER = "rediscover coordinator"
    """Forget the coordinator, find it again, then retry (a join in progress restarts)."""
    ADOPT_MEMBER_ID = "rejoin with the given member id"
    """Send JoinGroup again at once, carrying the member id the coordinator just handed out."""
    REJOIN = "rejoin"
    """Keep the generation and member id, send JoinGroup at once."""
    RESET_GENERATION = "reset generation"
    """Forget the generation (the assignment is lost), keep the member id, rejoin at once."""
    RESET_MEMBER = "reset generation and member id"
    """Forget generation and member id (the assignment is lost), rejoin at once as a new member."""
    FAIL_REQUEST = "fail the request"
    """The one request fails with the broker error; the membership is not affected."""
    FATAL = "fatal"
    """Retrying cannot help: the member stops and the application gets the error."""


# Broker error codes by their Kafka names (the protocol guide's error table).
UNKNOWN_SERVER_ERROR = -1
UNKNOWN_TOPIC_OR_PARTITION = 3
REQUEST_TIMED_OUT = 7
OFFSET_METADATA_TOO_LARGE = 12
NETWORK_EXCEPTION = 13
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
INVALID_COMMIT_OFFSET_SIZE = 28
TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
UNSUPPORTED_VERSION = 35
INVALID_REQUEST = 42
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79
GROUP_MAX_SIZE_REACHED = 81
FENCED_INSTANCE_ID = 82
UNSTABLE_OFFSET_COMMIT = 88

A = Action

# The coordinator moved, is not there yet, or the answer was lost on the way.
_COORDINATOR_GONE = {
    COORDINATOR_NOT_AVAILABLE: A.REDISCOVER,
    NOT_COORDINATOR: A.REDISCOVER,
    REQUEST_TIMED_OUT: A.REDISCOVER,
    NETWORK_EXCEPTION: A.REDISCOVER,
}
# A member's identity or generation is no longer the group's.
_MEMBERSHIP = {
    ILLEGAL_GENERATION: A.RESET_GENERATION,
    UNKNOWN_MEMBER_ID: A.RESET_MEMBER,
    REBALANCE_IN_PROGRESS: A.REJOIN,
}
# No retry can fix these: configuration, authorization, or a newer member took our instance id.
_STOP = {
    INVALID_GROUP_ID: A.FATAL,
    GROUP_AUTHORIZATION_FAILED: A.FATAL,
    FENCED_INSTANCE_ID: A.FATAL,
    UNSUPPORTED_VERSION: A.FATAL,
    INVALID_REQUEST: A.FATAL,
}

#: api -> {error code -> action}. The only place error codes are interpreted.
ERROR_ACTIONS: dict[Api, dict[int, Action]] = {
    Api.FIND_COORDINATOR: {
        COORDINATOR_LOAD_IN_PROGRESS: A.BACK_OFF,
        COORDINATOR_NOT_AVAILABLE: A.BACK_OFF,
        NOT_COORDINATOR: A.BACK_OFF,
        REQUEST_TIMED_OUT: A.BACK_OFF,
        NETWORK_EXCEPTION: A.BACK_OFF,
        UNKNOWN_SERVER_ERROR: A.BACK_OFF,
        GROUP_AUTHORIZATION_FAILED: A.FATAL,
        INVALID_REQUEST: A.FATAL,
        UNSUPPORTED_VERSION: A.FATAL,
    },
    Api.JOIN_GROUP: {
        COORDINATOR_LOAD_IN_PROGRESS: A.BACK_OFF,
        UNKNOWN_SERVER_ERROR: A.BACK_OFF,
        **_COORDINATOR_GONE,
        **_MEMBERSHIP,
        MEMBER_ID_REQUIRED: A.ADOPT_MEMBER_ID,
        **_STOP,
        INCONSISTENT_GROUP_PROTOCOL: A.FATAL,
        INVALID_SESSION_TIMEOUT: A.FATAL,
        GROUP_MAX_SIZE_REACHED: A.FATAL,
    },
    Api.SYNC_GROUP: {
        COORDINATOR_LOAD_IN_PROGRESS: A.BACK_OFF,
        UNKNOWN_SERVER_ERROR: A.BACK_OFF,
        **_COORDINATOR_GONE,
        **_MEMBERSHIP,
        **_STOP,
        INCONSISTENT_GROUP_PROTOCOL: A.FATAL,
    },
    Api.HEARTBEAT: {
        COORDINATOR_LOAD_IN_PROGRESS: A.BACK_OFF,
        UNKNOWN_SERVER_ERROR: A.BACK_OFF,
        **_COORDINATOR_GONE,
        **_MEMBERSHIP,
        **_STOP,
    },
    Api.OFFSET_COMMIT: {
        COORDINATOR_LOAD_IN_PROGRESS: A.BACK_OFF,
        UNKNOWN_TOPIC_OR_PARTITION: A.BACK_OFF,
        **_COORDINATOR_GONE,
        **_MEMBERSHIP,
        OFFSET_METADATA_TOO_LARGE: A.FAIL_REQUEST,
        INVALID_COMMIT_OFFSET_SIZE: A.FAIL_REQUEST,
        TOPIC_AUTHORIZATION_FAILED: A.FAIL_REQUEST,
        INVALID_GROUP_ID: A.FAIL_REQUEST,
        UNSUPPORTED_VERSION: A.FAIL_REQUEST,
        INVALID_REQUEST: A.FAIL_REQUEST,
        UNKNOWN_SERVER_ERROR: A.FAIL_REQUEST,
        GROUP_AUTHORIZATION_FAILED: A.FATAL,
        FENCED_INSTANCE_ID: A.FATAL,
    },
    Api.OFFSET_FETCH: {
        COORDINATOR_LOAD_IN_PROGRESS: A.BACK_OFF,
        UNSTABLE_OFFSET_COMMIT: A.BACK_OFF,
        **_COORDINATOR_GONE,
        UNKNOWN_TOPIC_OR_PARTITION: A.FAIL_REQUEST,
        TOPIC_AUTHORIZATION_FAILED: A.FAIL_REQUEST,
        GROUP_ID_NOT_FOUND: A.FAIL_REQUEST,
        INVALID_GROUP_ID: A.FAIL_REQUEST,
        UNSUPPORTED_VERSION: A.FAIL_REQUEST,
        INVALID_REQUEST: A.FAIL_REQUEST,
        UNKNOWN_SERVER_ERROR: A.FAIL_REQUEST,
        GROUP_AUTHORIZATION_FAILED: A.FATAL,
    },
}

#: What a code without a row means, per API: ``None`` means "decided by the code's retriability".
DEFAULT_ACTIONS: dict[Api, Action | None] = {
    Api.FIND_COORDINATOR: None,
    Api.JOIN_GROUP: None,
    Api.SYNC_GROUP: None,
    Api.HEARTBEAT: None,
    Api.OFFSET_COMMIT: A.FAIL_REQUEST,
    Api.OFFSET_FETCH: A.FAIL_REQUEST,
}


def action_for(api: Api, code: int) -> Action:
    """The action for a non-zero ``code`` returned by ``api``."""
    action = ERROR_ACTIONS[api].get(code)
    if action is not None:
        return action
    default = DEFAULT_ACTIONS[api]
    if default is not None:
        return default
    return A.BACK_OFF if error_for_code(code).retriable else A.FATAL
