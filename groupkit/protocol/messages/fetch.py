"""Fetch (key 1): read record batches from partition leaders.

v3 adds a request-wide byte limit; v4 the isolation level, last stable offset and aborted
transactions; v5 log start offsets; v7 incremental fetch sessions (KIP-227); v9 the current
leader epoch; v11 the consumer's rack and the preferred read replica (KIP-392); v12 is the first
flexible version, with the last fetched epoch and the tagged diverging epoch, current leader and
snapshot id; v13 names topics by id (KIP-516); v15 moves the replica id into a tagged replica
state (KIP-903); v16 adds the tagged node endpoints (KIP-951); v17 the tagged replica directory
id (KIP-853). Record sets stay raw, read as views of the answer (``RECORD_VIEW``);
``records`` decodes them.
"""

from __future__ import annotations

import uuid

from groupkit.errors import ApiKey
from groupkit.protocol.primitives import NULL_UUID
from groupkit.protocol.schema import (
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

#: ``isolation_level`` values.
READ_UNCOMMITTED = 0
READ_COMMITTED = 1


@struct
class FetchRequestReplicaState(Struct):
    replica_id: int = f(INT32, versions="15+", default=-1)
    replica_epoch: int = f(INT64, versions="15+", default=-1)


@struct
class FetchRequestPartition(Struct):
    partition: int = f(INT32)
    current_leader_epoch: int = f(INT32, versions="9+", default=-1, ignorable=True)
    fetch_offset: int = f(INT64)
    last_fetched_epoch: int = f(INT32, versions="12+", default=-1)
    log_start_offset: int = f(INT64, versions="5+", default=-1, ignorable=True)
    partition_max_bytes: int = f(INT32)
    replica_directory_id: uuid.UUID = f(
        UUID, versions="17+", tag=0, default=NULL_UUID, ignorable=True)


@struct
class FetchRequestTopic(Struct):
    topic: str = f(STRING, versions="0-12", ignorable=True)
    topic_id: uuid.UUID = f(UUID, versions="13+", default=NULL_UUID, ignorable=True)
    partitions: list[FetchRequestPartition] = f(Array(FetchRequestPartition))


@struct
class FetchRequestForgottenTopic(Struct):
    topic: str = f(STRING, versions="7-12", ignorable=True)
    topic_id: uuid.UUID = f(UUID, versions="13+", default=NULL_UUID, ignorable=True)
    partitions: list[int] = f(Array(INT32), versions="7+")


@message(api_key=ApiKey.FETCH, versions="0-17", flexible="12+")
class FetchRequest(Request):
    cluster_id: str | None = f(
        STRING, versions="12+", nullable="12+", default=None, tag=0, ignorable=True)
    replica_id: int = f(INT32, versions="0-14", default=-1)
    replica_state: FetchRequestReplicaState | None = f(
        FetchRequestReplicaState, versions="15+", tag=1)
    max_wait_ms: int = f(INT32)
    min_bytes: int = f(INT32)
    max_bytes: int = f(INT32, versions="3+", default=0x7FFFFFFF, ignorable=True)
    isolation_level: int = f(INT8, versions="4+", default=READ_UNCOMMITTED, ignorable=True)
    session_id: int = f(INT32, versions="7+", default=0, ignorable=True)
    session_epoch: int = f(INT32, versions="7+", default=-1, ignorable=True)
    topics: list[FetchRequestTopic] = f(Array(FetchRequestTopic))
    forgotten_topics_data: list[FetchRequestForgottenTopic] = f(
        Array(FetchRequestForgottenTopic), versions="7+")
    rack_id: str = f(STRING, versions="11+", default="", ignorable=True)


@struct
class FetchResponseEpochEndOffset(Struct):
    epoch: int = f(INT32, versions="12+", default=-1)
    end_offset: int = f(INT64, versions="12+", default=-1)


@struct
class FetchResponseLeaderIdAndEpoch(Struct):
    leader_id: int = f(INT32, versions="12+", default=-1)
    leader_epoch: int = f(INT32, versions="12+", default=-1)


@struct
class FetchResponseSnapshotId(Struct):
    end_offset: int = f(INT64, default=-1)
    epoch: int = f(INT32, default=-1)


@struct
class FetchResponseAbortedTransaction(Struct):
    producer_id: int = f(INT64, versions="4+")
    first_offset: int = f(INT64, versions="4+")


@struct
class FetchResponsePartition(Struct):
    partition_index: int = f(INT32)
    error_code: int = f(INT16)
    high_watermark: int = f(INT64)
    last_stable_offset: int = f(INT64, versions="4+", default=-1, ignorable=True)
    log_start_offset: int = f(INT64, versions="5+", default=-1, ignorable=True)
    diverging_epoch: FetchResponseEpochEndOffset | None = f(
        FetchResponseEpochEndOffset, versions="12+", tag=0)
    current_leader: FetchResponseLeaderIdAndEpoch | None = f(
        FetchResponseLeaderIdAndEpoch, versions="12+", tag=1)
    snapshot_id: FetchResponseSnapshotId | None = f(
        FetchResponseSnapshotId, versions="12+", tag=2)
    aborted_transactions: list[FetchResponseAbortedTransaction] | None = f(
        Array(FetchResponseAbortedTransaction), versions="4+", nullable="4+", default=[],
        ignorable=True)
    preferred_read_replica: int = f(INT32, versions="11+", default=-1)
    records: bytes | memoryview | None = f(RECORD_VIEW, nullable="0+", default=None)


@struct
class FetchResponseTopic(Struct):
    topic: str = f(STRING, versions="0-12", ignorable=True)
    topic_id: uuid.UUID = f(UUID, versions="13+", default=NULL_UUID, ignorable=True)
    partitions: list[FetchResponsePartition] = f(Array(FetchResponsePartition))


@struct
class FetchResponseNodeEndpoint(Struct):
    node_id: int = f(INT32, versions="16+")
    host: str = f(STRING, versions="16+")
    port: int = f(INT32, versions="16+")
    rack: str | None = f(STRING, versions="16+", nullable="16+", default=None)


@message(api_key=ApiKey.FETCH, versions="0-17", flexible="12+")
class FetchResponse(Response):
    throttle_time_ms: int = f(INT32, versions="1+", ignorable=True)
    error_code: int = f(INT16, versions="7+", ignorable=True)
    session_id: int = f(INT32, versions="7+", default=0)
    responses: list[FetchResponseTopic] = f(Array(FetchResponseTopic))
    node_endpoints: list[FetchResponseNodeEndpoint] = f(
        Array(FetchResponseNodeEndpoint), versions="16+", tag=0)


pair(FetchRequest, FetchResponse)
