"""ListOffsets (key 2): find a partition's offset for a timestamp (or earliest / latest).

v0 asks for up to ``max_num_offsets`` offsets and answers with an ``old_style_offsets`` array;
v1 answers with one offset and its timestamp; v2 adds the isolation level; v4 the leader epoch;
v6 is the first flexible version; v7-v9 only add special timestamps (max timestamp, local log
start, last tiered offset).
"""

from __future__ import annotations

from groupkit.errors import ApiKey
from groupkit.protocol.schema import (
    INT8,
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
    too_old,
)

#: Special ``timestamp`` values of a request partition.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5

#: The lowest version that can ask for a timestamp (Java's ListOffsetsRequest.Builder picks
#: its minimum version the same way): v0 answers another question for a real timestamp
#: (offsets of the segments before it), and the special values below -2 came later.
_NEEDS = {MAX_TIMESTAMP: (7, "the offset of the largest timestamp (MAX_TIMESTAMP)"),
          EARLIEST_LOCAL_TIMESTAMP: (8, "the earliest local offset (EARLIEST_LOCAL_TIMESTAMP)"),
          LATEST_TIERED_TIMESTAMP: (9, "the latest tiered offset (LATEST_TIERED_TIMESTAMP)")}
_FOR_A_TIMESTAMP = (1, "offsets for a timestamp")


@struct
class ListOffsetsRequestPartition(Struct):
    partition_index: int = f(INT32)
    current_leader_epoch: int = f(INT32, versions="4+", default=-1, ignorable=True)
    timestamp: int = f(INT64)
    max_num_offsets: int = f(INT32, versions="0", default=1)


@struct
class ListOffsetsRequestTopic(Struct):
    name: str = f(STRING)
    partitions: list[ListOffsetsRequestPartition] = f(Array(ListOffsetsRequestPartition))


@message(api_key=ApiKey.LIST_OFFSETS, versions="0-9", flexible="6+")
class ListOffsetsRequest(Request):
    replica_id: int = f(INT32)
    isolation_level: int = f(INT8, versions="2+", feature="read_committed offsets (isolation_level)")
    topics: list[ListOffsetsRequestTopic] = f(Array(ListOffsetsRequestTopic))

    def check_timestamps(self, version: int) -> None:
        """Refuse a timestamp ``version`` would answer another question for, as Java's
        ListOffsetsRequest.Builder (which picks its lowest version by them) does: the error
        names the release that has it. Not part of encoding: v0 with a timestamp is a valid
        request, only not the lookup a caller of ``timestamp`` means."""
        for topic in self.topics:
            for p in topic.partitions:
                if p.timestamp in (LATEST_TIMESTAMP, EARLIEST_TIMESTAMP):
                    continue
                since, feature = _NEEDS.get(p.timestamp, _FOR_A_TIMESTAMP)
                if version < since:
                    raise too_old(type(self), version, feature, since)


@struct
class ListOffsetsResponsePartition(Struct):
    partition_index: int = f(INT32)
    error_code: int = f(INT16)
    old_style_offsets: list[int] = f(Array(INT64), versions="0")
    timestamp: int = f(INT64, versions="1+", default=-1)
    offset: int = f(INT64, versions="1+", default=-1)
    leader_epoch: int = f(INT32, versions="4+", default=-1)


@struct
class ListOffsetsResponseTopic(Struct):
    name: str = f(STRING)
    partitions: list[ListOffsetsResponsePartition] = f(Array(ListOffsetsResponsePartition))


@message(api_key=ApiKey.LIST_OFFSETS, versions="0-9", flexible="6+")
class ListOffsetsResponse(Response):
    throttle_time_ms: int = f(INT32, versions="2+", ignorable=True)
    topics: list[ListOffsetsResponseTopic] = f(Array(ListOffsetsResponseTopic))


pair(ListOffsetsRequest, ListOffsetsResponse)
