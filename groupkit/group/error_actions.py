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

from groupkit.errors import ApiKey, ErrorCode, error_for_code


class Api(enum.Enum):
    """The requests whose errors a group member must act on."""

    FIND_COORDINATOR = ApiKey.FIND_COORDINATOR
    JOIN_GROUP = ApiKey.JOIN_GROUP
    HEARTBEAT = ApiKey.HEARTBEAT
    SYNC_GROUP = ApiKey.SYNC_GROUP
    OFFSET_COMMIT = ApiKey.OFFSET_COMMIT
    OFFSET_FETCH = ApiKey.OFFSET_FETCH


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


A = Action
E = ErrorCode

# The coordinator moved, is not there yet, or the answer was lost on the way.
_COORDINATOR_GONE: dict[int, Action] = {
    E.COORDINATOR_NOT_AVAILABLE: A.REDISCOVER,
    E.NOT_COORDINATOR: A.REDISCOVER,
    E.REQUEST_TIMED_OUT: A.REDISCOVER,
    E.NETWORK_EXCEPTION: A.REDISCOVER,
}
# A member's identity or generation is no longer the group's.
_MEMBERSHIP: dict[int, Action] = {
    E.ILLEGAL_GENERATION: A.RESET_GENERATION,
    E.UNKNOWN_MEMBER_ID: A.RESET_MEMBER,
    E.REBALANCE_IN_PROGRESS: A.REJOIN,
}
# No retry can fix these: configuration, authorization, or a newer member took our instance id.
_STOP: dict[int, Action] = {
    E.INVALID_GROUP_ID: A.FATAL,
    E.GROUP_AUTHORIZATION_FAILED: A.FATAL,
    E.FENCED_INSTANCE_ID: A.FATAL,
    E.UNSUPPORTED_VERSION: A.FATAL,
    E.INVALID_REQUEST: A.FATAL,
}

#: api -> {error code -> action}. The only place error codes are interpreted.
ERROR_ACTIONS: dict[Api, dict[int, Action]] = {
    Api.FIND_COORDINATOR: {
        E.COORDINATOR_LOAD_IN_PROGRESS: A.BACK_OFF,
        E.COORDINATOR_NOT_AVAILABLE: A.BACK_OFF,
        E.NOT_COORDINATOR: A.BACK_OFF,
        E.REQUEST_TIMED_OUT: A.BACK_OFF,
        E.NETWORK_EXCEPTION: A.BACK_OFF,
        E.UNKNOWN_SERVER_ERROR: A.BACK_OFF,
        E.GROUP_AUTHORIZATION_FAILED: A.FATAL,
        E.INVALID_REQUEST: A.FATAL,
        E.UNSUPPORTED_VERSION: A.FATAL,
    },
    Api.JOIN_GROUP: {
        E.COORDINATOR_LOAD_IN_PROGRESS: A.BACK_OFF,
        E.UNKNOWN_SERVER_ERROR: A.BACK_OFF,
        **_COORDINATOR_GONE,
        **_MEMBERSHIP,
        E.MEMBER_ID_REQUIRED: A.ADOPT_MEMBER_ID,
        **_STOP,
        E.INCONSISTENT_GROUP_PROTOCOL: A.FATAL,
        E.INVALID_SESSION_TIMEOUT: A.FATAL,
        E.GROUP_MAX_SIZE_REACHED: A.FATAL,
    },
    Api.SYNC_GROUP: {
        E.COORDINATOR_LOAD_IN_PROGRESS: A.BACK_OFF,
        E.UNKNOWN_SERVER_ERROR: A.BACK_OFF,
        **_COORDINATOR_GONE,
        **_MEMBERSHIP,
        **_STOP,
        E.INCONSISTENT_GROUP_PROTOCOL: A.FATAL,
    },
    Api.HEARTBEAT: {
        E.COORDINATOR_LOAD_IN_PROGRESS: A.BACK_OFF,
        E.UNKNOWN_SERVER_ERROR: A.BACK_OFF,
        **_COORDINATOR_GONE,
        **_MEMBERSHIP,
        **_STOP,
    },
    Api.OFFSET_COMMIT: {
        E.COORDINATOR_LOAD_IN_PROGRESS: A.BACK_OFF,
        E.UNKNOWN_TOPIC_OR_PARTITION: A.BACK_OFF,
        **_COORDINATOR_GONE,
        **_MEMBERSHIP,
        E.OFFSET_METADATA_TOO_LARGE: A.FAIL_REQUEST,
        E.INVALID_COMMIT_OFFSET_SIZE: A.FAIL_REQUEST,
        E.TOPIC_AUTHORIZATION_FAILED: A.FAIL_REQUEST,
        E.INVALID_GROUP_ID: A.FAIL_REQUEST,
        E.UNSUPPORTED_VERSION: A.FAIL_REQUEST,
        E.INVALID_REQUEST: A.FAIL_REQUEST,
        E.UNKNOWN_SERVER_ERROR: A.FAIL_REQUEST,
        E.GROUP_AUTHORIZATION_FAILED: A.FATAL,
        E.FENCED_INSTANCE_ID: A.FATAL,
    },
    Api.OFFSET_FETCH: {
        E.COORDINATOR_LOAD_IN_PROGRESS: A.BACK_OFF,
        E.UNSTABLE_OFFSET_COMMIT: A.BACK_OFF,
        **_COORDINATOR_GONE,
        E.UNKNOWN_TOPIC_OR_PARTITION: A.FAIL_REQUEST,
        E.TOPIC_AUTHORIZATION_FAILED: A.FAIL_REQUEST,
        E.GROUP_ID_NOT_FOUND: A.FAIL_REQUEST,
        E.INVALID_GROUP_ID: A.FAIL_REQUEST,
        E.UNSUPPORTED_VERSION: A.FAIL_REQUEST,
        E.INVALID_REQUEST: A.FAIL_REQUEST,
        E.UNKNOWN_SERVER_ERROR: A.FAIL_REQUEST,
        E.GROUP_AUTHORIZATION_FAILED: A.FATAL,
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
