"""Admin.log_end_offsets against a fake broker: ListOffsets "latest" checked with a Fetch from
that offset, the larger figure winning, and a partition-level Fetch error leaving ListOffsets'
answer. (On the local broker the same is tested with records written in several batches.)"""

from __future__ import annotations

from typing import Any

import pytest

from assignors import TopicPartition
from groupkit.admin import Admin
from groupkit.errors import ApiKey, ErrorCode
from groupkit.protocol.headers import RequestHeader, decode_request_frame
from groupkit.protocol.messages.fetch import (
    FetchResponse,
    FetchResponsePartition,
    FetchResponseTopic,
)
from groupkit.protocol.messages.list_offsets import (
    LATEST_TIMESTAMP,
    ListOffsetsResponse,
    ListOffsetsResponsePartition,
    ListOffsetsResponseTopic,
)
from tests.support.fake_broker import FakeCluster

#: Per partition of "t": (ListOffsets "latest", Fetch high watermark, Fetch error code).
ANSWERS = {0: (31, 50, ErrorCode.NONE), 1: (12, 12, ErrorCode.NONE),
           2: (40, -1, ErrorCode.OFFSET_OUT_OF_RANGE), 3: (9, 7, ErrorCode.NONE)}


class EndsCluster(FakeCluster):
    def __init__(self) -> None:
        self.fetches: list[object] = []
        super().__init__(self._respond, {"t": len(ANSWERS)})

    def _respond(self, header: RequestHeader, frame: bytes) -> bytes:
        _, request = decode_request_frame(frame)
        if header.api_key == ApiKey.LIST_OFFSETS:
            assert all(p.timestamp == LATEST_TIMESTAMP for t in request.topics
                       for p in t.partitions)
            response: Any = ListOffsetsResponse(topics=[ListOffsetsResponseTopic(
                name=t.name, partitions=[ListOffsetsResponsePartition(
                    partition_index=p.partition_index, error_code=0, timestamp=-1,
                    offset=ANSWERS[p.partition_index][0]) for p in t.partitions])
                for t in request.topics])
        else:
            assert header.api_key == ApiKey.FETCH
            self.fetches.append(request)
            response = FetchResponse(responses=[FetchResponseTopic(
                topic=t.topic, topic_id=t.topic_id, partitions=[FetchResponsePartition(
                    partition_index=p.partition, error_code=ANSWERS[p.partition][2],
                    high_watermark=ANSWERS[p.partition][1], records=b"")
                    for p in t.partitions]) for t in request.topics])
        return response.encode(header.api_version)


@pytest.fixture
def fake():
    cluster = EndsCluster()
    yield cluster
    cluster.close()


def test_the_fetch_high_watermark_corrects_a_short_listoffsets_answer(fake) -> None:
    partitions = [TopicPartition("t", p) for p in ANSWERS]
    with Admin(bootstrap_servers=fake.bootstrap_servers) as admin:
        ends = admin.log_end_offsets(partitions)
    # 0: Fetch knows more; 1: both agree; 2: Fetch failed for the partition, ListOffsets
    # stands; 3: never below what ListOffsets said.
    assert ends == {partitions[0]: 50, partitions[1]: 12, partitions[2]: 40, partitions[3]: 9}
    [fetch] = fake.fetches
    assert (fetch.max_wait_ms, fetch.min_bytes) == (10, 0)
    asked = {p.partition: p.fetch_offset for t in fetch.topics for p in t.partitions}
    assert asked == {p: answer[0] for p, answer in ANSWERS.items()}
