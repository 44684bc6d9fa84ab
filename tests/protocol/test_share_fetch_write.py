"""ShareFetch requests written by the writer made for them (share_fetch._write_request) against
the schema's writer: the same bytes for every request it writes, and every other request
(tagged fields, v0, a renewal at v1, values that do not fit) left to the schema, with the
schema's bytes or error."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from groupkit.errors import FieldVersionError
from groupkit.protocol.messages import share_fetch
from groupkit.protocol.messages.share_fetch import (
    AcknowledgementBatch,
    ShareFetchRequest,
    ShareFetchRequestPartition,
    ShareFetchRequestTopic,
    ShareForgottenTopic,
)
from groupkit.protocol.primitives import Writer
from groupkit.protocol.schema import _plan

TOPIC = uuid.UUID("0b4c6f8e-4d7e-4d9a-9a3e-2f1b6c3d5e7f")


def _schema(request: ShareFetchRequest, version: int) -> bytes:
    w = Writer()
    _plan(ShareFetchRequest, version, True).write(w, request)
    return w.getvalue()


def _encoded(request: ShareFetchRequest, version: int) -> bytes:
    w = Writer()
    request.encode_into(w, version)
    return w.getvalue()


def _acks(*batches: tuple[int, int, list[int]], **tags: Any) -> list[AcknowledgementBatch]:
    return [AcknowledgementBatch(first_offset=a, last_offset=b, acknowledge_types=types, **tags)
            for a, b, types in batches]


REQUESTS = {
    "empty": ShareFetchRequest(),
    "a member's usual fetch": ShareFetchRequest(
        group_id="bench-share", member_id="m" * 22, share_session_epoch=7, max_wait_ms=500,
        min_bytes=1, max_bytes=52_428_800, max_records=500, batch_size=500,
        topics=[ShareFetchRequestTopic(topic_id=TOPIC, partitions=[
            ShareFetchRequestPartition(partition_index=0,
                                       acknowledgement_batches=_acks((0, 499, [1]))),
            ShareFetchRequestPartition(partition_index=3),
            ShareFetchRequestPartition(partition_index=6)])]),
    "every kind of acknowledgement": ShareFetchRequest(
        group_id="g", member_id=None, share_session_epoch=-1, max_wait_ms=0, min_bytes=0,
        topics=[ShareFetchRequestTopic(topic_id=TOPIC, partitions=[
            ShareFetchRequestPartition(partition_index=i, acknowledgement_batches=_acks(
                (0, 9, [1]), (10, 12, [0, 2, 3]), (2 ** 40, 2 ** 40 + 200, [4] * 201)))
            for i in range(70)]),
            ShareFetchRequestTopic(topic_id=uuid.uuid4(), partitions=[])],
        forgotten_topics_data=[ShareForgottenTopic(topic_id=TOPIC, partitions=[1, 2, 2 ** 31 - 1]),
                               ShareForgottenTopic(topic_id=uuid.uuid4())]),
    "names past 127 bytes, not ASCII": ShareFetchRequest(
        group_id="gröup-" * 30, member_id="ü" * 100, share_session_epoch=1, max_wait_ms=1,
        min_bytes=1),
    "v2's modes": ShareFetchRequest(group_id="g", member_id="m", share_session_epoch=2,
                                    max_wait_ms=5, min_bytes=1, share_acquire_mode=1,
                                    is_renew_ack=True),
}


@pytest.mark.parametrize(("name", "version"), [
    (name, version) for name in sorted(REQUESTS) for version in (1, 2)
    if version == 2 or not REQUESTS[name].is_renew_ack])  # a renewal at v1: refused, below
def test_a_request_writes_as_the_schema_writes_it(name: str, version: int) -> None:
    request = REQUESTS[name]
    assert bytes(share_fetch._write_request(request, version)) == _schema(request, version)
    assert _encoded(request, version) == _schema(request, version)
    assert ShareFetchRequest.decode(_encoded(request, version), version) == request


@pytest.mark.parametrize("where", ["request", "topic", "partition", "batch", "forgotten"])
def test_a_request_with_tagged_fields_goes_to_the_schema(where: str) -> None:
    tags = {5: b"later"}
    request = ShareFetchRequest(
        group_id="g", member_id="m", share_session_epoch=1, max_wait_ms=1, min_bytes=1,
        topics=[ShareFetchRequestTopic(
            topic_id=TOPIC, unknown_tags=tags if where == "topic" else {},
            partitions=[ShareFetchRequestPartition(
                partition_index=0, unknown_tags=tags if where == "partition" else {},
                acknowledgement_batches=_acks(
                    (0, 1, [1]), unknown_tags=tags if where == "batch" else {}))])],
        forgotten_topics_data=[ShareForgottenTopic(
            topic_id=TOPIC, partitions=[4], unknown_tags=tags if where == "forgotten" else {})],
        unknown_tags=tags if where == "request" else {})
    with pytest.raises(share_fetch._Unusual):
        share_fetch._write_request(request, 1)
    assert _encoded(request, 1) == _schema(request, 1)
    assert ShareFetchRequest.decode(_encoded(request, 1), 1) == request


def test_v0_and_a_renewal_at_v1_are_the_schemas(monkeypatch: pytest.MonkeyPatch) -> None:
    request = ShareFetchRequest(group_id="g", member_id="m", share_session_epoch=1,
                                max_wait_ms=1, min_bytes=1, topics=[ShareFetchRequestTopic(
                                    topic_id=TOPIC, partitions=[ShareFetchRequestPartition(
                                        partition_index=0, partition_max_bytes=1000)])])

    def refuse(request: ShareFetchRequest, version: int) -> bytearray:
        raise AssertionError("not this writer's")

    monkeypatch.setattr(share_fetch, "_write_request", refuse)
    assert _encoded(request, 0) == _schema(request, 0)  # partition_max_bytes is v0's
    with pytest.raises(FieldVersionError, match="is_renew_ack"):
        _encoded(ShareFetchRequest(is_renew_ack=True), 1)


def _outcome(write: Any) -> Any:
    try:
        return write()
    except Exception as exc:  # noqa: BLE001 - the two writers' failures are compared
        return type(exc), str(exc)


@pytest.mark.parametrize("bad", [
    {"topics": None},
    {"forgotten_topics_data": None},
    {"share_session_epoch": None},
    {"max_records": 2 ** 31},
    {"group_id": b"bytes"},
    {"topics": [ShareFetchRequestTopic(topic_id=TOPIC, partitions=[ShareFetchRequestPartition(
        partition_index=0, acknowledgement_batches=_acks((0, 1, [300])))])]},
    {"topics": [ShareFetchRequestTopic(topic_id=TOPIC, partitions=[ShareFetchRequestPartition(
        partition_index=0, acknowledgement_batches=_acks((0, 2 ** 63, [1])))])]},
])
def test_values_that_do_not_fit_fail_as_the_schema_says(bad: dict[str, Any]) -> None:
    fields: dict[str, Any] = {"group_id": "g", "member_id": "m", "share_session_epoch": 1,
                              "max_wait_ms": 1, "min_bytes": 1}
    request = ShareFetchRequest(**{**fields, **bad})
    expected = _outcome(lambda: _schema(request, 1))
    assert isinstance(expected, tuple)  # the schema refuses it
    assert _outcome(lambda: _encoded(request, 1)) == expected
