"""OffsetStore commit rules with a scripted coordinator (no broker): per-partition outcomes.

The broker tests in tests/test_consumer.py commit and read offsets for real; here the
coordinator's answers are chosen so every branch is shown.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest

from assignors import TopicPartition
from groupkit.config import ConsumerConfig
from groupkit.errors import CommitFailedError, OffsetCommitError, OffsetMetadataTooLargeError
from groupkit.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from groupkit.runtime.offsets import OffsetStore

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
UNKNOWN_TOPIC_OR_PARTITION = 3
OFFSET_METADATA_TOO_LARGE = 12
ILLEGAL_GENERATION = 22


class ScriptedCoordinator:
    """Answers each OffsetCommit with the next scripted {partition: error code}."""

    def __init__(self, *answers: dict[int, int]) -> None:
        self.answers = list(answers)
        self.requests: list[OffsetCommitRequest] = []
        self.invalidated = 0

    def coordinator(self, group_id: str, deadline: float | None = None) -> int:
        return 1

    def invalidate_coordinator(self, group_id: str) -> None:
        self.invalidated += 1

    def send(self, node: int, request: OffsetCommitRequest, purpose: str = "default",
             version: int | None = None, timeout_ms: int | None = None,
             deadline: float | None = None) -> Future[Any]:
        self.requests.append(request)
        codes = self.answers.pop(0)
        future: Future[Any] = Future()
        future.set_result(OffsetCommitResponse(topics=[OffsetCommitResponseTopic(
            name="t", partitions=[OffsetCommitResponsePartition(partition_index=p.partition_index,
                                                                error_code=codes.get(
                                                                    p.partition_index, 0))
                                  for p in request.topics[0].partitions])]))
        return future


def store(coordinator: ScriptedCoordinator) -> OffsetStore:
    config = ConsumerConfig(bootstrap_servers="h:1", group_id="g", retry_backoff_ms=1)
    return OffsetStore(coordinator, config)  # type: ignore[arg-type]


def committed_partitions(request: OffsetCommitRequest) -> dict[int, int]:
    return {p.partition_index: p.committed_offset for p in request.topics[0].partitions}


def test_a_partial_failure_names_each_failed_partition_and_what_was_stored() -> None:
    coordinator = ScriptedCoordinator({1: OFFSET_METADATA_TOO_LARGE})
    with pytest.raises(OffsetCommitError) as caught:
        store(coordinator).commit({T0: 5, T1: 7}, timeout=5)
    assert set(caught.value.errors) == {T1}
    assert isinstance(caught.value.errors[T1], OffsetMetadataTooLargeError)
    assert caught.value.committed == {T0}
    assert "t-1" in str(caught.value)


def test_a_retriable_partition_error_retries_only_that_partition() -> None:
    coordinator = ScriptedCoordinator({0: UNKNOWN_TOPIC_OR_PARTITION}, {})
    store(coordinator).commit({T0: 5, T1: 7}, timeout=5)
    assert [committed_partitions(r) for r in coordinator.requests] == [{0: 5, 1: 7}, {0: 5}]


def test_a_commit_for_an_old_generation_raises_commit_failed() -> None:
    coordinator = ScriptedCoordinator({0: ILLEGAL_GENERATION, 1: ILLEGAL_GENERATION})
    with pytest.raises(CommitFailedError):
        store(coordinator).commit({T0: 5, T1: 7}, timeout=5)
    assert len(coordinator.requests) == 1


def test_async_commit_results_reach_the_callback_on_the_calling_thread() -> None:
    coordinator = ScriptedCoordinator({}, {1: OFFSET_METADATA_TOO_LARGE})
    offsets = store(coordinator)
    results: list[tuple[dict[TopicPartition, int], BaseException | None]] = []
    offsets.commit_async({T0: 1}, lambda o, e: results.append((dict(o), e)))
    offsets.commit_async({T0: 2, T1: 3}, lambda o, e: results.append((dict(o), e)))
    assert results == []
    offsets.run_callbacks()
    assert results[0] == ({T0: 1}, None)
    assert results[1][0] == {T0: 2, T1: 3}
    assert isinstance(results[1][1], OffsetCommitError)
