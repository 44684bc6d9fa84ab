"""ShareFetch answers read by the readers made for them (share_fetch._read_answer: the C one of
csrc/share_answer.c where it is built, else or after it the Python one) against the schema's
reader: the same structs for every answer they read, and every other answer (tagged fields, v0,
cut or corrupt bytes) left to the schema, with the schema's result or error."""

from __future__ import annotations

import gc
import json
import uuid
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from groupkit.errors import ApiKey, CorruptFrame
from groupkit.protocol import native
from groupkit.protocol.headers import decode_response_frame
from groupkit.protocol.messages import share_fetch
from groupkit.protocol.messages.share_fetch import (
    AcquiredRecords,
    ShareFetchResponse,
    ShareFetchResponsePartition,
    ShareFetchResponseTopic,
    ShareLeaderIdAndEpoch,
    ShareNodeEndpoint,
)
from groupkit.protocol.primitives import Reader
from groupkit.protocol.schema import _plan

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "share_bytes.json"
TOPIC = uuid.UUID("0b4c6f8e-4d7e-4d9a-9a3e-2f1b6c3d5e7f")
needs_native = pytest.mark.skipif(not native.available, reason="the C extension is not built")


@pytest.fixture(params=[pytest.param("c", marks=needs_native), "python"])
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each test once with the C reader first, once with the Python reader alone."""
    if request.param == "python":
        monkeypatch.setattr(native, "module", None)
    yield request.param


def _schema(data: bytes, version: int) -> ShareFetchResponse:
    r = Reader(data)
    answer = _plan(ShareFetchResponse, version, True).read(r)
    assert r.pos == r.end
    return answer  # type: ignore[no-any-return]


def _partition(index: int, records: bytes | None = None, *, acquired: int = 0,
               **fields: Any) -> ShareFetchResponsePartition:
    return ShareFetchResponsePartition(
        partition_index=index, records=records,
        acquired_records=[AcquiredRecords(first_offset=10 * i, last_offset=10 * i + 9,
                                          delivery_count=i + 1) for i in range(acquired)],
        **fields)


ANSWERS = {
    "empty": ShareFetchResponse(),
    "the mock's shape": ShareFetchResponse(
        acquisition_lock_timeout_ms=30_000,
        responses=[ShareFetchResponseTopic(topic_id=TOPIC, partitions=[
            _partition(6, b""), _partition(0, b""),
            _partition(3, bytes(range(256)) * 300, acquired=1,
                       current_leader=ShareLeaderIdAndEpoch(leader_id=2, leader_epoch=7))])]),
    "errors and messages": ShareFetchResponse(
        throttle_time_ms=5, error_code=0, error_message="fine, thanks: ünïcode",
        acquisition_lock_timeout_ms=15_000,
        responses=[ShareFetchResponseTopic(topic_id=TOPIC, partitions=[
            _partition(1, None, error_code=6, error_message="NOT_LEADER_OR_FOLLOWER",
                       acknowledge_error_code=-1, acknowledge_error_message="x" * 200),
            _partition(2, b"abc", acquired=3)]),
            ShareFetchResponseTopic(topic_id=uuid.uuid4(), partitions=[])],
        node_endpoints=[ShareNodeEndpoint(node_id=1, host="broker-1", port=9092),
                        ShareNodeEndpoint(node_id=2, host="b" * 150, port=9093,
                                          rack="rack-a")]),
    "a whole-answer error": ShareFetchResponse(error_code=87, error_message="bad session"),
    "many partitions": ShareFetchResponse(responses=[ShareFetchResponseTopic(
        topic_id=TOPIC, partitions=[_partition(i, b"r" * i, acquired=i % 3)
                                    for i in range(140)])]),
}


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_an_answer_reads_as_the_schema_reads_it(name: str, version: int, reader: str) -> None:
    data = ANSWERS[name].encode(version)
    r = Reader(data)
    fast = share_fetch._read_answer(r)  # read here, not handed to the schema
    assert r.pos == len(data)
    assert fast == _schema(data, version) == ANSWERS[name]
    assert ShareFetchResponse.decode(data, version) == fast
    for part in (p for t in fast.responses for p in t.partitions):
        if part.records is not None:  # a read-only view of the frame, as the schema's
            assert isinstance(part.records, memoryview) and part.records.readonly


def test_the_captured_answers_read_as_the_schema_reads_them(reader: str) -> None:
    captures = json.loads(FIXTURE.read_text())["captures"]
    frames = [(bytes.fromhex(e["response"]), e["api_version"]) for e in captures
              if e["api_key"] == ApiKey.SHARE_FETCH]
    acquired = 0
    for frame, version in frames:
        _, answer = decode_response_frame(frame, ShareFetchResponse, version)
        acquired += sum(len(p.acquired_records) for t in answer.responses for p in t.partitions)
        body = frame[5:]  # the correlation id and the header's empty tagged fields
        r = Reader(body)
        assert share_fetch._read_answer(r) == answer == _schema(body, version)
    assert acquired  # some answers carry records


@pytest.mark.parametrize("where", ["answer", "topic", "partition", "leader", "acquired",
                                   "endpoint"])
def test_an_answer_with_tagged_fields_goes_to_the_schema(where: str, reader: str) -> None:
    tags = {7: b"later"}
    leader = ShareLeaderIdAndEpoch(leader_id=1, leader_epoch=2,
                                   unknown_tags=tags if where == "leader" else {})
    acquired = [AcquiredRecords(first_offset=0, last_offset=1, delivery_count=1,
                                unknown_tags=tags if where == "acquired" else {})]
    part = ShareFetchResponsePartition(partition_index=0, records=b"x", current_leader=leader,
                                       acquired_records=acquired,
                                       unknown_tags=tags if where == "partition" else {})
    answer = ShareFetchResponse(
        responses=[ShareFetchResponseTopic(topic_id=TOPIC, partitions=[part],
                                           unknown_tags=tags if where == "topic" else {})],
        node_endpoints=[ShareNodeEndpoint(node_id=1, host="h", port=1,
                                          unknown_tags=tags if where == "endpoint" else {})],
        unknown_tags=tags if where == "answer" else {})
    data = answer.encode(1)
    r = Reader(data)
    with pytest.raises(share_fetch._Unusual):
        share_fetch._read_answer(r)
    assert r.pos == 0
    decoded = ShareFetchResponse.decode(data, 1)
    assert decoded == answer == _schema(data, 1)
    found = {"answer": decoded.unknown_tags,
             "topic": decoded.responses[0].unknown_tags,
             "partition": decoded.responses[0].partitions[0].unknown_tags,
             "leader": decoded.responses[0].partitions[0].current_leader.unknown_tags,
             "acquired": decoded.responses[0].partitions[0].acquired_records[0].unknown_tags,
             "endpoint": decoded.node_endpoints[0].unknown_tags}
    assert found[where] == tags


def test_v0_is_read_by_the_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(r: Reader) -> ShareFetchResponse:
        raise AssertionError("v0 has no acquisition_lock_timeout_ms: not this reader's")

    monkeypatch.setattr(share_fetch, "_read_answer", refuse)
    answer = ShareFetchResponse(responses=[ShareFetchResponseTopic(
        topic_id=TOPIC, partitions=[_partition(0, b"v", acquired=1)])])
    assert ShareFetchResponse.decode(answer.encode(0), 0) == answer


def _outcome(data: bytes, read: Any) -> Any:
    try:
        return read(data)
    except CorruptFrame as exc:
        return type(exc), str(exc)


@pytest.mark.parametrize("name", ["the mock's shape", "errors and messages"])
def test_cut_or_corrupt_answers_fail_as_the_schema_says(name: str, reader: str) -> None:
    data = ANSWERS[name].encode(1)
    cuts = [data[:n] for n in range(0, len(data), max(1, len(data) // 300))]
    # A byte changed: lengths and counts that overrun, a string that is not UTF-8, a tag.
    changed = [data[:i] + bytes([b]) + data[i + 1:] for i in range(0, min(len(data), 400))
               for b in (0x00, 0x7F, 0xFF)]
    for bad in cuts + changed:
        assert _outcome(bad, lambda d: ShareFetchResponse.decode(d, 1)) == \
            _outcome(bad, lambda d: _schema_or_corrupt(d))


def _schema_or_corrupt(data: bytes) -> ShareFetchResponse:
    r = Reader(data, context="ShareFetchResponse v1")
    answer = _plan(ShareFetchResponse, 1, True).read(r)
    if r.pos != r.end:
        raise CorruptFrame(f"ShareFetchResponse v1: {r.end - r.pos} unexpected bytes after the"
                           " body")
    return answer  # type: ignore[no-any-return]


# --- the C reader ------------------------------------------------------------------------------


def _c_read(data: bytes | bytearray) -> Any:
    assert native.module is not None
    view = memoryview(data).toreadonly()
    return native.module.read_share_fetch(view, 0, len(data), share_fetch._STRUCTS, {},
                                          uuid.UUID)


@needs_native
def test_the_c_reader_fills_every_field_of_the_structs() -> None:
    # It fills the slots it names, in wire order; a field the schema adds must be named there
    # too, or its slot would be left empty.
    assert native.module is not None
    for cls, names in zip(share_fetch._STRUCTS, native.module.SHARE_FETCH_FIELDS, strict=True):
        assert [a.name for a in attrs.fields(cls)] == list(names)


@needs_native
@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_the_c_reader_reads_every_answer_of_the_usual_shape(name: str) -> None:
    data = ANSWERS[name].encode(1)
    got = _c_read(bytearray(data))
    assert got is not None, "left to the Python reader"
    answer, end = got
    assert end == len(data) and answer == _schema(data, 1)
    parts = [p for t in answer.responses for p in t.partitions]
    assert all(p.records is None or (isinstance(p.records, memoryview) and p.records.readonly)
               for p in parts)
    assert all(type(p.unknown_tags) is dict and not p.unknown_tags for p in parts)
    assert len({id(p.unknown_tags) for p in parts}) == len(parts)  # a dict each


@needs_native
def test_the_c_reader_leaves_what_it_does_not_read_untouched() -> None:
    data = ANSWERS["errors and messages"].encode(1)
    assert _c_read(data[:-1]) is None  # cut
    tagged = ShareFetchResponse(unknown_tags={3: b"x"}).encode(1)
    assert _c_read(tagged) is None
    not_utf8 = bytearray(data)
    at = not_utf8.index(b"fine, thanks")
    not_utf8[at] = 0xFF
    assert _c_read(not_utf8) is None
    with pytest.raises(TypeError):
        native.module.read_share_fetch(b"", 0, 0, (), {}, uuid.UUID)  # type: ignore[union-attr]


@needs_native
def test_what_the_c_reader_makes_is_freed_when_dropped() -> None:
    # Reference counting alone frees the answer and each struct in it (nothing kept twice).
    data = ANSWERS["errors and messages"].encode(1)
    gc.disable()
    try:
        answer, _ = _c_read(data)
        part = answer.responses[0].partitions[1]
        refs = [weakref.ref(o) for o in (answer, answer.responses[0], part,
                                         part.current_leader, part.acquired_records[0],
                                         answer.node_endpoints[1])]
        del answer, part
        assert [r() for r in refs] == [None] * len(refs)
    finally:
        gc.enable()
