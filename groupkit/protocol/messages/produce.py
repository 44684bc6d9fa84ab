"""Produce (key 0): append record batches to partition leaders.

v1 adds the throttle time; v2 the log append time; v3 the transactional id (and record batch
format v2); v5 the log start offset; v8 per-record errors and an error message (KIP-467); v9 is
the first flexible version; v10 adds the tagged current leader and node endpoints (KIP-951);
v11 may answer TRANSACTION_ABORTABLE (KIP-890). Record sets stay raw bytes (``RECORDS``).
"""

from __future__ import annotations

from groupkit.errors import ApiKey
from groupkit.protocol.schema import (
    INT16,
    INT32,
    INT64,
    RECORDS,
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


@struct
class ProduceRequestPartition(Struct):
    index: int = f(INT32)
    records: bytes | None = f(RECORDS, nullable="0+", default=None)


@struct
class ProduceRequestTopic(Struct):
    name: str = f(STRING)
    partition_data: list[ProduceRequestPartition] = f(Array(ProduceRequestPartition))


@message(api_key=ApiKey.PRODUCE, versions="0-11", flexible="9+")
class ProduceRequest(Request):
    transactional_id: str | None = f(STRING, versions="3+", nullable="3+", default=None,
                                     feature="transactions (transactional_id)")
    acks: int = f(INT16)
    timeout_ms: int = f(INT32)
    topic_data: list[ProduceRequestTopic] = f(Array(ProduceRequestTopic))


@struct
class ProduceResponseBatchIndexAndErrorMessage(Struct):
    batch_index: int = f(INT32, versions="8+")
    batch_index_error_message: str | None = f(
        STRING, versions="8+", nullable="8+", default=None)


@struct
class ProduceResponseLeaderIdAndEpoch(Struct):
    leader_id: int = f(INT32, versions="10+", default=-1)
    leader_epoch: int = f(INT32, versions="10+", default=-1)


@struct
class ProduceResponsePartition(Struct):
    index: int = f(INT32)
    error_code: int = f(INT16)
    base_offset: int = f(INT64)
    log_append_time_ms: int = f(INT64, versions="2+", default=-1, ignorable=True)
    log_start_offset: int = f(INT64, versions="5+", default=-1, ignorable=True)
    record_errors: list[ProduceResponseBatchIndexAndErrorMessage] = f(
        Array(ProduceResponseBatchIndexAndErrorMessage), versions="8+", ignorable=True)
    error_message: str | None = f(
        STRING, versions="8+", nullable="8+", default=None, ignorable=True)
    current_leader: ProduceResponseLeaderIdAndEpoch | None = f(
        ProduceResponseLeaderIdAndEpoch, versions="10+", tag=0)


@struct
class ProduceResponseTopic(Struct):
    name: str = f(STRING)
    partition_responses: list[ProduceResponsePartition] = f(Array(ProduceResponsePartition))


@struct
class ProduceResponseNodeEndpoint(Struct):
    node_id: int = f(INT32, versions="10+")
    host: str = f(STRING, versions="10+")
    port: int = f(INT32, versions="10+")
    rack: str | None = f(STRING, versions="10+", nullable="10+", default=None)


@message(api_key=ApiKey.PRODUCE, versions="0-11", flexible="9+")
class ProduceResponse(Response):
    responses: list[ProduceResponseTopic] = f(Array(ProduceResponseTopic))
    throttle_time_ms: int = f(INT32, versions="1+", default=0, ignorable=True)
    node_endpoints: list[ProduceResponseNodeEndpoint] = f(
        Array(ProduceResponseNodeEndpoint), versions="10+", tag=0)


pair(ProduceRequest, ProduceResponse)
