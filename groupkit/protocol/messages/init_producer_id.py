"""InitProducerId (key 22): get a producer id and epoch (idempotent or transactional producer).

v1 is v0; v2 is the first flexible version; v3 (KIP-360) sends the current producer id and epoch
so a producer can bump its epoch and go on after an abortable error instead of being fenced;
v4 may answer PRODUCER_FENCED (KIP-588) where older versions answered INVALID_PRODUCER_EPOCH;
v5 may answer TRANSACTION_ABORTABLE (KIP-890). v6 (KIP-939, two-phase commit) is not spoken.
A null ``transactional_id`` asks any broker for an idempotent producer's id; a transactional
id goes to its transaction coordinator, which also fences (and aborts the open transaction
of) the previous producer with that id.
"""

from __future__ import annotations

from groupkit.errors import ApiKey
from groupkit.protocol.schema import (
    INT16,
    INT32,
    INT64,
    STRING,
    Request,
    Response,
    f,
    message,
    pair,
)


@message(api_key=ApiKey.INIT_PRODUCER_ID, versions="0-5", flexible="2+")
class InitProducerIdRequest(Request):
    transactional_id: str | None = f(STRING, nullable="0+", default=None)
    transaction_timeout_ms: int = f(INT32)
    producer_id: int = f(INT64, versions="3+", default=-1)
    producer_epoch: int = f(INT16, versions="3+", default=-1)


@message(api_key=ApiKey.INIT_PRODUCER_ID, versions="0-5", flexible="2+")
class InitProducerIdResponse(Response):
    throttle_time_ms: int = f(INT32, ignorable=True)
    error_code: int = f(INT16)
    producer_id: int = f(INT64, default=-1)
    producer_epoch: int = f(INT16)


pair(InitProducerIdRequest, InitProducerIdResponse)
