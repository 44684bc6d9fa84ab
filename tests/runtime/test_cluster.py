"""Cluster: the metadata value (no network), then bootstrap, routing and coordinators on Tansu."""

from __future__ import annotations

import socket
import time
import uuid

import attrs
import pytest

from groupkit.config import ClientConfig
from groupkit.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    GroupAuthorizationFailedError,
    IllegalStateError,
    KafkaConnectionError,
    NoBrokersAvailable,
    NotLeaderOrFollowerError,
    UnknownTopicOrPartitionError,
)
from groupkit.protocol.messages.create_topics import CreateTopicsRequest, CreateTopicsRequestTopic
from groupkit.protocol.messages.list_groups import ListGroupsRequest
from groupkit.protocol.messages.list_offsets import (
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
)
from groupkit.protocol.messages.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from groupkit.runtime.cluster import COORDINATOR, DEFAULT, FETCH, Cluster
from groupkit.runtime.metadata import BrokerInfo, ClusterMetadata
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401

TOPIC_ID = uuid.UUID(int=7)


def _partition(index: int, leader: int, error: int = 0) -> MetadataResponsePartition:
    return MetadataResponsePartition(error_code=error, partition_index=index, leader_id=leader,
                                     leader_epoch=3, replica_nodes=[1, 2], isr_nodes=[1])


def _response(topics: list[MetadataResponseTopic]) -> MetadataResponse:
    return MetadataResponse(
        brokers=[MetadataResponseBroker(node_id=1, host="a", port=9092),
                 MetadataResponseBroker(node_id=2, host="b", port=9093, rack="r2")],
        cluster_id="c", controller_id=2, topics=topics)


ORDERS = MetadataResponseTopic(error_code=0, name="orders", topic_id=TOPIC_ID, partitions=[
    _partition(0, 1), _partition(1, 2), _partition(2, -1, error=5)])
MISSING = MetadataResponseTopic(error_code=3, name="missing", partitions=[])


# --- the metadata value ------------------------------------------------------------------------


def test_metadata_from_response_indexes_brokers_topics_and_leaders() -> None:
    md = ClusterMetadata.from_response(_response([ORDERS, MISSING]))
    assert md.brokers[2] == BrokerInfo(2, "b", 9093, "r2")
    assert md.controller_id == 2 and md.cluster_id == "c"
    assert md.leader_for("orders", 0) == 1
    assert md.leader_for("orders", 1) == 2
    assert md.leader_for("orders", 2) is None  # LEADER_NOT_AVAILABLE
    assert md.leader_for("orders", 9) is None
    assert md.partition_count("orders") == 3
    assert md.topics["orders"].available == (0, 1)
    assert md.topics["orders"].partitions[1].leader_epoch == 3
    assert md.topic_name(TOPIC_ID) == "orders"
    assert "missing" not in md.topics and md.topic_errors == {"missing": 3}


def test_metadata_update_replaces_only_the_topics_it_asked_about() -> None:
    old = ClusterMetadata.from_response(_response([ORDERS, MISSING]))
    moved = MetadataResponseTopic(error_code=0, name="orders", partitions=[_partition(0, 2)])
    newer = ClusterMetadata.from_response(_response([moved]))
    merged = old.updated(newer, asked=["orders"])
    assert merged.leader_for("orders", 0) == 2 and merged.partition_count("orders") == 1
    assert merged.topic_errors == {"missing": 3}
    gone = old.updated(ClusterMetadata.from_response(_response([])), asked=["orders", "missing"])
    assert gone.topics == {} and gone.topic_errors == {}
    assert old.updated(newer, asked=None) is newer


# --- bootstrap ---------------------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_bootstrap_gives_no_brokers_available_quickly() -> None:
    port = _closed_port()
    cluster = Cluster(ClientConfig(bootstrap_servers=f"127.0.0.1:{port}",
                                   reconnect_backoff_ms=10, reconnect_backoff_max_ms=10))
    started = time.monotonic()
    with pytest.raises(NoBrokersAvailable) as info:
        cluster.bootstrap(timeout_ms=3000)
    assert time.monotonic() - started < 3.5
    message = str(info.value)
    assert f"127.0.0.1:{port}" in message and "bootstrap_servers" in message
    assert info.value.retriable


def test_bootstrap_tries_servers_in_turn(kafka_broker) -> None:  # noqa: F811
    dead = f"127.0.0.1:{_closed_port()}"
    cluster = Cluster(ClientConfig(bootstrap_servers=[dead, kafka_broker.bootstrap_servers]))
    try:
        md = cluster.bootstrap()
        assert [b.port for b in md.brokers.values()] == [kafka_broker.port]
    finally:
        cluster.close()


# --- routing and refresh -----------------------------------------------------------------------


@pytest.fixture
def cluster(kafka_broker):  # noqa: F811
    c = Cluster(ClientConfig(bootstrap_servers=kafka_broker.bootstrap_servers))
    c.bootstrap()
    yield c
    c.close()


def _create(cluster: Cluster, name: str, partitions: int) -> None:
    response = cluster.call(cluster.least_loaded_node(), CreateTopicsRequest(topics=[
        CreateTopicsRequestTopic(name=name, num_partitions=partitions, replication_factor=1,
                                 assignments=[], configs=[])], timeout_ms=5000))
    assert response.topics[0].error_code == 0


def test_pool_keeps_one_connection_per_node_and_purpose(cluster) -> None:
    node = cluster.least_loaded_node()
    default, fetch, coord = (cluster.connection(node, p) for p in (DEFAULT, FETCH, COORDINATOR))
    assert len({id(default), id(fetch), id(coord)}) == 3
    assert cluster.connection(node, FETCH) is fetch
    for purpose in (DEFAULT, FETCH):
        assert cluster.call(node, ListGroupsRequest(), purpose).error_code == 0
    assert default.connected and fetch.connected


def test_a_node_that_moved_is_reached_at_its_new_address(kafka_broker) -> None:  # noqa: F811
    """A broker that comes back at another address: once metadata names the new one, the pool
    connects there instead of retrying the old address forever (Java reconnects to the address
    metadata gives). The old address is a closed port put in the metadata, as a broker cannot
    be moved on demand."""
    cluster = Cluster(ClientConfig(bootstrap_servers=kafka_broker.bootstrap_servers,
                                   reconnect_backoff_ms=1, reconnect_backoff_max_ms=1))
    try:
        real = cluster.bootstrap()
        node = next(iter(real.brokers))
        old = BrokerInfo(node, "127.0.0.1", _closed_port())
        cluster.metadata = attrs.evolve(real, brokers={node: old})
        stale = cluster.connection(node)
        with pytest.raises(KafkaConnectionError):
            cluster.call(node, ListGroupsRequest(), deadline=time.monotonic() + 5)
        cluster.metadata = real
        assert cluster.call(node, ListGroupsRequest(), deadline=time.monotonic() + 5).error_code == 0
        moved = cluster.connection(node)
        assert moved is not stale and moved.port == kafka_broker.port and moved.connected
        with pytest.raises(KafkaConnectionError, match="closed by close"):
            stale.send(ListGroupsRequest()).result(5)
    finally:
        cluster.close()


def test_an_established_connection_is_kept_when_metadata_names_another_address(
        cluster) -> None:
    node = cluster.least_loaded_node()
    assert cluster.call(node, ListGroupsRequest()).error_code == 0
    conn = cluster.connection(node)
    cluster.metadata = attrs.evolve(cluster.metadata, brokers={
        node: BrokerInfo(node, "127.0.0.1", _closed_port())})
    assert cluster.connection(node) is conn and conn.connected


def test_refresh_learns_new_topics_and_routes_to_leaders(cluster, unique_name) -> None:  # noqa: F811
    topic = unique_name("routed")
    _create(cluster, topic, 12)
    assert cluster.metadata.topic(topic) is None
    md = cluster.refresh([topic])
    assert md.partition_count(topic) == 12
    request = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequestTopic(
        name=topic, partitions=[ListOffsetsRequestPartition(partition_index=11, timestamp=-2)])])
    response = cluster.send_to_leader(topic, 11, request).result(10)
    assert response.topics[0].partitions[0].error_code == 0


def test_stale_errors_and_max_age_trigger_refresh(kafka_broker, unique_name) -> None:  # noqa: F811
    cluster = Cluster(ClientConfig(bootstrap_servers=kafka_broker.bootstrap_servers,
                                   metadata_max_age_ms=200))
    try:
        cluster.bootstrap()
        topic = unique_name("aged")
        cluster.add_topics([topic])
        cluster.maybe_refresh()
        assert not cluster.stale
        cluster.observe(NotLeaderOrFollowerError())
        assert cluster.stale
        cluster.maybe_refresh()
        cluster.observe(KafkaConnectionError("broken"))
        assert cluster.stale
        cluster.maybe_refresh()
        cluster.observe(GroupAuthorizationFailedError())
        assert not cluster.stale
        _create(cluster, topic, 2)
        before = cluster.maybe_refresh()
        assert before.partition_count(topic) is None
        time.sleep(0.25)  # the age limit itself is what this test checks
        assert cluster.maybe_refresh().partition_count(topic) == 2
    finally:
        cluster.close()


def test_unknown_topic_is_refused_with_a_named_error(cluster, unique_name) -> None:  # noqa: F811
    topic = unique_name("nowhere")
    md = cluster.refresh([topic])
    assert md.topic(topic) is None and md.topic_errors[topic] == 3
    request = ListOffsetsRequest(replica_id=-1, topics=[])
    with pytest.raises(UnknownTopicOrPartitionError):
        cluster.send_to_leader(topic, 0, request).result(10)


def test_close_refuses_later_requests(kafka_broker) -> None:  # noqa: F811
    cluster = Cluster(ClientConfig(bootstrap_servers=kafka_broker.bootstrap_servers))
    cluster.bootstrap()
    node = cluster.least_loaded_node()
    conn = cluster.connection(node)
    cluster.close()
    assert not conn.connected
    with pytest.raises(IllegalStateError):
        cluster.connection(node)


# --- coordinators ------------------------------------------------------------------------------


def test_batched_coordinator_lookup_caches(cluster) -> None:
    node = cluster.least_loaded_node()
    assert cluster.api_version(node, 10) >= 4
    found = cluster.coordinators(["g1", "g2", "g1"])
    assert list(found) == ["g1", "g2"] and set(found.values()) <= set(cluster.metadata.brokers)
    cluster.connection(node).close()  # a cached answer needs no request
    assert cluster.coordinator("g1") == found["g1"]


def test_single_key_coordinator_lookup_before_v4(kafka_broker) -> None:  # noqa: F811
    cluster = Cluster(ClientConfig(bootstrap_servers=kafka_broker.bootstrap_servers))
    try:
        cluster.bootstrap()
        node = cluster.least_loaded_node()
        conn = cluster.connection(node)
        conn.connect()
        conn.versions[10] = 3
        found = cluster.coordinators(["a", "b"])
        assert set(found.values()) == {node}
        response = cluster.send_to_coordinator("a", ListGroupsRequest()).result(10)
        assert response.error_code == 0
    finally:
        cluster.close()


def test_coordinator_lookup_retries_while_the_coordinator_loads(cluster, monkeypatch) -> None:
    node = cluster.least_loaded_node()
    answers = [{"g": CoordinatorLoadInProgressError()}, {"g": CoordinatorNotAvailableError()},
               {"g": BrokerInfo(node, "127.0.0.1", 1)}]
    monkeypatch.setattr(Cluster, "_find_coordinators", lambda self, keys, key_type, deadline: answers.pop(0))
    assert cluster.coordinator("g") == node and answers == []


def test_coordinator_lookup_raises_other_errors_and_times_out(cluster, monkeypatch) -> None:
    monkeypatch.setattr(Cluster, "_find_coordinators",
                        lambda self, keys, key_type, deadline: {"g": GroupAuthorizationFailedError()})
    with pytest.raises(GroupAuthorizationFailedError):
        cluster.coordinator("g")
    monkeypatch.setattr(Cluster, "_find_coordinators",
                        lambda self, keys, key_type, deadline: {"h": CoordinatorNotAvailableError()})
    with pytest.raises(Exception, match="no coordinator found for h"):
        cluster.coordinators(["h"], timeout_ms=300)


def test_failed_refresh_backs_off_instead_of_spinning() -> None:
    with LocalBroker() as broker:
        cluster = Cluster(ClientConfig(bootstrap_servers=broker.bootstrap_servers,
                                       retry_backoff_ms=500, retry_backoff_max_ms=1000,
                                       request_timeout_ms=2000))
        cluster.bootstrap()
        assert cluster.refresh_due_in() > 0
    try:
        cluster.request_refresh()
        assert cluster.refresh_due_in() == 0
        with pytest.raises(NoBrokersAvailable):
            cluster.refresh()
        assert 0.3 < cluster.refresh_due_in() <= 0.6
    finally:
        cluster.close()
