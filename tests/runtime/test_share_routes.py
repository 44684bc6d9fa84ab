"""Where the share fetcher sends each assigned partition: to its leader as the cluster's
metadata names it now. The grouping is kept between rounds and worked out again when the
assignment or the metadata changes; a partition without a known leader asks for a refresh at
every round. A real ``Cluster`` (never connected) with its metadata set by the test."""

from __future__ import annotations

import uuid

from groupkit.config import ClientConfig
from groupkit.runtime.cluster import Cluster
from groupkit.runtime.metadata import ClusterMetadata, PartitionInfo, TopicInfo
from groupkit.runtime.share_fetcher import ShareFetcher
from groupkit.share import FetchSettings, SharePartition

TOPIC_ID = uuid.UUID(int=9)
P0 = SharePartition("orders", 0, TOPIC_ID)
P1 = SharePartition("orders", 1, TOPIC_ID)
P2 = SharePartition("orders", 2, TOPIC_ID)


def _metadata(*leaders: int) -> ClusterMetadata:
    parts = {i: PartitionInfo(i, leader) for i, leader in enumerate(leaders)}
    return ClusterMetadata(topics={"orders": TopicInfo("orders", parts, TOPIC_ID)})


def _fetcher() -> tuple[Cluster, ShareFetcher]:
    cluster = Cluster(ClientConfig(bootstrap_servers="127.0.0.1:9092"))
    return cluster, ShareFetcher(cluster, "g", "m", FetchSettings())


def _routes(fetcher: ShareFetcher) -> dict[int, set[SharePartition]]:
    return {node: set(ps) for node, ps in fetcher._by_leader().items()}


def test_partitions_go_to_the_leader_the_current_metadata_names() -> None:
    cluster, fetcher = _fetcher()
    cluster.metadata = _metadata(1, 2, 1)
    fetcher.assign(frozenset({P0, P1, P2}))
    assert _routes(fetcher) == {1: {P0, P2}, 2: {P1}}
    cluster.metadata = _metadata(3, 2, 1)  # a refresh found P0's leader moved
    assert _routes(fetcher) == {3: {P0}, 2: {P1}, 1: {P2}}
    fetcher.assign(frozenset({P1}))
    assert _routes(fetcher) == {2: {P1}}


def test_a_partition_without_a_leader_asks_for_a_refresh_every_round() -> None:
    cluster, fetcher = _fetcher()
    cluster.metadata = _metadata(1, -1)
    fetcher.assign(frozenset({P0, P1}))
    for _ in range(2):
        cluster._stale = False  # as after a refresh that still names no leader
        assert _routes(fetcher) == {1: {P0}, -1: {P1}}
        assert cluster.stale
