"""The transaction coordinator's APIs a transactional producer calls, beside InitProducerId.

- AddPartitionsToTxn (key 24): name the partitions a transaction writes to before producing to
  them. v0-v3 are the client's form (one transaction: ``v3_and_below_*`` fields; v2 may answer
  PRODUCER_FENCED, v3 is flexible). v4+ (KIP-890) is the brokers' batched form (``transactions``,
  a top-level error code, ``verify_only``): a broker refuses it from a client, so a client sends
  at most v3 (``CLIENT_MAX_ADD_PARTITIONS_VERSION``).
- AddOffsetsToTxn (key 25): put a consumer group's offsets into the transaction (the coordinator
  then expects TxnOffsetCommit to that group's coordinator). v2 may answer PRODUCER_FENCED, v3 is
  flexible, v4 may answer TRANSACTION_ABORTABLE.
- EndTxn (key 26): commit or abort. Same version steps as AddOffsetsToTxn. v5 (KIP-890
  transactions v2: the coordinator bumps the epoch at every end and answers the new one) is not
  spoken: a client sends at most v4, so the coordinator keeps the v1 transaction protocol.
- TxnOffsetCommit (key 28): commit offsets inside the transaction, to the group coordinator.
  v2 adds the leader epoch; v3 (KIP-447) carries the group generation, member id and instance
  id, so a member fenced out of its group cannot commit (flexible from v3); v4 may answer
  TRANSACTION_ABORTABLE. v5 (transactions v2: it implies AddOffsetsToTxn) is not spoken.
"""

from __future__ import annotations

from groupkit.errors import ApiKey
from groupkit.protocol.schema import (
    BOOL,
    INT16,
    INT32,
    INT64,
    STRING,
    Array,
    Request,
    Response,
    Struct,
    f,
    message,
    pair,
    struct,
)

#: The highest AddPartitionsToTxn version a client may send (v4+ is broker-to-broker).
CLIENT_MAX_ADD_PARTITIONS_VERSION = 3


# --- AddPartitionsToTxn (24) -------------------------------------------------------------------


@struct
class AddPartitionsToTxnTopic(Struct):
    name: str = f(STRING)
    partitions: list[int] = f(Array(INT32))


@struct
class AddPartitionsToTxnTransaction(Struct):
    transactional_id: str = f(STRING, versions="4+")
    producer_id: int = f(INT64, versions="4+")
    producer_epoch: int = f(INT16, versions="4+")
    verify_only: bool = f(BOOL, versions="4+", default=False)
    topics: list[AddPartitionsToTxnTopic] = f(Array(AddPartitionsToTxnTopic), versions="4+")


@message(api_key=ApiKey.ADD_PARTITIONS_TO_TXN, versions="0-5", flexible="3+")
class AddPartitionsToTxnRequest(Request):
    transactions: list[AddPartitionsToTxnTransaction] = f(
        Array(AddPartitionsToTxnTransaction), versions="4+")
    v3_and_below_transactional_id: str = f(STRING, versions="0-3")
    v3_and_below_producer_id: int = f(INT64, versions="0-3")
    v3_and_below_producer_epoch: int = f(INT16, versions="0-3")
    v3_and_below_topics: list[AddPartitionsToTxnTopic] = f(
        Array(AddPartitionsToTxnTopic), versions="0-3")


@struct
class AddPartitionsToTxnPartitionResult(Struct):
    partition_index: int = f(INT32)
    partition_error_code: int = f(INT16)


@struct
class AddPartitionsToTxnTopicResult(Struct):
    name: str = f(STRING)
    results_by_partition: list[AddPartitionsToTxnPartitionResult] = f(
        Array(AddPartitionsToTxnPartitionResult))


@struct
class AddPartitionsToTxnResult(Struct):
    transactional_id: str = f(STRING, versions="4+")
    topic_results: list[AddPartitionsToTxnTopicResult] = f(
        Array(AddPartitionsToTxnTopicResult), versions="4+")


@message(api_key=ApiKey.ADD_PARTITIONS_TO_TXN, versions="0-5", flexible="3+")
class AddPartitionsToTxnResponse(Response):
    throttle_time_ms: int = f(INT32, ignorable=True)
    error_code: int = f(INT16, versions="4+", ignorable=True)
    results_by_transaction: list[AddPartitionsToTxnResult] = f(
        Array(AddPartitionsToTxnResult), versions="4+")
    results_by_topic_v3_and_below: list[AddPartitionsToTxnTopicResult] = f(
        Array(AddPartitionsToTxnTopicResult), versions="0-3")


pair(AddPartitionsToTxnRequest, AddPartitionsToTxnResponse)


# --- AddOffsetsToTxn (25) ----------------------------------------------------------------------


@message(api_key=ApiKey.ADD_OFFSETS_TO_TXN, versions="0-4", flexible="3+")
class AddOffsetsToTxnRequest(Request):
    transactional_id: str = f(STRING)
    producer_id: int = f(INT64)
    producer_epoch: int = f(INT16)
    group_id: str = f(STRING)


@message(api_key=ApiKey.ADD_OFFSETS_TO_TXN, versions="0-4", flexible="3+")
class AddOffsetsToTxnResponse(Response):
    throttle_time_ms: int = f(INT32, ignorable=True)
    error_code: int = f(INT16)


pair(AddOffsetsToTxnRequest, AddOffsetsToTxnResponse)


# --- EndTxn (26) -------------------------------------------------------------------------------


@message(api_key=ApiKey.END_TXN, versions="0-4", flexible="3+")
class EndTxnRequest(Request):
    transactional_id: str = f(STRING)
    producer_id: int = f(INT64)
    producer_epoch: int = f(INT16)
    committed: bool = f(BOOL)


@message(api_key=ApiKey.END_TXN, versions="0-4", flexible="3+")
class EndTxnResponse(Response):
    throttle_time_ms: int = f(INT32, ignorable=True)
    error_code: int = f(INT16)


pair(EndTxnRequest, EndTxnResponse)


# --- TxnOffsetCommit (28) ----------------------------------------------------------------------


@struct
class TxnOffsetCommitRequestPartition(Struct):
    partition_index: int = f(INT32)
    committed_offset: int = f(INT64)
    committed_leader_epoch: int = f(INT32, versions="2+", default=-1, ignorable=True)
    committed_metadata: str | None = f(STRING, nullable="0+", default="")


@struct
class TxnOffsetCommitRequestTopic(Struct):
    name: str = f(STRING)
    partitions: list[TxnOffsetCommitRequestPartition] = f(Array(TxnOffsetCommitRequestPartition))


@message(api_key=ApiKey.TXN_OFFSET_COMMIT, versions="0-4", flexible="3+")
class TxnOffsetCommitRequest(Request):
    transactional_id: str = f(STRING)
    group_id: str = f(STRING)
    producer_id: int = f(INT64)
    producer_epoch: int = f(INT16)
    generation_id: int = f(INT32, versions="3+", default=-1)
    member_id: str = f(STRING, versions="3+", default="")
    group_instance_id: str | None = f(STRING, versions="3+", nullable="3+", default=None)
    topics: list[TxnOffsetCommitRequestTopic] = f(Array(TxnOffsetCommitRequestTopic))


@struct
class TxnOffsetCommitResponsePartition(Struct):
    partition_index: int = f(INT32)
    error_code: int = f(INT16)


@struct
class TxnOffsetCommitResponseTopic(Struct):
    name: str = f(STRING)
    partitions: list[TxnOffsetCommitResponsePartition] = f(
        Array(TxnOffsetCommitResponsePartition))


@message(api_key=ApiKey.TXN_OFFSET_COMMIT, versions="0-4", flexible="3+")
class TxnOffsetCommitResponse(Response):
    throttle_time_ms: int = f(INT32, ignorable=True)
    topics: list[TxnOffsetCommitResponseTopic] = f(Array(TxnOffsetCommitResponseTopic))


pair(TxnOffsetCommitRequest, TxnOffsetCommitResponse)
