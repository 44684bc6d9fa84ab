"""A member whose request cannot be sent or served at the version in use stops with the error
that says why, once, instead of rediscovering its coordinator and retrying forever."""

from __future__ import annotations

import pytest

from groupkit.errors import (
    FeatureUnsupportedError,
    FieldVersionError,
    GroupkitError,
    KafkaConnectionError,
    RequestDroppedError,
)
from groupkit.group import Fatal, MemberState, Send
from groupkit.protocol.messages.group import JoinGroupRequest, LeaveGroupRequest
from tests.group.group_driver import Driver

S = MemberState


@pytest.mark.parametrize("error", [
    RequestDroppedError("the broker closed the connection right after JoinGroup v6, 3 times"),
    FeatureUnsupportedError("static membership needs JoinGroup v5"),
    FieldVersionError("JoinGroupRequest.x is not carried by version 1"),
], ids=lambda e: type(e).__name__)
def test_a_join_that_no_retry_can_send_stops_the_member(error: GroupkitError) -> None:
    d = Driver.make()
    d.machine.start(d.now)
    d.poll()
    d.found()
    outs = d.fail(JoinGroupRequest, error)
    assert d.machine.state is S.FATAL
    assert [o for o in outs if isinstance(o, Fatal)] == [Fatal(error)]
    assert not [o for o in outs if isinstance(o, Send)]


def test_a_lost_connection_is_still_retried() -> None:
    d = Driver.make()
    d.machine.start(d.now)
    d.poll()
    d.found()
    d.fail(JoinGroupRequest, KafkaConnectionError("closed"))
    assert d.machine.state is S.COORDINATOR_UNKNOWN


def test_a_leave_that_cannot_be_sent_still_finishes_the_leave() -> None:
    d = Driver.make()
    d.stable()
    d.machine.leave(d.now, "closing")
    d.poll()
    d.fail(LeaveGroupRequest, RequestDroppedError("dropped LeaveGroup v4"))
    assert d.machine.state is S.CLOSED
    assert not [o for o in d.seen if isinstance(o, Fatal)]


def test_the_new_group_protocols_name_the_release_they_need() -> None:
    from groupkit.group.kip848.error_actions import unsupported_error

    missing = unsupported_error(None, KafkaConnectionError("no ConsumerGroupHeartbeat"))
    pattern = unsupported_error(None, FieldVersionError("subscribed_topic_regex v0"))
    for error in (missing, pattern):
        assert isinstance(error, FeatureUnsupportedError) and error.release == "4.0"
    assert "group_protocol='classic'" in str(missing)
