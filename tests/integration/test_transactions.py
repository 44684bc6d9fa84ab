"""The idempotent and transactional producer against Tansu, with peers reading and writing.

One broker for the module (the shared ``kafka_broker``); fault injection through the recording
proxy. What Tansu cannot show (a real coordinator's fencing of a stale group member) is tested
at the sans-IO layer (tests/txn) and with a scripted answer here.

Tansu quirk: it writes the abort marker but answers read_committed Fetches with an empty
``aborted_transactions`` list, so no reader (confluent-kafka's included) can filter aborted
records there. The tests here therefore check what the coordinator did in the log itself (the
aborted records followed by an ABORT marker of the same producer); read_committed filtering is
shown in tests/integration/test_read_committed.py, through a proxy that adds the list Kafka
would send.
"""

from __future__ import annotations

import time

import pytest

from assignors import TopicPartition
from groupkit.consumer import Consumer
from groupkit.errors import (
    AbortableTransactionError,
    CommitFailedError,
    IllegalStateError,
    ProducerFencedError,
    RequestTimeoutError,
    TransactionAbortedError,
)
from groupkit.producer import Producer
from groupkit.protocol.headers import decode_request_frame
from groupkit.protocol.messages.produce import ProduceRequest
from groupkit.protocol.records import decode_batches
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from groupkit.values import ConsumerGroupMetadata
from tests.support.broker_data import committed, create_topic
from tests.support.cli_groups import cli_json
from tests.support.recording_proxy import Fault, RecordingProxy
from tests.support.txn_data import (
    WAIT,
    committed_view,
    log_entries,
    read_groupkit,
    until,
)

pytestmark = [pytest.mark.broker, pytest.mark.xdist_group("transactions")]


@pytest.fixture
def proxy(kafka_broker):  # noqa: F811
    host, port = kafka_broker.bootstrap_servers.split(":")
    with RecordingProxy(host, int(port)) as p:
        yield p


def _produced_batches(proxy: RecordingProxy) -> list:
    out = []
    for e in proxy.exchanges():
        if e.api_key != 0:
            continue
        _, request = decode_request_frame(e.request)
        assert isinstance(request, ProduceRequest)
        for topic in request.topic_data:
            for part in topic.partition_data:
                assert part.records is not None
                out.extend((request.transactional_id, b) for b in decode_batches(part.records))
    return out


# --- idempotence ---------------------------------------------------------------------------------


def test_idempotent_by_default_batches_carry_id_and_sequences(proxy, unique_name) -> None:  # noqa: F811
    topic = unique_name("idem")
    create_topic(proxy.bootstrap_servers, topic, 1)
    with Producer(bootstrap_servers=proxy.bootstrap_servers, linger_ms=0) as producer:
        for n in (3, 2, 4):
            for i in range(n):
                producer.send(topic, b"v%d" % i, partition=0)
            producer.flush(WAIT)
    batches = [b for _, b in _produced_batches(proxy)]
    assert sum(len(b.records) for b in batches) == 9
    assert {b.producer_id for b in batches} != {-1} and len({b.producer_id for b in batches}) == 1
    sequence = 0
    for batch in batches:
        assert batch.base_sequence == sequence and not batch.is_transactional
        sequence += len(batch.records)
    assert any(e.api_key == 22 for e in proxy.exchanges())


def test_non_idempotent_producer_sends_no_producer_id(proxy, unique_name) -> None:  # noqa: F811
    topic = unique_name("plain")
    with Producer(bootstrap_servers=proxy.bootstrap_servers, acks=1) as producer:
        producer.send(topic, b"v", partition=0).result(WAIT)
    batches = [b for _, b in _produced_batches(proxy)]
    assert [(b.producer_id, b.base_sequence) for b in batches] == [(-1, -1)]
    assert not any(e.api_key == 22 for e in proxy.exchanges())


@pytest.mark.parametrize("idempotent", [True, False])
def test_a_produce_whose_answer_is_lost_is_written_once(proxy, unique_name,  # noqa: F811
                                                        idempotent) -> None:
    """The broker writes the batch, the answer never arrives, the producer sends it again:
    the idempotent producer's retry carries the same sequence, so the log holds it once. The
    same fault without idempotence writes it twice (what this test would catch)."""
    topic = unique_name("lost")
    create_topic(proxy.bootstrap_servers, topic, 1)
    with Producer(bootstrap_servers=proxy.bootstrap_servers, linger_ms=0,
                  enable_idempotence=idempotent, request_timeout_ms=5000,
                  retry_backoff_ms=50) as producer:
        producer.partitions_for(topic)
        proxy.arm(Fault(0, "lose_answer"))
        futures = [producer.send(topic, b"r%d" % i, partition=0) for i in range(3)]
        for future in futures:
            future.result(WAIT)
        producer.send(topic, b"end", partition=0).result(WAIT)
    assert len(proxy.fired) == 1
    values = read_groupkit(proxy.bootstrap_servers, topic, 1, until(b"end"),
                           isolation="read_uncommitted")
    expected = [b"r0", b"r1", b"r2", b"end"]
    if idempotent:
        assert values == expected
    else:
        assert values == expected[:3] + expected[:3] + [b"end"]


# --- transactions --------------------------------------------------------------------------------


def test_committed_records_are_read_and_aborted_ones_are_not(kafka_broker, unique_name) -> None:  # noqa: F811
    bootstrap = kafka_broker.bootstrap_servers
    topic = unique_name("txn")
    create_topic(bootstrap, topic, 2)
    with Producer(bootstrap_servers=bootstrap, transactional_id=unique_name("tx")) as producer:
        producer.init_transactions(WAIT)
        producer.begin_transaction()
        for i in range(4):
            producer.send(topic, b"a%d" % i, partition=i % 2)
        producer.commit_transaction(WAIT)
        producer.begin_transaction()
        aborted = producer.send(topic, b"b0", partition=0)
        producer.flush(WAIT)
        producer.abort_transaction(WAIT)
        producer.begin_transaction()
        never_sent = producer.send(topic, b"b1", partition=1)
        producer.abort_transaction(WAIT)
        producer.begin_transaction()
        producer.send(topic, b"end", partition=0)
        producer.commit_transaction(WAIT)
    assert aborted.result(0).offset >= 0
    with pytest.raises(TransactionAbortedError):
        never_sent.result(0)
    entries = log_entries(bootstrap, topic, 0) + log_entries(bootstrap, topic, 1)
    values = [v for v, _ in entries]
    assert b"b1" not in values and values.count(b"b0") <= 1
    assert len({pid for _, pid in entries}) == 1
    # What a read_committed reader must see, from the markers: the aborted b0 never (Tansu
    # sometimes drops an aborted transaction's records; Kafka keeps them before an ABORT).
    assert sorted(committed_view(log_entries(bootstrap, topic, 0))
                  + committed_view(log_entries(bootstrap, topic, 1))) == [
        b"a0", b"a1", b"a2", b"a3", b"end"]
    read_groupkit(bootstrap, topic, 2, until(b"a0", b"a1", b"a2", b"a3", b"end"))


def test_send_outside_a_transaction_is_refused(kafka_broker, unique_name) -> None:  # noqa: F811
    with Producer(bootstrap_servers=kafka_broker.bootstrap_servers,
                  transactional_id=unique_name("tx")) as producer:
        with pytest.raises(IllegalStateError, match="init_transactions"):
            producer.send(unique_name("t"), b"v")
        producer.init_transactions(WAIT)
        with pytest.raises(IllegalStateError, match="begin_transaction"):
            producer.send(unique_name("t"), b"v")
        with pytest.raises(IllegalStateError, match="begin_transaction"):
            producer.commit_transaction(WAIT)


def test_a_second_producer_fences_the_first(kafka_broker, unique_name) -> None:  # noqa: F811
    bootstrap = kafka_broker.bootstrap_servers
    topic, txn_id = unique_name("fence"), unique_name("tx")
    create_topic(bootstrap, topic, 2)
    zombie = Producer(bootstrap_servers=bootstrap, transactional_id=txn_id)
    try:
        zombie.init_transactions(WAIT)
        zombie.begin_transaction()
        zombie.send(topic, b"zombie", partition=0)
        zombie.flush(WAIT)
        with Producer(bootstrap_servers=bootstrap, transactional_id=txn_id) as successor:
            # Its InitProducerId bumps the epoch and aborts the zombie's open transaction.
            successor.init_transactions(WAIT)
            # The zombie's next coordinator call (here AddPartitionsToTxn for a new partition)
            # is answered PRODUCER_FENCED: its record fails, and so does every later call.
            # (Tansu closes the connection on a fenced EndTxn instead of answering it.)
            with pytest.raises(ProducerFencedError):
                zombie.send(topic, b"zombie-2", partition=1).result(WAIT)
            with pytest.raises(ProducerFencedError, match="fenced"):
                zombie.commit_transaction(WAIT)
            with pytest.raises(ProducerFencedError):
                zombie.begin_transaction()
            successor.begin_transaction()
            successor.send(topic, b"end", partition=0)
            successor.commit_transaction(WAIT)
    finally:
        zombie.close(5)
    # The successor's InitProducerId ended the zombie's transaction without committing it
    # (Tansu drops its records; Kafka writes them and an ABORT marker).
    log = [v for v, _ in log_entries(bootstrap, topic, 0)]
    assert log[-2:] == [b"end", "COMMIT"]
    assert log[:-2] in ([], [b"zombie", "ABORT"])


def _described(capsys, bootstrap: str, group: str) -> tuple[dict, dict]:
    """``groupkit groups describe GROUP --output json``: the group, and its rows by partition."""
    [described] = cli_json(capsys, "groups", "describe", group, "--bootstrap-server", bootstrap)
    return described, {r["partition"]: r for r in described["offsets"]}


def test_offsets_commit_with_the_transaction_only(kafka_broker, unique_name, capsys) -> None:  # noqa: F811
    """Offsets sent in a transaction count only once it commits, and ``groupkit groups
    describe`` shows the group as it is throughout: no offset while a transaction holds one
    and after it aborts, the committed one (lag 0) after it commits."""
    bootstrap = kafka_broker.bootstrap_servers
    source, sink, group = unique_name("in"), unique_name("out"), unique_name("g")
    create_topic(bootstrap, source, 1)
    create_topic(bootstrap, sink, 1)
    with Producer(bootstrap_servers=bootstrap) as plain:
        for i in range(5):
            plain.send(source, b"%d" % i, partition=0)
    with Consumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                  auto_offset_reset="earliest", isolation_level="read_committed",
                  session_timeout_ms=6000, heartbeat_interval_ms=500) as consumer, \
            Producer(bootstrap_servers=bootstrap, transactional_id=unique_name("tx")) as producer:
        consumer.subscribe([source])
        records: list = []
        deadline = time.monotonic() + WAIT
        while len(records) < 5 and time.monotonic() < deadline:
            records.extend(consumer.poll(0.5))
        assert len(records) == 5
        metadata = consumer.group_metadata()
        assert metadata.group_id == group and metadata.generation_id >= 0 and metadata.member_id
        producer.init_transactions(WAIT)
        # Aborted: neither the output nor the offsets count.
        producer.begin_transaction()
        producer.send(sink, b"x", partition=0)
        producer.send_offsets_to_transaction({TopicPartition(source, 0): 3}, metadata, WAIT)
        described, rows = _described(capsys, bootstrap, group)
        assert described["state"] == "Stable" and len(described["members"]) == 1
        assert rows.get(0, {}).get("current_offset") is None
        producer.abort_transaction(WAIT)
        assert committed(bootstrap, group, source, 1) == {0: None}
        assert _described(capsys, bootstrap, group)[1].get(0, {}).get("current_offset") is None
        producer.begin_transaction()
        for r in records:
            producer.send(sink, b"out-" + r.value, partition=0)
        producer.send_offsets_to_transaction({TopicPartition(source, 0): 5}, metadata, WAIT)
        producer.commit_transaction(WAIT)
        described, rows = _described(capsys, bootstrap, group)
    assert committed(bootstrap, group, source, 1) == {0: 5}
    assert described["state"] == "Stable" and len(described["members"]) == 1
    assert (rows[0]["topic"], rows[0]["current_offset"], rows[0]["log_end_offset"],
            rows[0]["lag"]) == (source, 5, 5, 0)
    # (Tansu sometimes drops an aborted transaction's records; Kafka keeps them, marked.)
    log = [v for v, _ in log_entries(bootstrap, sink, 0)]
    assert log[-6:] == [*[b"out-%d" % i for i in range(5)], "COMMIT"]
    assert log[:-6] in ([], [b"x", "ABORT"])


def test_a_stale_member_cannot_commit_in_a_transaction(kafka_broker, unique_name,  # noqa: F811
                                                       monkeypatch) -> None:
    """KIP-447: TxnOffsetCommit v3 carries the generation; the coordinator answers a stale one
    with ILLEGAL_GENERATION, which is CommitFailedError and an abortable error. Tansu does not
    check the generation, so its answer is scripted here (the request is real)."""
    from groupkit.protocol.messages.txn import (
        TxnOffsetCommitResponse,
        TxnOffsetCommitResponsePartition,
        TxnOffsetCommitResponseTopic,
    )
    from groupkit.runtime.cluster import Cluster

    bootstrap = kafka_broker.bootstrap_servers
    topic = unique_name("stale")
    create_topic(bootstrap, topic, 1)
    seen = []
    real_send = Cluster.send

    def send(self, node, request, *args, **kwargs):
        if type(request).__name__ == "TxnOffsetCommitRequest":
            seen.append(request)
            # The broker gets the request; its answer is replaced by a real coordinator's.
            real_send(self, node, request, *args, **kwargs).result(WAIT)
            from concurrent.futures import Future
            answer: Future = Future()
            answer.set_result(TxnOffsetCommitResponse(topics=[TxnOffsetCommitResponseTopic(
                name=topic, partitions=[TxnOffsetCommitResponsePartition(
                    partition_index=0, error_code=22)])]))  # ILLEGAL_GENERATION
            return answer
        return real_send(self, node, request, *args, **kwargs)

    with Producer(bootstrap_servers=bootstrap, transactional_id=unique_name("tx")) as producer:
        producer.init_transactions(WAIT)
        producer.begin_transaction()
        producer.send(topic, b"x", partition=0)
        # Written before the refusal: otherwise the abort may fail it unsent, and whether a
        # marker then lands in the partition depends on whether AddPartitionsToTxn went first.
        producer.flush(WAIT)
        monkeypatch.setattr(Cluster, "send", send)
        stale = ConsumerGroupMetadata(unique_name("g"), 7, "member-1", None)
        with pytest.raises(CommitFailedError, match="fenced"):
            producer.send_offsets_to_transaction({TopicPartition(topic, 0): 1}, stale, WAIT)
        monkeypatch.setattr(Cluster, "send", real_send)
        with pytest.raises(AbortableTransactionError):
            producer.commit_transaction(WAIT)
        producer.abort_transaction(WAIT)
        producer.begin_transaction()
        producer.send(topic, b"end", partition=0)
        producer.commit_transaction(WAIT)
    (request,) = seen
    assert (request.generation_id, request.member_id) == (7, "member-1")
    # The refused transaction was aborted, not committed (Tansu sometimes drops an aborted
    # transaction's records; Kafka keeps them, followed by an ABORT marker).
    log = [v for v, _ in log_entries(bootstrap, topic, 0)]
    assert log[-2:] == [b"end", "COMMIT"]
    assert log[:-2] in ([], [b"x", "ABORT"])


@pytest.mark.parametrize(("code", "raised"), [(22, AbortableTransactionError),
                                               (90, ProducerFencedError)],
                         ids=["abortable", "fatal"])
def test_send_is_refused_at_once_in_an_error_state(kafka_broker, unique_name, monkeypatch,  # noqa: F811
                                                   code, raised) -> None:
    """Once the transaction is in an error state, send() raises that error, as Java's doSend
    does (maybeFailWithError), also for a record whose partition has an open batch (the
    accumulator's fast path) and one whose partition has none; nothing is appended. The error
    comes from a scripted TxnOffsetCommit answer (the request is real): ILLEGAL_GENERATION is
    abortable, PRODUCER_FENCED fatal."""
    from concurrent.futures import Future

    from groupkit.protocol.messages.txn import (
        TxnOffsetCommitResponse,
        TxnOffsetCommitResponsePartition,
        TxnOffsetCommitResponseTopic,
    )
    from groupkit.runtime.cluster import Cluster

    bootstrap = kafka_broker.bootstrap_servers
    topic = unique_name("refuse")
    create_topic(bootstrap, topic, 2)
    real_send = Cluster.send
    opened: list[Future] = []

    def send(self, node, request, *args, **kwargs):
        if type(request).__name__ == "TxnOffsetCommitRequest":
            real_send(self, node, request, *args, **kwargs).result(WAIT)
            # send_offsets_to_transaction sent the records before it (sealing their batches):
            # this one opens partition 0's batch again just before the error comes.
            opened.append(producer.send(topic, b"y", partition=0))
            answer: Future = Future()
            answer.set_result(TxnOffsetCommitResponse(topics=[TxnOffsetCommitResponseTopic(
                name=topic, partitions=[TxnOffsetCommitResponsePartition(
                    partition_index=0, error_code=code)])]))
            return answer
        return real_send(self, node, request, *args, **kwargs)

    # A long linger keeps partition 0's batch open (the one opened in the scripted answer), so
    # the next record to it would be appended by the fast path.
    with Producer(bootstrap_servers=bootstrap, transactional_id=unique_name("tx"),
                  linger_ms=60_000) as producer:
        producer.init_transactions(WAIT)
        producer.begin_transaction()
        producer.send(topic, b"x", partition=0)  # goes out with the offsets
        monkeypatch.setattr(Cluster, "send", send)
        with pytest.raises((CommitFailedError, ProducerFencedError)):
            producer.send_offsets_to_transaction(
                {TopicPartition(topic, 0): 1}, ConsumerGroupMetadata(unique_name("g"), 1, "m"),
                WAIT)
        monkeypatch.setattr(Cluster, "send", real_send)
        for partition in (0, 1):
            for _ in range(2):
                with pytest.raises(raised):
                    producer.send(topic, b"late", partition=partition)
        [second] = opened
        assert not second.done()
        if raised is AbortableTransactionError:
            producer.abort_transaction(WAIT)
            with pytest.raises(TransactionAbortedError):
                second.result(0)
            assert len(second._record_batch.records) == 1  # "late" was never appended
            producer.begin_transaction()
            producer.send(topic, b"end", partition=0)
            producer.commit_transaction(WAIT)


def test_init_transactions_keeps_its_timeout(proxy, unique_name) -> None:  # noqa: F811
    """Each InitProducerId is swallowed (the second on a new connection too): the call gives
    up at its own timeout, and may then be made again."""
    proxy.arm(Fault(22, "blackhole"))
    proxy.arm(Fault(22, "blackhole"))
    with Producer(bootstrap_servers=proxy.bootstrap_servers, transactional_id=unique_name("tx"),
                  request_timeout_ms=1000) as producer:
        started = time.monotonic()
        with pytest.raises(RequestTimeoutError, match="InitProducerId"):
            producer.init_transactions(2.0)
        assert time.monotonic() - started < 3.0
        # The call may be made again, and now completes.
        producer.init_transactions(WAIT)


# Interop with confluent-kafka's and kafka-python's transactional producers and read_committed
# consumers, both ways: tests/integration/test_read_committed.py.


def test_idempotence_against_a_release_without_it_fails_records_at_once(
        kafka_broker, unique_name) -> None:  # noqa: F811
    """Pinned to 0.10.2 (no InitProducerId), the default idempotent producer cannot work, as
    in Java: its records fail at once (FatalTransactionError, caused by the version error), not after
    delivery_timeout_ms; without idempotence the same pin produces."""
    from groupkit.errors import FatalTransactionError, UnsupportedVersionError

    topic = unique_name("old")
    create_topic(kafka_broker.bootstrap_servers, topic, 1)
    with Producer(bootstrap_servers=kafka_broker.bootstrap_servers, api_version="0.10.2",
                  delivery_timeout_ms=60000) as producer:
        started = time.monotonic()
        with pytest.raises(FatalTransactionError) as failed:
            producer.send(topic, b"v", partition=0).result(WAIT)
        assert isinstance(failed.value.__cause__, UnsupportedVersionError)
        assert time.monotonic() - started < 10
    with Producer(bootstrap_servers=kafka_broker.bootstrap_servers, api_version="0.10.2",
                  enable_idempotence=False) as producer:
        assert producer.send(topic, b"v", partition=0).result(WAIT).offset >= 0
