"""Share group records (KIP-932): ShareFetch (78) and ShareAcknowledge (79).

Facts that bite: both are flexible from v0, and topics travel by id. A share session is kept
per (member, broker): epoch 0 opens it with the full partition list, each later request carries
the next epoch and only the partitions added (``forgotten_topics_data`` the ones removed), -1
closes it (its acknowledgements are still applied, nothing is fetched). ShareAcknowledge never
opens a session. Acknowledgements are batches of an offset range and either one type for the
whole range or one per offset (0 gap, 1 accept, 2 release, 3 reject; 4 renew from v2). The
answer's ``acquired_records`` say which offsets of ``records`` this member holds and their
delivery count; the record batches may hold more offsets than were acquired.

Versions: v0 was Kafka 4.0's early access (``partition_max_bytes`` per partition) and Kafka 4.1
removed it; v1 (Kafka 4.1) drops ``partition_max_bytes``, adds ``max_records`` and
``batch_size`` and answers ``acquisition_lock_timeout_ms``; v2 (Kafka 4.2) adds
``share_acquire_mode`` (KIP-1206) and ``is_renew_ack`` (KIP-1222), and ShareAcknowledge v2 answers
the lock timeout too.
"""

from __future__ import annotations

import uuid
from functools import partial
from struct import Struct as Layout, error as StructError, pack

from groupkit.errors import ApiKey, CorruptFrame
from groupkit.protocol import native
from groupkit.protocol.primitives import NULL_UUID, Reader, Writer
from groupkit.protocol.schema import (
    BOOL,
    INT8,
    INT16,
    INT32,
    INT64,
    RECORD_VIEW,
    STRING,
    UUID,
    Array,
    Request,
    Response,
    Struct,
    f,
    message,
    pair,
    struct,
)

#: The share session epoch that opens a session (a full request).
INITIAL_SHARE_SESSION_EPOCH = 0
#: The share session epoch that closes a session.
FINAL_SHARE_SESSION_EPOCH = -1

#: ``acknowledge_types`` values.
ACK_GAP = 0
ACK_ACCEPT = 1
ACK_RELEASE = 2
ACK_REJECT = 3
ACK_RENEW = 4

#: ``share_acquire_mode`` values (v2+): the broker may exceed ``max_records`` to keep whole
#: batches (0), or must not (1).
ACQUIRE_BATCH_OPTIMIZED = 0
ACQUIRE_RECORD_LIMIT = 1


@struct
class AcknowledgementBatch(Struct):
    """Offsets ``first_offset``..``last_offset`` (inclusive) and how each is acknowledged: one
    type for all of them, or one type per offset."""

    first_offset: int = f(INT64)
    last_offset: int = f(INT64)
    acknowledge_types: list[int] = f(Array(INT8))


# --- ShareFetch --------------------------------------------------------------------------------


@struct
class ShareFetchRequestPartition(Struct):
    partition_index: int = f(INT32)
    partition_max_bytes: int = f(INT32, versions="0", default=0x7FFFFFFF, ignorable=True)
    acknowledgement_batches: list[AcknowledgementBatch] = f(Array(AcknowledgementBatch))


@struct
class ShareFetchRequestTopic(Struct):
    topic_id: uuid.UUID = f(UUID, default=NULL_UUID)
    partitions: list[ShareFetchRequestPartition] = f(Array(ShareFetchRequestPartition))


@struct
class ShareForgottenTopic(Struct):
    topic_id: uuid.UUID = f(UUID, default=NULL_UUID)
    partitions: list[int] = f(Array(INT32))


@message(api_key=ApiKey.SHARE_FETCH, versions="0-2", flexible="0+")
class ShareFetchRequest(Request):
    group_id: str | None = f(STRING, nullable="0+", default=None)
    member_id: str | None = f(STRING, nullable="0+", default=None)
    share_session_epoch: int = f(INT32)
    max_wait_ms: int = f(INT32)
    min_bytes: int = f(INT32)
    max_bytes: int = f(INT32, default=0x7FFFFFFF)
    max_records: int = f(INT32, versions="1+", default=500, ignorable=True)
    batch_size: int = f(INT32, versions="1+", default=500, ignorable=True)
    share_acquire_mode: int = f(INT8, versions="2+", default=ACQUIRE_BATCH_OPTIMIZED,
                                ignorable=True)
    is_renew_ack: bool = f(BOOL, versions="2+", default=False)
    topics: list[ShareFetchRequestTopic] = f(Array(ShareFetchRequestTopic))
    forgotten_topics_data: list[ShareForgottenTopic] = f(Array(ShareForgottenTopic))

    def encode_into(self, w: Writer, version: int) -> None:
        """The schema's encoding, by a writer made for this request first (see
        ``_write_request``): a share consumer sends one per fetch."""
        if 1 <= version <= self.MAX_VERSION and (version >= 2 or not self.is_renew_ack):
            try:
                w.raw(_write_request(self, version))
                return
            except (_Unusual, TypeError, ValueError, AttributeError, StructError):
                pass  # the schema writes it, or says what is wrong
        super().encode_into(w, version)


@struct
class ShareLeaderIdAndEpoch(Struct):
    leader_id: int = f(INT32, default=-1)
    leader_epoch: int = f(INT32, default=-1)


@struct
class AcquiredRecords(Struct):
    """Offsets ``first_offset``..``last_offset`` (inclusive) are this member's, delivered for
    the ``delivery_count``-th time."""

    first_offset: int = f(INT64)
    last_offset: int = f(INT64)
    delivery_count: int = f(INT16)


@struct
class ShareFetchResponsePartition(Struct):
    partition_index: int = f(INT32)
    error_code: int = f(INT16)
    error_message: str | None = f(STRING, nullable="0+", default=None)
    acknowledge_error_code: int = f(INT16)
    acknowledge_error_message: str | None = f(STRING, nullable="0+", default=None)
    current_leader: ShareLeaderIdAndEpoch = f(
        ShareLeaderIdAndEpoch, default=ShareLeaderIdAndEpoch())
    records: bytes | memoryview | None = f(RECORD_VIEW, nullable="0+", default=None)
    acquired_records: list[AcquiredRecords] = f(Array(AcquiredRecords))


@struct
class ShareFetchResponseTopic(Struct):
    topic_id: uuid.UUID = f(UUID, default=NULL_UUID)
    partitions: list[ShareFetchResponsePartition] = f(Array(ShareFetchResponsePartition))


@struct
class ShareNodeEndpoint(Struct):
    node_id: int = f(INT32)
    host: str = f(STRING)
    port: int = f(INT32)
    rack: str | None = f(STRING, nullable="0+", default=None)


@message(api_key=ApiKey.SHARE_FETCH, versions="0-2", flexible="0+")
class ShareFetchResponse(Response):
    throttle_time_ms: int = f(INT32)
    error_code: int = f(INT16)
    error_message: str | None = f(STRING, nullable="0+", default=None)
    acquisition_lock_timeout_ms: int = f(INT32, versions="1+", default=0, ignorable=True)
    responses: list[ShareFetchResponseTopic] = f(Array(ShareFetchResponseTopic))
    node_endpoints: list[ShareNodeEndpoint] = f(Array(ShareNodeEndpoint))

    @classmethod
    def decode_from(cls, r: Reader, version: int) -> ShareFetchResponse:
        """The schema's decode, by a reader made for this answer first (see ``_read_answer``):
        a share consumer reads one per fetch, on a connection's reader thread."""
        if 1 <= version <= cls.MAX_VERSION:
            try:
                return _read_answer(r)
            except (_Unusual, CorruptFrame):
                pass  # the schema reads it again from the start, or says what is wrong
        return super().decode_from(r, version)


pair(ShareFetchRequest, ShareFetchResponse)


class _Unusual(Exception):
    """A request or answer the writer or reader made for it leaves to the schema."""


_HEAD = Layout(">ih")  # throttle_time_ms, error_code; a partition's index, error code
_I16 = Layout(">h")
_I32 = Layout(">i")
_LEADER = Layout(">iiB")  # leader id, epoch, empty tagged fields
_ACQUIRED = Layout(">qqhB")  # first offset, last offset, delivery count, no tags
_FETCH_LIMITS = Layout(">iiiiii")  # epoch, max wait, min bytes, max bytes, max records, batch
_V2_MODES = Layout(">bB")  # share_acquire_mode, is_renew_ack
_ACK_RANGE = Layout(">qq")


def _write_request(request: ShareFetchRequest, version: int) -> bytearray:
    """A ShareFetch v1-v2 request's bytes as the schema writes them, for requests without
    tagged fields; any other raises, and the caller has the schema write it (or refuse it)."""
    w = Writer()
    out, uvarint, text = w.buf, w.uvarint, w.compact_nullable_string
    if request.unknown_tags:
        raise _Unusual
    text(request.group_id)
    text(request.member_id)
    out += _FETCH_LIMITS.pack(request.share_session_epoch, request.max_wait_ms,
                              request.min_bytes, request.max_bytes, request.max_records,
                              request.batch_size)
    if version >= 2:
        out += _V2_MODES.pack(request.share_acquire_mode, 1 if request.is_renew_ack else 0)
    uvarint(len(request.topics) + 1)
    for topic in request.topics:
        if topic.unknown_tags:
            raise _Unusual
        out += (topic.topic_id or NULL_UUID).bytes
        uvarint(len(topic.partitions) + 1)
        for part in topic.partitions:
            if part.unknown_tags:
                raise _Unusual
            out += _I32.pack(part.partition_index)
            uvarint(len(part.acknowledgement_batches) + 1)
            for batch in part.acknowledgement_batches:
                if batch.unknown_tags:
                    raise _Unusual
                out += _ACK_RANGE.pack(batch.first_offset, batch.last_offset)
                types = batch.acknowledge_types
                uvarint(len(types) + 1)
                out += pack(f">{len(types)}b", *types)  # struct.error past an int8
                out.append(0)
            out.append(0)
        out.append(0)
    uvarint(len(request.forgotten_topics_data) + 1)
    for gone in request.forgotten_topics_data:
        if gone.unknown_tags:
            raise _Unusual
        out += (gone.topic_id or NULL_UUID).bytes
        uvarint(len(gone.partitions) + 1)
        for index in gone.partitions:
            out += _I32.pack(index)
        out.append(0)
    out.append(0)
    return out


#: The struct classes the C reader fills, in the order of its SHARE_FETCH_FIELDS.
_STRUCTS = (ShareFetchResponse, ShareFetchResponseTopic, ShareFetchResponsePartition,
            ShareLeaderIdAndEpoch, AcquiredRecords, ShareNodeEndpoint)
#: Topic ids by their 16 bytes, for the C reader: a member reads the same few in every answer.
_TOPIC_IDS: dict[bytes, uuid.UUID] = {}


def _read_answer(r: Reader) -> ShareFetchResponse:
    """A ShareFetch v1-v2 answer read straight off the buffer into the schema's structs, as the
    schema reads it, for the shape brokers send: no tagged fields. Anything else (a tagged
    field, an overrun, a bad string, a negative length) raises, with ``r.pos`` where it was,
    and the caller reads the answer with the schema, which keeps unknown tags and names what
    is wrong. Where the extension is built, its reader (csrc/share_answer.c) reads the answer
    first, and what it leaves (None: anything but that shape, well formed) is read here."""
    if native.module is not None:
        view = r.buf if r.buf.readonly else r.buf.toreadonly()
        got = native.module.read_share_fetch(view, r.pos, r.end, _STRUCTS, _TOPIC_IDS,
                                             uuid.UUID)
        if got is not None:
            answer: ShareFetchResponse = got[0]
            r.pos = got[1]
            return answer
    start = r.pos
    try:
        return _read_answer_from(r)
    except BaseException:
        r.pos = start
        raise


def _read_answer_from(r: Reader) -> ShareFetchResponse:
    fixed, uvarint, text, count, records_of = (
        r.fields, r.uvarint, r.compact_nullable_string, partial(r.array_length, True),
        r.compact_nullable_view)
    throttle, code = fixed(_HEAD)
    message = text()
    (lock_ms,) = fixed(_I32)
    topics = []
    for _ in range(count()):
        topic_id = r.uuid()
        partitions = []
        for _ in range(count()):
            index, part_code = fixed(_HEAD)
            part_message = text()
            (ack_code,) = fixed(_I16)
            ack_message = text()
            leader_id, leader_epoch, tags = fixed(_LEADER)
            if tags:
                raise _Unusual
            records = records_of()
            acquired = []
            for _ in range(count()):
                first, last, deliveries, tags = fixed(_ACQUIRED)
                if tags:
                    raise _Unusual
                acquired.append(AcquiredRecords(first_offset=first, last_offset=last,
                                                delivery_count=deliveries))
            if uvarint():
                raise _Unusual
            partitions.append(ShareFetchResponsePartition(
                partition_index=index, error_code=part_code, error_message=part_message,
                acknowledge_error_code=ack_code, acknowledge_error_message=ack_message,
                current_leader=ShareLeaderIdAndEpoch(leader_id=leader_id,
                                                     leader_epoch=leader_epoch),
                records=records, acquired_records=acquired))
        if uvarint():
            raise _Unusual
        topics.append(ShareFetchResponseTopic(topic_id=topic_id, partitions=partitions))
    endpoints = []
    for _ in range(count()):
        (node_id,) = fixed(_I32)
        host = text()
        if host is None:
            raise _Unusual
        (port,) = fixed(_I32)
        rack = text()
        if uvarint():
            raise _Unusual
        endpoints.append(ShareNodeEndpoint(node_id=node_id, host=host, port=port, rack=rack))
    if uvarint():
        raise _Unusual
    return ShareFetchResponse(throttle_time_ms=throttle, error_code=code, error_message=message,
                              acquisition_lock_timeout_ms=lock_ms, responses=topics,
                              node_endpoints=endpoints)

# --- ShareAcknowledge --------------------------------------------------------------------------


@struct
class ShareAcknowledgeRequestPartition(Struct):
    partition_index: int = f(INT32)
    acknowledgement_batches: list[AcknowledgementBatch] = f(Array(AcknowledgementBatch))


@struct
class ShareAcknowledgeRequestTopic(Struct):
    topic_id: uuid.UUID = f(UUID, default=NULL_UUID)
    partitions: list[ShareAcknowledgeRequestPartition] = f(
        Array(ShareAcknowledgeRequestPartition))


@message(api_key=ApiKey.SHARE_ACKNOWLEDGE, versions="0-2", flexible="0+")
class ShareAcknowledgeRequest(Request):
    group_id: str | None = f(STRING, nullable="0+", default=None)
    member_id: str | None = f(STRING, nullable="0+", default=None)
    share_session_epoch: int = f(INT32)
    is_renew_ack: bool = f(BOOL, versions="2+", default=False)
    topics: list[ShareAcknowledgeRequestTopic] = f(Array(ShareAcknowledgeRequestTopic))


@struct
class ShareAcknowledgeResponsePartition(Struct):
    partition_index: int = f(INT32)
    error_code: int = f(INT16)
    error_message: str | None = f(STRING, nullable="0+", default=None)
    current_leader: ShareLeaderIdAndEpoch = f(
        ShareLeaderIdAndEpoch, default=ShareLeaderIdAndEpoch())


@struct
class ShareAcknowledgeResponseTopic(Struct):
    topic_id: uuid.UUID = f(UUID, default=NULL_UUID)
    partitions: list[ShareAcknowledgeResponsePartition] = f(
        Array(ShareAcknowledgeResponsePartition))


@message(api_key=ApiKey.SHARE_ACKNOWLEDGE, versions="0-2", flexible="0+")
class ShareAcknowledgeResponse(Response):
    throttle_time_ms: int = f(INT32)
    error_code: int = f(INT16)
    error_message: str | None = f(STRING, nullable="0+", default=None)
    acquisition_lock_timeout_ms: int = f(INT32, versions="2+", default=0, ignorable=True)
    responses: list[ShareAcknowledgeResponseTopic] = f(Array(ShareAcknowledgeResponseTopic))
    node_endpoints: list[ShareNodeEndpoint] = f(Array(ShareNodeEndpoint))


pair(ShareAcknowledgeRequest, ShareAcknowledgeResponse)
