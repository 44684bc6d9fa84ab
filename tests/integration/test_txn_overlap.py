"""send_offsets_to_transaction sends the transaction's records while the offsets go, against
Tansu through the recording proxy: their partitions are added first and their Produce does not
wait for commit_transaction's flush."""

from __future__ import annotations

import pytest

from groupkit.errors import ApiKey, RequestTimeoutError
from groupkit.producer import Producer
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from groupkit.values import ConsumerGroupMetadata
from tests.support.broker_data import create_topic
from tests.support.recording_proxy import Exchange, Fault, RecordingProxy
from tests.support.txn_data import WAIT

pytestmark = [pytest.mark.broker, pytest.mark.xdist_group("transactions")]


@pytest.fixture
def proxy(kafka_broker):  # noqa: F811
    host, port = kafka_broker.bootstrap_servers.split(":")
    with RecordingProxy(host, int(port)) as p:
        yield p


def _produced(exchanges: list[Exchange]) -> bool:
    return any(e.api_key == ApiKey.PRODUCE for e in exchanges)


def test_the_records_go_out_with_the_offsets_not_at_commit(proxy, unique_name) -> None:  # noqa: F811
    """linger_ms is a minute, so before the change the records waited for commit's flush.
    Now the Produce goes once AddPartitionsToTxn is answered, before commit_transaction is
    called, and the commit still delivers and commits them."""
    topic = unique_name("out")
    create_topic(proxy.bootstrap_servers, topic, partitions=2)
    with Producer(bootstrap_servers=proxy.bootstrap_servers, transactional_id=unique_name("tx"),
                  linger_ms=60_000) as producer:
        producer.init_transactions(WAIT)
        producer.begin_transaction()
        futures = [producer.send(topic, b"%d" % i, partition=i % 2) for i in range(10)]
        producer.send_offsets_to_transaction({(topic, 0): 5, (topic, 1): 5},
                                             ConsumerGroupMetadata(unique_name("g")), WAIT)
        proxy.wait_until(_produced, WAIT, "the transaction's Produce before commit")
        producer.commit_transaction(WAIT)
        assert all(f.result(0).offset >= 0 for f in futures)
    exchanges = proxy.exchanges()
    adds = [e for e in exchanges if e.api_key == ApiKey.ADD_PARTITIONS_TO_TXN]
    produces = [e for e in exchanges if e.api_key == ApiKey.PRODUCE]
    ends = [e for e in exchanges if e.api_key == ApiKey.END_TXN]
    # (The sender may have added the first partition before send_offsets_to_transaction, so
    # there may be two of each.) A Produce only after an AddPartitionsToTxn was answered, the
    # EndTxn only after every Produce was.
    assert adds and produces and len(ends) == 1
    assert adds[0].response_seq is not None and adds[0].response_seq < produces[0].seq
    assert all(p.response_seq is not None and p.response_seq < ends[0].seq for p in produces)


def test_records_whose_add_ran_out_of_time_still_go(proxy, unique_name) -> None:  # noqa: F811
    """The AddPartitionsToTxn is swallowed, so send_offsets_to_transaction runs out of its
    time: the sender adds the partitions by itself once that request has timed out, and the
    sealed records go without any further call (before the fix the sender slept until its next
    metadata refresh, minutes away); the offsets sent again, the transaction commits. (Should
    the sender have sent the swallowed request, the offsets wait behind it and the same
    holds.)"""
    topic = unique_name("out")
    create_topic(proxy.bootstrap_servers, topic, partitions=1)
    with Producer(bootstrap_servers=proxy.bootstrap_servers, transactional_id=unique_name("tx"),
                  linger_ms=60_000, request_timeout_ms=2000) as producer:
        producer.init_transactions(WAIT)
        proxy.arm(Fault(ApiKey.ADD_PARTITIONS_TO_TXN, "blackhole"))
        group = ConsumerGroupMetadata(unique_name("g"))
        producer.begin_transaction()
        future = producer.send(topic, b"x", partition=0)
        # AddPartitionsToTxn runs out of time, or (sent by the sender) AddOffsetsToTxn behind it.
        with pytest.raises(RequestTimeoutError, match="AddPartitionsToTxn|AddOffsetsToTxn"):
            producer.send_offsets_to_transaction({(topic, 0): 1}, group, 1.0)
        proxy.wait_until(_produced, WAIT, "the records' Produce without another call")
        producer.send_offsets_to_transaction({(topic, 0): 1}, group, WAIT)
        producer.commit_transaction(WAIT)
        assert future.result(0).offset >= 0
    assert len(proxy.fired) == 1
