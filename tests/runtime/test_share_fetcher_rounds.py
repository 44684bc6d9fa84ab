"""The share fetcher's rounds without a broker: where it sends each assigned partition (to its
leader as the cluster's metadata names it now; the grouping is kept between rounds and worked
out again when the assignment or the metadata changes; a partition without a known leader asks
for a refresh at every round), and how often an answer wakes the application. A real
``Cluster`` (never connected) with its metadata set by the test; answers handed to the fetcher
as its thread gets them from a connection."""

from __future__ import annotations

import uuid
from concurrent.futures import Future
from typing import Any

import attrs
import pytest

from groupkit.config import ClientConfig
from groupkit.errors import (
    FeatureUnsupportedError,
    IllegalStateError,
    KafkaConnectionError,
    ShareSessionNotFoundError,
)
from groupkit.protocol.messages.share_fetch import (
    ACQUIRE_RECORD_LIMIT,
    AcquiredRecords,
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareAcknowledgeResponsePartition,
    ShareAcknowledgeResponseTopic,
    ShareFetchResponse,
    ShareFetchResponsePartition,
    ShareFetchResponseTopic,
)
from groupkit.protocol.records import encode_batch
from groupkit.protocol.schema import Request
from groupkit.runtime.cluster import Cluster
from groupkit.runtime.metadata import ClusterMetadata, PartitionInfo, TopicInfo
from groupkit.runtime.share_fetcher import ShareFetcher, _InFlight, _Kind
from groupkit.share import AcknowledgeType, FetchSettings, SharePartition, ShareSession

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


def _woken() -> tuple[ShareFetcher, list[int]]:
    """A fetcher of partition 0, led by node 1, and the list each of its wakeups of the
    application adds to."""
    cluster, _ = _fetcher()
    cluster.metadata = _metadata(1)
    rings: list[int] = []
    return ShareFetcher(cluster, "g", "m", FetchSettings(), ready=lambda: rings.append(1)), rings


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


# --- wakeups -----------------------------------------------------------------------------------


def _answer(first: int, count: int, partition: int = 0) -> ShareFetchResponse:
    data = encode_batch([(None, b"v%d" % (first + i)) for i in range(count)], base_offset=first)
    part = ShareFetchResponsePartition(
        partition_index=partition, error_code=0, acknowledge_error_code=0, records=data,
        acquired_records=[AcquiredRecords(first_offset=first, last_offset=first + count - 1,
                                          delivery_count=1)])
    return ShareFetchResponse(
        throttle_time_ms=0, error_code=0, acquisition_lock_timeout_ms=30_000,
        responses=[ShareFetchResponseTopic(topic_id=TOPIC_ID, partitions=[part])],
        node_endpoints=[])


def _fetch_answered(fetcher: ShareFetcher, first: int, count: int) -> None:
    """One ShareFetch to node 1 (carrying whatever acknowledgements wait) and its answer."""
    sent = fetcher.ledger.take()
    flight = _InFlight(_Kind.FETCH, 1, sent.token, sent.acks, {(TOPIC_ID, 0): P0}, 0.0, [])
    fetcher._respond(flight, _answer(first, count), 0.0)


def test_an_answer_with_records_and_acknowledgement_results_wakes_the_application_once() -> None:
    fetcher, rings = _woken()
    fetcher._sessions[1] = ShareSession("g", "m", 1)
    _fetch_answered(fetcher, 0, 5)
    delivered: dict[SharePartition, list[range]] = {}
    assert len(fetcher.take(10, delivered)) == 5 and rings == [1]
    fetcher.acknowledge_all(delivered, AcknowledgeType.ACCEPT)
    _fetch_answered(fetcher, 5, 5)  # carries the five acceptances, brings five records
    assert rings == [1, 1]
    assert fetcher.results()[0].acks == dict.fromkeys(range(5), int(AcknowledgeType.ACCEPT))
    assert [r.offset for r in fetcher.take(10, {})] == [5, 6, 7, 8, 9]


def _empty_answer(partition: int = 0) -> ShareFetchResponse:
    part = ShareFetchResponsePartition(partition_index=partition, error_code=0,
                                       acknowledge_error_code=0, records=None,
                                       acquired_records=[])
    return ShareFetchResponse(
        throttle_time_ms=0, error_code=0, acquisition_lock_timeout_ms=30_000,
        responses=[ShareFetchResponseTopic(topic_id=TOPIC_ID, partitions=[part])],
        node_endpoints=[])


def _fetch_planned(fetcher: ShareFetcher, now: float) -> _InFlight | None:
    """The ShareFetch the fetcher would send node 1 now, marked in flight, if any."""
    plan = fetcher._plan(1, [P0], [], now, [])
    if plan is None:
        return None
    assert plan[0].kind is _Kind.FETCH
    fetcher._in_flight[1] = plan[0]
    return plan[0]


def test_while_the_application_wants_records_an_empty_answer_is_fetched_again_unwoken() -> None:
    # Java's ShareConsumeRequestManager: a poll that collected nothing turns fetchMoreRecords
    # on; the background thread fetches from every node with nothing pending until an answer
    # acquires records, with no further word from the application.
    fetcher, rings = _woken()
    fetcher.assign(frozenset({P0}))
    assert _fetch_planned(fetcher, 0.0) is None  # nobody has asked for records yet
    assert fetcher.take(10, {}) == []  # the application comes up empty and waits
    flight = _fetch_planned(fetcher, 0.0)
    assert flight is not None
    for at in (0.5, 1.0):
        fetcher._respond(flight, _empty_answer(), at)
        assert rings == []  # an empty answer wakes nobody ...
        flight = _fetch_planned(fetcher, at)  # ... and the fetcher asks again by itself
        assert flight is not None
    fetcher._respond(flight, _answer(0, 5), 1.5)
    assert rings == [1]
    # Records arrived: nothing more is acquired until the application comes up empty again.
    assert _fetch_planned(fetcher, 1.5) is None
    assert len(fetcher.take(10, {})) == 5
    assert _fetch_planned(fetcher, 1.6) is None
    assert fetcher.take(10, {}) == []
    assert _fetch_planned(fetcher, 1.7) is not None


# --- answers on the thread that completed them -------------------------------------------------


def _done(result: object) -> Future[Any]:
    future: Future[Any] = Future()
    if isinstance(result, BaseException):
        future.set_exception(result)
    else:
        future.set_result(result)
    return future


def _rung(fetcher: ShareFetcher) -> bool:
    """Whether the fetcher thread's bell was rung since the last look (the look uses it up)."""
    return fetcher._bell.wait(0)


def test_an_answer_is_handled_where_it_arrives_and_wakes_the_fetcher_thread_only_for_work() -> None:
    # Java's network thread handles each response itself; here the connection's reader thread
    # does, and the fetcher thread hears of it only when the answer leaves it something to send.
    fetcher, rings = _woken()
    fetcher.assign(frozenset({P0}))
    assert fetcher.take(10, {}) == []  # the application comes up empty
    assert _rung(fetcher)
    flight = _fetch_planned(fetcher, 0.0)
    assert flight is not None
    fetcher._answered(flight, _done(_empty_answer()))
    assert _rung(fetcher) and rings == []  # it still wants records: the fetcher asks again
    flight = _fetch_planned(fetcher, 0.1)
    assert flight is not None
    fetcher._answered(flight, _done(_answer(0, 5)))
    assert rings == [1] and not _rung(fetcher)  # records: the poll wakes, the fetcher need not
    assert fetcher._in_flight == {}
    delivered: dict[SharePartition, list[range]] = {}
    assert len(fetcher.take(10, delivered)) == 5
    fetcher.acknowledge_all(delivered, AcknowledgeType.ACCEPT)
    _rung(fetcher)  # take rang it; the acceptances now wait for node 1
    # An answer from node 1 to a request that did not carry them: the fetcher sends them now.
    fetcher._answered(_InFlight(_Kind.FETCH, 1, 0, {}, {(TOPIC_ID, 0): P0}, 0.2, []),
                      _done(_answer(5, 5)))
    assert _rung(fetcher)


def test_a_failed_request_goes_to_the_fetcher_thread() -> None:
    cluster, fetcher = _fetcher()
    cluster.metadata = _metadata(1)
    flight = _InFlight(_Kind.FETCH, 1, 0, {}, {(TOPIC_ID, 0): P0}, 0.0, [])
    fetcher._answered(flight, _done(KafkaConnectionError("the connection closed")))
    assert _rung(fetcher) and len(fetcher._inbox) == 1


def test_an_answer_that_breaks_its_handling_stops_the_fetcher_with_the_error() -> None:
    # As a fault on the fetcher thread does: the consumer raises it instead of waiting forever.
    fetcher, rings = _woken()
    flight = _InFlight(_Kind.FETCH, 1, 0, {}, {(TOPIC_ID, 0): P0}, 0.0, [])
    fetcher._answered(flight, _done(_answer(0, 5)))  # no session with node 1: a fetcher bug
    assert isinstance(fetcher.error, IllegalStateError) and "KeyError" in str(fetcher.error)
    assert rings == [1]


# --- which leaders a round fetches from ----------------------------------------------------------


@attrs.define(eq=False)
class _Kept(ShareFetcher):
    """A fetcher that keeps the requests it would send."""

    sent: list[tuple[_InFlight, Request]] = attrs.field(init=False, factory=list)

    def _send(self, flight: _InFlight, request: Request) -> None:
        self.sent.append((flight, request))


def _three_leaders(mode: int) -> _Kept:
    cluster, _ = _fetcher()
    cluster.metadata = _metadata(1, 2, 3)
    fetcher = _Kept(cluster, "g", "m", FetchSettings(acquire_mode=mode))
    fetcher.assign(frozenset({P0, P1, P2}))
    assert fetcher.take(10, {}) == []  # the application comes up empty
    return fetcher


def _round(fetcher: _Kept, now: float) -> list[tuple[_Kind, int]]:
    """What one round of the fetcher thread sends: (kind, node) of each request."""
    fetcher.sent.clear()
    fetcher._send_due(now)
    return [(flight.kind, flight.node) for flight, _ in fetcher.sent]


def test_by_default_every_leader_is_fetched_from_at_once() -> None:
    # Java's default (batch_optimized): a ShareFetch to every node without a request pending.
    fetcher = _three_leaders(FetchSettings().acquire_mode)
    assert _round(fetcher, 0.0) == [(_Kind.FETCH, 1), (_Kind.FETCH, 2), (_Kind.FETCH, 3)]


def test_in_record_limit_mode_one_leader_is_fetched_from_at_a_time_in_turn() -> None:
    # Java's record_limit mode and librdkafka's share consumer: one node gets the ShareFetch,
    # the next partition's leader the next time; the others get their acknowledgements alone.
    fetcher = _three_leaders(ACQUIRE_RECORD_LIMIT)
    assert _round(fetcher, 0.0) == [(_Kind.FETCH, 1)]
    assert _round(fetcher, 0.1) == []  # not while that ShareFetch is out
    first = fetcher._in_flight[1]
    fetcher._respond(first, _answer(0, 5), 0.2)
    assert _round(fetcher, 0.2) == []  # records came: nothing until the application has them
    delivered: dict[SharePartition, list[range]] = {}
    assert len(fetcher.take(10, delivered)) == 5
    fetcher.acknowledge_all(delivered, AcknowledgeType.ACCEPT)
    assert fetcher.take(10, {}) == []
    assert _round(fetcher, 0.3) == [(_Kind.ACK, 1), (_Kind.FETCH, 2)]
    ack = fetcher._in_flight[1]
    assert ack.acks == {P0: dict.fromkeys(range(5), int(AcknowledgeType.ACCEPT))}
    fetcher._respond(fetcher._in_flight[2], _empty_answer(1), 0.4)
    # An empty answer: the next leader in turn, while the application still wants records.
    assert _round(fetcher, 0.4) == [(_Kind.FETCH, 3)]
    fetcher._respond(fetcher._in_flight[3], _empty_answer(2), 0.5)
    # Node 1's turn again, but its acknowledgements are still out: node 2 goes before it.
    assert _round(fetcher, 0.5) == [(_Kind.FETCH, 2)]


# --- renewals (KIP-1222) -----------------------------------------------------------------------


def _renewing_fetcher(cluster: Cluster | None = None) -> ShareFetcher:
    """A fetcher of partition 0 (leader node 1, session open) holding offsets 0-4, offset 0
    acknowledged RENEW, and an application that came up empty since (a fetch is due)."""
    cluster = cluster or Cluster(ClientConfig(bootstrap_servers="127.0.0.1:9092"))
    cluster.metadata = _metadata(1)
    fetcher = ShareFetcher(cluster, "g", "m", FetchSettings())
    fetcher.assign(frozenset({P0}))
    fetcher._sessions[1] = ShareSession("g", "m", 1, epoch=3)
    _fetch_answered(fetcher, 0, 5)
    fetcher.take(10, {})
    fetcher.acknowledge(P0, 0, AcknowledgeType.RENEW, 1)
    fetcher._polls = fetcher._served + 1
    return fetcher


def test_a_renewal_goes_on_a_share_acknowledge_of_its_own_even_with_a_fetch_due() -> None:
    fetcher = _renewing_fetcher()
    plan = fetcher._plan(1, [P0], [P0], 0.0, [])
    assert plan is not None
    flight, request = plan
    assert flight.kind is _Kind.ACK and isinstance(request, ShareAcknowledgeRequest)
    assert request.is_renew_ack
    fetcher._in_flight[1] = flight
    fetcher._respond(flight, ShareAcknowledgeResponse(
        throttle_time_ms=0, error_code=0, acquisition_lock_timeout_ms=45_000,
        responses=[ShareAcknowledgeResponseTopic(topic_id=TOPIC_ID, partitions=[
            ShareAcknowledgeResponsePartition(partition_index=0, error_code=0)])],
        node_endpoints=[]), 10.0)
    assert fetcher.ledger.is_held(P0, 0)  # this member's again, until 10 + 45 s
    assert fetcher.ledger.expire(54.9) == {P0: [1, 2, 3, 4]}  # the first answer's 30 s
    assert fetcher.ledger.expire(55.0) == {P0: [0]}
    plan = fetcher._plan(1, [P0], [], 10.0, [])  # the fetch that was due goes next
    assert plan is not None and plan[0].kind is _Kind.FETCH


def test_renewals_for_a_lost_session_fail_at_once_and_the_fetch_goes_on() -> None:
    fetcher = _renewing_fetcher()
    fetcher._sessions[1].failed()  # the connection dropped: the broker released the records
    failed: list[Any] = []
    plan = fetcher._plan(1, [P0], [P0], 0.0, failed)
    assert plan is not None and plan[0].kind is _Kind.FETCH and plan[0].acks == {}
    [(node, acks, error, tickets)] = failed
    assert (node, acks, tickets) == (1, {P0: {0: 4}}, [])
    assert isinstance(error, ShareSessionNotFoundError)
    assert not fetcher.ledger.renews([P0]) and not fetcher.ledger.is_held(P0, 0)


def test_a_commit_for_a_lost_session_is_answered_with_the_loss() -> None:
    fetcher = _renewing_fetcher()
    fetcher.acknowledge(P0, 1, AcknowledgeType.ACCEPT)
    fetcher._sessions[1].failed()
    ticket = fetcher.commit()
    failed: list[Any] = []
    assert fetcher._plan(1, [], [P0], 0.0, failed) is None
    for node, acks, error, tickets in failed:
        fetcher._acks_answered(node, acks, error, tickets, 0.0)
    assert ticket.done.is_set()
    [result] = ticket.results
    assert result.acks == {0: 4, 1: 1} and isinstance(result.error, ShareSessionNotFoundError)


@attrs.define
class _OldLeader:
    """A connection to a broker speaking ShareAcknowledge v1 (Kafka 4.1, the mock)."""

    address: str = "127.0.0.1:9"
    connected: bool = True
    versions: dict[int, int] = attrs.field(factory=lambda: {78: 1, 79: 1})

    def send(self, request: Request, version: int) -> Future[Any]:
        raise AssertionError("nothing is sent")


class _OldCluster(Cluster):
    def connection(self, node_id: int, purpose: str = "") -> Any:
        return _OldLeader()


def test_a_renewal_for_a_leader_speaking_v1_is_refused_before_anything_is_sent() -> None:
    fetcher = _renewing_fetcher(_OldCluster(ClientConfig(bootstrap_servers="127.0.0.1:9092")))
    with pytest.raises(FeatureUnsupportedError, match=r"127\.0\.0\.1:9 \(node 1\).*v2"):
        fetcher.check_renewal(P0)
    plan = fetcher._plan(1, [P0], [P0], 0.0, [])
    assert plan is not None
    fetcher._in_flight[1] = plan[0]
    epoch = fetcher._sessions[1].epoch
    fetcher._send(*plan)
    [result] = fetcher.results()
    assert isinstance(result.error, FeatureUnsupportedError) and result.acks == {0: 4}
    assert fetcher._in_flight == {} and fetcher._sessions[1].epoch == epoch
    assert fetcher.error is None  # the consumer goes on
    assert not fetcher.ledger.is_held(P0, 0)
