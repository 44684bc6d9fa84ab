"""A consumer-protocol member (KIP-848) whose request cannot be sent or served at the version in
use stops with the error that says why, once, as the classic member does
(tests/group/test_group_versions.py), instead of backing off and asking again forever."""

from __future__ import annotations

import uuid

import pytest

from groupkit.errors import (
    FeatureUnsupportedError,
    FieldVersionError,
    GroupkitError,
    KafkaConnectionError,
    RequestDroppedError,
)
from groupkit.group import GroupConfig
from groupkit.group.kip848 import ConsumerGroupMachine, MemberState, SubscriptionHolder
from groupkit.group.outputs import Fatal, Output, Send
from groupkit.protocol.messages.consumer_group import (
    ConsumerGroupHeartbeatAssignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatTopicPartitions,
)
from groupkit.protocol.messages.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from groupkit.protocol.messages.metadata import MetadataRequest

S = MemberState
TOPIC_ID = uuid.UUID(int=7)

ERRORS = [
    RequestDroppedError("the broker closed the connection right after it, 3 times"),
    FeatureUnsupportedError("api_version='0.10' pins a release without it"),
    FieldVersionError("a field is not carried by this version"),
]


def _started() -> tuple[ConsumerGroupMachine, list[Output]]:
    holder = SubscriptionHolder()
    holder.subscribe(["t"])
    machine = ConsumerGroupMachine(
        GroupConfig(group_id="g", retry_backoff_ms=100, retry_backoff_max_ms=1_000), holder,
        jitter=lambda: 0.5, make_member_id=lambda: "me")
    machine.start(0.0)
    return machine, machine.poll(0.0)


def _sent(outs: list[Output], kind: type) -> Send:
    return next(o for o in outs if isinstance(o, Send) and isinstance(o.request, kind))


def _found(machine: ConsumerGroupMachine, outs: list[Output]) -> list[Output]:
    find = _sent(outs, FindCoordinatorRequest)
    machine.on_response(find.token, FindCoordinatorResponse(node_id=7, host="h", port=1), 0.0)
    return machine.poll(0.0)


def _reconciling(machine: ConsumerGroupMachine, outs: list[Output]) -> list[Output]:
    """Answer the join with a topic the member cannot name yet: it asks Metadata."""
    beat = _sent(outs, ConsumerGroupHeartbeatRequest)
    machine.on_response(beat.token, ConsumerGroupHeartbeatResponse(
        member_id="me", member_epoch=1, heartbeat_interval_ms=1_000,
        assignment=ConsumerGroupHeartbeatAssignment(topic_partitions=[
            ConsumerGroupHeartbeatTopicPartitions(topic_id=TOPIC_ID, partitions=[0])])), 0.0)
    return machine.poll(0.0)


def _stopped_with(machine: ConsumerGroupMachine, outs: list[Output],
                  error: GroupkitError) -> None:
    assert machine.state is S.FATAL and machine.finished
    assert [o for o in outs if isinstance(o, Fatal)] == [Fatal(error)]
    assert not [o for o in outs if isinstance(o, Send)]
    assert machine.next_deadline() is None


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
def test_a_coordinator_lookup_that_no_retry_can_send_stops_the_member(
        error: GroupkitError) -> None:
    machine, outs = _started()
    machine.on_request_failed(_sent(outs, FindCoordinatorRequest).token, error, 0.0)
    _stopped_with(machine, machine.poll(0.0), error)


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
def test_a_metadata_request_that_no_retry_can_send_stops_the_member(
        error: GroupkitError) -> None:
    machine, outs = _started()
    outs = _reconciling(machine, _found(machine, outs))
    assert machine.state is S.RECONCILING
    machine.on_request_failed(_sent(outs, MetadataRequest).token, error, 0.0)
    _stopped_with(machine, machine.poll(0.0), error)


def test_a_dropped_heartbeat_version_is_named_as_it_is_not_as_a_missing_api() -> None:
    # The broker has ConsumerGroupHeartbeat but closes the connection on the version in use:
    # its error names that version and the pin; "does not offer API 68" would be untrue.
    machine, outs = _started()
    outs = _found(machine, outs)
    dropped = RequestDroppedError("h:1 closed the connection right after"
                                  " ConsumerGroupHeartbeat v1, 3 times in a row")
    machine.on_request_failed(_sent(outs, ConsumerGroupHeartbeatRequest).token, dropped, 0.0)
    _stopped_with(machine, machine.poll(0.0), dropped)


def test_lost_connections_are_still_retried() -> None:
    machine, outs = _started()
    machine.on_request_failed(_sent(outs, FindCoordinatorRequest).token,
                              KafkaConnectionError("closed"), 0.0)
    assert machine.state is S.JOINING and not [o for o in machine.poll(0.0)
                                                if isinstance(o, Fatal)]
    retry = machine.next_deadline()
    assert retry is not None and retry > 0.0
    outs = _found(machine, machine.poll(retry))
    outs = _reconciling(machine, outs)
    machine.on_request_failed(_sent(outs, MetadataRequest).token,
                              KafkaConnectionError("closed"), 0.0)
    assert machine.state is S.RECONCILING and not machine.finished


def test_a_leave_that_cannot_be_sent_still_finishes_the_leave() -> None:
    machine, outs = _started()
    outs = _found(machine, outs)
    beat = _sent(outs, ConsumerGroupHeartbeatRequest)
    machine.on_response(beat.token, ConsumerGroupHeartbeatResponse(
        member_id="me", member_epoch=1, heartbeat_interval_ms=1_000,
        assignment=ConsumerGroupHeartbeatAssignment(topic_partitions=[])), 0.0)
    machine.poll(0.0)
    machine.leave(0.0, "closing")
    leave = _sent(machine.poll(0.0), ConsumerGroupHeartbeatRequest)
    machine.on_request_failed(leave.token, RequestDroppedError("dropped"), 0.0)
    outs = machine.poll(0.0)
    assert machine.state is S.CLOSED
    assert not [o for o in outs if isinstance(o, Fatal)]
