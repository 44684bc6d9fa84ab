"""A transaction's opening call refused with CONCURRENT_TRANSACTIONS, against Tansu through the
recording proxy: Kafka answers EndTxn before it has written the markers, so the next
transaction's first AddPartitionsToTxn (or AddOffsetsToTxn) is often refused while they are
written. Tansu writes them before answering, so the proxy turns the answer into that refusal.
"""

from __future__ import annotations

import threading

import attrs
import pytest

from groupkit.errors import ApiKey, ErrorCode
from groupkit.producer import Producer
from groupkit.protocol.headers import decode_response_frame, encode_response_frame
from groupkit.protocol.messages.txn import AddOffsetsToTxnResponse, AddPartitionsToTxnResponse
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from groupkit.values import ConsumerGroupMetadata
from tests.support.broker_data import create_topic
from tests.support.recording_proxy import Exchange, RecordingProxy
from tests.support.txn_data import WAIT

pytestmark = [pytest.mark.broker, pytest.mark.xdist_group("transactions")]

OPENING = (ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN)
#: The configured retry back-off: 5 s each time (its max is its start, so no jitter).
BACKOFF_MS = 5000


def _concurrent(version: int, frame: bytes, api_key: int) -> bytes:
    """The broker's answer with every error code set to CONCURRENT_TRANSACTIONS."""
    code = ErrorCode.CONCURRENT_TRANSACTIONS
    if api_key == ApiKey.ADD_OFFSETS_TO_TXN:
        cid, offsets = decode_response_frame(frame, AddOffsetsToTxnResponse, version)
        return encode_response_frame(attrs.evolve(offsets, error_code=code), version, cid)[4:]
    cid, parts = decode_response_frame(frame, AddPartitionsToTxnResponse, version)
    topics = [attrs.evolve(t, results_by_partition=[
        attrs.evolve(p, partition_error_code=code) for p in t.results_by_partition])
        for t in parts.results_by_topic_v3_and_below]
    return encode_response_frame(attrs.evolve(parts, results_by_topic_v3_and_below=topics),
                                 version, cid)[4:]


class RefuseOpening:
    """Refuses the first AddPartitionsToTxn or AddOffsetsToTxn after ``arm()``, once."""

    def __init__(self, proxy: RecordingProxy) -> None:
        self._lock = threading.Lock()
        self._armed = False
        for api_key in OPENING:
            proxy.rewriters[api_key] = self._rewrite(api_key)

    def arm(self) -> None:
        with self._lock:
            self._armed = True

    def _rewrite(self, api_key: int):  # noqa: ANN202
        def rewrite(connection: int, version: int, request: bytes, frame: bytes) -> bytes:
            with self._lock:
                refuse, self._armed = self._armed, False
            return _concurrent(version, frame, api_key) if refuse else frame
        return rewrite


@pytest.fixture
def proxy(kafka_broker):  # noqa: F811
    host, port = kafka_broker.bootstrap_servers.split(":")
    with RecordingProxy(host, int(port)) as p:
        yield p


def _retry_gaps(exchanges: list[Exchange], api_key: int) -> list[float]:
    """Seconds from each answer of ``api_key`` to the next request of it."""
    mine = [e for e in exchanges if e.api_key == api_key]
    return [b.sent_at - a.answered_at for a, b in zip(mine, mine[1:], strict=False)
            if a.answered_at is not None]


def test_a_transactions_refused_opening_call_is_retried_at_once(proxy, unique_name) -> None:  # noqa: F811
    """Records only (AddPartitionsToTxn opens the transaction), then offsets only
    (AddOffsetsToTxn opens it): each refused once, each retried after 20 ms, not after the
    5 s back-off (Java's AddPartitionsToTxnHandler: a tight read-process-write loop would
    otherwise wait the back-off in every transaction). Fails with the back-off: each gap would
    be 5 s."""
    topic = unique_name("out")
    create_topic(proxy.bootstrap_servers, topic, partitions=1)
    refuse = RefuseOpening(proxy)
    with Producer(bootstrap_servers=proxy.bootstrap_servers, transactional_id=unique_name("tx"),
                  retry_backoff_ms=BACKOFF_MS, retry_backoff_max_ms=BACKOFF_MS) as producer:
        producer.init_transactions(WAIT)
        refuse.arm()
        producer.begin_transaction()
        future = producer.send(topic, b"one", partition=0)
        producer.commit_transaction(WAIT)
        assert future.result(0).offset >= 0
        refuse.arm()
        producer.begin_transaction()
        producer.send_offsets_to_transaction({(topic, 0): 1},
                                             ConsumerGroupMetadata(unique_name("g")), WAIT)
        producer.commit_transaction(WAIT)
    exchanges = proxy.exchanges()
    for api_key in OPENING:
        gaps = _retry_gaps(exchanges, api_key)
        # One refusal, one retry: the second request of the API is the retry of the first.
        assert len(gaps) == 1, f"API {api_key}: {len(gaps) + 1} requests, expected 2"
        assert gaps[0] < 1.0, f"API {api_key} retried {gaps[0]:.3f} s after the refusal"
