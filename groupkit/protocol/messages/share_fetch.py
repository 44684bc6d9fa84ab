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

from groupkit.errors import ApiKey
from groupkit.protocol.primitives import NULL_UUID
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


pair(ShareFetchRequest, ShareFetchResponse)

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
