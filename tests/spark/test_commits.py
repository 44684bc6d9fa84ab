"""The group commit of completed batches: forward only, and a failure never reaches Spark."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from assignors import TopicPartition
from groupkit import Admin
from groupkit.spark.commits import GroupCommitListener
from groupkit.spark.offsets import commit_forward, encode
from groupkit.spark.source import _limit

pytestmark = pytest.mark.xdist_group("spark")


def _progress(end: dict[str, Any], batch: int = 0) -> Any:
    source = SimpleNamespace(endOffset=json.dumps(end))
    return SimpleNamespace(progress=SimpleNamespace(id="q-1", batchId=batch, sources=[source]))


def test_commits_only_move_the_group_forward(kafka_broker: Any,
                                             unique_name: Callable[[str], str]) -> None:
    servers = kafka_broker.bootstrap_servers
    topic, group = unique_name("fw"), unique_name("g")
    a, b = TopicPartition(topic, 0), TopicPartition(topic, 1)
    with Admin(bootstrap_servers=servers) as admin:
        admin.create_topics([topic], num_partitions=2)
        assert commit_forward(admin, group, {a: 10, b: 4}) == {a: 10, b: 4}
        # An older batch's end (a replay after a restart) never moves the group back.
        assert commit_forward(admin, group, {a: 7, b: 9}) == {b: 9}
        found = admin.list_group_offsets(group, [a, b])
    assert {tp: c.offset for tp, c in found.items()} == {a: 10, b: 9}


def test_the_listener_commits_a_progress_event_end_offsets(
        kafka_broker: Any, unique_name: Callable[[str], str]) -> None:
    servers = kafka_broker.bootstrap_servers
    topic, group = unique_name("ls"), unique_name("g")
    tp = TopicPartition(topic, 0)
    with Admin(bootstrap_servers=servers) as admin:
        admin.create_topics([topic], num_partitions=1)
        listener = GroupCommitListener()
        listener.onQueryProgress(_progress(encode({tp: 3}, {"group": group,
                                                            "servers": servers})))
        assert listener.heard("q-1")
        assert admin.list_group_offsets(group, [tp])[tp].offset == 3


def test_a_failed_group_commit_logs_a_warning_and_does_not_raise(
        caplog: pytest.LogCaptureFixture) -> None:
    listener = GroupCommitListener({"request_timeout_ms": 2000,
                                    "socket_connection_setup_timeout_ms": 1000})
    end = encode({TopicPartition("t", 0): 3}, {"group": "g", "servers": "127.0.0.1:1"})
    with caplog.at_level(logging.WARNING, logger="groupkit.spark.commits"):
        listener.onQueryProgress(_progress(end, batch=4))
    assert listener.heard("q-1")
    assert any("commit of 1 partition(s) to group g failed" in r.getMessage()
               for r in caplog.records)


def test_max_offsets_per_trigger_is_shared_by_lag_and_always_progresses() -> None:
    a, b, c = (TopicPartition("t", p) for p in range(3))
    begin = {a: 0, b: 100, c: 5}
    ends = {a: 300, b: 200, c: 5}
    limited = _limit(begin, ends, 40)
    assert sum(limited[tp] - begin[tp] for tp in begin) == 40
    assert limited[c] == 5 and limited[a] - begin[a] > limited[b] - begin[b] > 0
    assert _limit(begin, ends, 1000) == ends
    assert sum(_limit(begin, ends, 1)[tp] - begin[tp] for tp in begin) == 1


def test_the_source_commit_of_a_completed_batch_warns_on_failure_and_skips_repeats(
        caplog: pytest.LogCaptureFixture) -> None:
    from groupkit.errors import GroupkitError
    from groupkit.spark.offsets import SourceCluster
    from groupkit.spark.options import SourceOptions

    calls: list[dict[TopicPartition, int]] = []

    class Broken:
        def list_group_offsets(self, group: str, partitions: Any) -> dict[Any, Any]:
            return {}

        def alter_consumer_group_offsets(self, group: str, offsets: Any) -> None:
            calls.append(dict(offsets))
            if len(calls) == 1:
                raise GroupkitError("coordinator unavailable")

    cluster = SourceCluster(SourceOptions.parse(
        {"kafka.bootstrap.servers": "h:1", "subscribe": "t", "kafka.group.id": "g"},
        streaming=True))
    cluster._admin = Broken()  # type: ignore[assignment]
    end = {TopicPartition("t", 0): 5}
    with caplog.at_level(logging.WARNING, logger="groupkit.spark.offsets"):
        cluster.commit_completed(end)
    assert any("to group g failed" in r.getMessage() for r in caplog.records)
    cluster.commit_completed(end)   # retried: the first one failed
    cluster.commit_completed(end)   # an idle trigger: already committed, nothing sent
    assert calls == [end, end]
