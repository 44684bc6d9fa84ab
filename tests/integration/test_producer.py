"""Producer against Tansu, checked by confluent-kafka and kafka-python, both ways round."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

import pytest
from confluent_kafka import (
    Consumer as ConfluentConsumer,
    Producer as ConfluentProducer,
    TopicPartition as ConfluentTP,
)
from kafka import KafkaConsumer, KafkaProducer, TopicPartition as KafkaTP

from groupkit.admin import Admin
from groupkit.config import ClientConfig
from groupkit.errors import (
    ConfigError,
    IllegalStateError,
    KafkaConnectionError,
    MessageTooLargeError,
    NoBrokersAvailable,
    NotLeaderOrFollowerError,
    RequestTimeoutError,
    UnknownTopicOrPartitionError,
)
from groupkit.partitioner import partition_for_key
from groupkit.producer import Producer, RecordMetadata
from groupkit.protocol import native
from groupkit.protocol.messages.fetch import (
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
)
from groupkit.protocol.messages.produce import (
    ProduceRequest,
    ProduceResponse,
    ProduceResponsePartition,
    ProduceResponseTopic,
)
from groupkit.protocol.records import Record, decode_records
from groupkit.runtime import accumulator
from groupkit.runtime.cluster import Cluster
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401

pytestmark = pytest.mark.broker

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]
WAIT = 20.0


@pytest.fixture(autouse=True, params=["c", "python"])
def accumulator_kind(request, monkeypatch) -> str:
    """Every test runs with send()'s C accumulator and with its pure-Python twin."""
    if request.param == "python":
        monkeypatch.setattr(accumulator, "NativeAccumulator", None)
    elif not native.available:
        pytest.skip("the C extension is not built (test_native_extension_is_built fails)")
    return request.param


@pytest.fixture(scope="module")
def admin(kafka_broker):  # noqa: F811
    with Admin(bootstrap_servers=kafka_broker.bootstrap_servers) as a:
        yield a


@pytest.fixture
def producer(kafka_broker):  # noqa: F811
    with Producer(bootstrap_servers=kafka_broker.bootstrap_servers, linger_ms=2) as p:
        yield p


def _records(n: int) -> list[tuple[bytes | None, bytes, list[tuple[str, bytes | None]]]]:
    return [(b"k%d" % i if i % 3 else None, b"value-%d-" % i + b"x" * (i % 40),
             [("n", b"%d" % i), ("empty", None)] if i % 2 else []) for i in range(n)]


def _fetch(bootstrap: str, topic: str, partition: int, expected: int) -> list[Record]:
    """Read ``expected`` records from offset 0 with groupkit's own Fetch and decoder."""
    cluster = Cluster(ClientConfig(bootstrap_servers=bootstrap))
    try:
        topic_id = cluster.refresh([topic]).topics[topic].topic_id
        records: list[Record] = []
        deadline = time.monotonic() + WAIT
        while len(records) < expected and time.monotonic() < deadline:
            offset = records[-1].offset + 1 if records else 0
            request = FetchRequest(max_wait_ms=100, min_bytes=1, topics=[FetchRequestTopic(
                topic=topic, topic_id=topic_id, partitions=[FetchRequestPartition(
                    partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20)])])
            answer = cluster.send_to_leader(topic, partition, request).result(WAIT)
            part = answer.responses[0].partitions[0]
            assert part.error_code == 0
            records += [r for r in decode_records(part.records or b"", topic=topic,
                                                  partition=partition) if r.offset >= offset]
        return records
    finally:
        cluster.close()


def _confluent_read(bootstrap: str, topic: str, partition: int, expected: int) -> list:
    consumer = ConfluentConsumer({"bootstrap.servers": bootstrap, "group.id": topic,
                                 "enable.auto.commit": False, "log_level": 0})
    try:
        consumer.assign([ConfluentTP(topic, partition, 0)])
        got: list = []
        deadline = time.monotonic() + WAIT
        while len(got) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None:
                assert message.error() is None, message.error()
                got.append(message)
        return got
    finally:
        consumer.close()


def _kafka_python_read(bootstrap: str, topic: str, partition: int, expected: int) -> list:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    try:
        consumer.assign([KafkaTP(topic, partition)])
        consumer.seek(KafkaTP(topic, partition), 0)
        got: list = []
        deadline = time.monotonic() + WAIT
        while len(got) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                got += batch
        return got
    finally:
        consumer.close()


# --- groupkit writes, the others read ----------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_groupkit_records_read_by_confluent_and_kafka_python(kafka_broker, unique_name,  # noqa: F811
                                                             codec) -> None:
    topic = unique_name("out")
    rows = _records(60)
    with Producer(bootstrap_servers=kafka_broker.bootstrap_servers, compression=codec,
                  linger_ms=20, batch_size=2000) as p:
        futures = [p.send(topic, v, key=k, partition=0, headers=h, timestamp_ms=1_700_000_000_000 + i)
                   for i, (k, v, h) in enumerate(rows)]
        p.flush(WAIT)
    results = [f.result(0) for f in futures]
    assert [r.offset for r in results] == list(range(60))
    assert all(r.topic == topic and r.partition == 0 for r in results)

    confluent = _confluent_read(kafka_broker.bootstrap_servers, topic, 0, 60)
    assert [(m.key(), m.value(), m.headers() or [], m.timestamp()[1]) for m in confluent] == [
        (k, v, h, 1_700_000_000_000 + i) for i, (k, v, h) in enumerate(rows)]
    kp = _kafka_python_read(kafka_broker.bootstrap_servers, topic, 0, 60)
    assert [(m.offset, m.key, m.value, list(m.headers), m.timestamp) for m in kp] == [
        (i, k, v, h, 1_700_000_000_000 + i) for i, (k, v, h) in enumerate(rows)]


# --- the others write, groupkit reads ----------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_and_kafka_python_batches_decode_with_ours(kafka_broker, unique_name,  # noqa: F811
                                                             codec) -> None:
    topic = unique_name("in")
    # kafka-python refuses null header values, so this direction sends empty ones.
    rows = [(k, v, [(n, hv or b"") for n, hv in h]) for k, v, h in _records(40)]
    confluent = ConfluentProducer({"bootstrap.servers": kafka_broker.bootstrap_servers,
                                   "compression.type": codec or "none", "linger.ms": 20})
    for k, v, h in rows:
        confluent.produce(topic, v, key=k, partition=0, headers=h or None)
    assert confluent.flush(WAIT) == 0
    kp = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers,
                       compression_type=codec, linger_ms=20)
    for k, v, h in rows:
        kp.send(topic, v, key=k, partition=1, headers=h)
    kp.flush(WAIT)
    kp.close()
    for partition in (0, 1):
        got = _fetch(kafka_broker.bootstrap_servers, topic, partition, 40)
        assert [(r.offset, r.key, r.value, r.headers) for r in got] == [
            (i, k, v, h) for i, (k, v, h) in enumerate(rows)]


# --- partitioning ------------------------------------------------------------------------------


def test_keys_land_where_murmur2_confluent_and_kafka_python_put_them(  # noqa: F811
        kafka_broker, admin, unique_name) -> None:  # noqa: F811
    topic = unique_name("keyed")
    admin.create_topics([topic], num_partitions=12)
    keys = [b"key-%d" % i for i in range(120)] + [b"", b"\xff" * 7, "ключ".encode()]
    with Producer(bootstrap_servers=kafka_broker.bootstrap_servers) as p:
        ours = [p.send(topic, b"v", key=k) for k in keys]
        p.flush(WAIT)
    ours_partitions = [f.result(0).partition for f in ours]
    assert ours_partitions == [partition_for_key(k, 12) for k in keys]
    assert len(set(ours_partitions)) == 12

    delivered: dict[bytes, int] = {}
    confluent = ConfluentProducer({"bootstrap.servers": kafka_broker.bootstrap_servers,
                                   "partitioner": "murmur2_random"})
    for k in keys:
        confluent.produce(topic, b"c", key=k,
                          on_delivery=lambda err, m: delivered.__setitem__(m.key(), m.partition()))
    assert confluent.flush(WAIT) == 0
    assert [delivered[k] for k in keys] == ours_partitions

    kp = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
    theirs = [kp.send(topic, b"p", key=k) for k in keys]
    kp.flush(WAIT)
    assert [f.get(WAIT).partition for f in theirs] == ours_partitions
    kp.close()


def test_null_keys_stick_to_a_partition_per_batch(kafka_broker, admin, unique_name) -> None:  # noqa: F811
    topic = unique_name("sticky")
    admin.create_topics([topic], num_partitions=4)
    with Producer(bootstrap_servers=kafka_broker.bootstrap_servers, batch_size=1000,
                  linger_ms=1000) as p:
        futures = [p.send(topic, b"x" * 84) for _ in range(200)]
        p.flush(WAIT)
    partitions = [f.result(0).partition for f in futures]
    # 100 bytes per record and 1000-byte batches: runs of 10 records share a partition, and
    # each new batch picks at random (20 picks among 4 all alike: odds 4**-19).
    runs = [partitions[i:i + 10] for i in range(0, 200, 10)]
    assert all(len(set(run)) == 1 for run in runs)
    assert len(set(partitions)) > 1


# --- concurrency, acks, errors -----------------------------------------------------------------


def test_many_threads_produce_concurrently(kafka_broker, admin, unique_name) -> None:  # noqa: F811
    topic = unique_name("threads")
    admin.create_topics([topic], num_partitions=3)
    per_thread, threads = 1500, 6
    futures: list[list] = [[] for _ in range(threads)]
    with Producer(bootstrap_servers=kafka_broker.bootstrap_servers, batch_size=4096,
                  linger_ms=1, max_in_flight_requests_per_connection=3) as p:
        def run(t: int) -> None:
            for i in range(per_thread):
                futures[t].append(p.send(topic, b"%d:%d" % (t, i), key=b"%d" % (i % 50)))
        workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(WAIT)
        p.flush(WAIT)
    placed = [f.result(0) for fs in futures for f in fs]
    assert len({(m.partition, m.offset) for m in placed}) == per_thread * threads
    for partition in range(3):
        mine = sorted(m.offset for m in placed if m.partition == partition)
        assert mine == list(range(len(mine)))
        stored = _fetch(kafka_broker.bootstrap_servers, topic, partition, len(mine))
        assert len(stored) == len(mine)


def test_acks_zero_delivers_without_offsets(kafka_broker, unique_name) -> None:  # noqa: F811
    topic = unique_name("acks0")
    with Producer(bootstrap_servers=kafka_broker.bootstrap_servers, acks=0) as p:
        futures = [p.send(topic, b"fire-%d" % i, partition=0) for i in range(20)]
        p.flush(WAIT)
    assert all(f.result(0) == RecordMetadata(topic, 0, -1, f.result(0).timestamp)
               for f in futures)
    stored = _fetch(kafka_broker.bootstrap_servers, topic, 0, 20)
    assert [r.value for r in stored] == [b"fire-%d" % i for i in range(20)]


def test_acks_all_and_one_report_offsets(kafka_broker, unique_name) -> None:  # noqa: F811
    topic = unique_name("acks")
    for acks in ("all", 1):
        with Producer(bootstrap_servers=kafka_broker.bootstrap_servers, acks=acks) as p:
            assert p.send(topic, b"v", partition=0).result(WAIT).offset >= 0


def test_bad_arguments_are_refused(producer, unique_name) -> None:  # noqa: F811
    topic = unique_name("args")
    with pytest.raises(ConfigError, match="value must be bytes"):
        producer.send(topic, "text")
    with pytest.raises(ConfigError, match="key must be bytes"):
        producer.send(topic, b"v", key=5)
    with pytest.raises(ConfigError, match="headers must be a list"):
        producer.send(topic, b"v", headers=[("h", "text")])
    with pytest.raises(ConfigError, match="timestamp_ms must be an int"):
        producer.send(topic, b"v", timestamp_ms=1.5)
    count = len(producer.partitions_for(topic))
    with pytest.raises(UnknownTopicOrPartitionError, match="does not exist"):
        producer.send(topic, b"v", partition=count).result(WAIT)
    with pytest.raises(ConfigError, match="unknown setting 'lingr_ms'.*linger_ms"):
        Producer(bootstrap_servers="127.0.0.1:1", lingr_ms=5)


def test_invalid_topic_fails_the_future_with_a_named_error(kafka_broker) -> None:  # noqa: F811
    with Producer(bootstrap_servers=kafka_broker.bootstrap_servers, max_block_ms=2000) as p:
        future = p.send("bad topic name!", b"v")
        error = future.exception(WAIT)
    assert error is not None and error.__class__.__name__ in (
        "InvalidTopicError", "UnknownTopicOrPartitionError")
    assert "bad topic name!" in str(error)


def test_send_after_close_is_refused(kafka_broker) -> None:  # noqa: F811
    p = Producer(bootstrap_servers=kafka_broker.bootstrap_servers)
    p.close()
    with pytest.raises(IllegalStateError):
        p.send("t", b"v")


def test_unreachable_bootstrap_fails_fast(kafka_broker) -> None:  # noqa: F811
    with LocalBroker() as broker:
        address = broker.bootstrap_servers
    started = time.monotonic()
    with pytest.raises(NoBrokersAvailable, match=address):
        Producer(bootstrap_servers=address, request_timeout_ms=3000)
    assert time.monotonic() - started < 4


def test_records_fail_after_delivery_timeout_when_the_broker_dies(unique_name) -> None:  # noqa: F811
    topic = unique_name("doomed")
    with LocalBroker() as broker:
        p = Producer(bootstrap_servers=broker.bootstrap_servers, delivery_timeout_ms=1500,
                     request_timeout_ms=500, reconnect_backoff_max_ms=100, retry_backoff_ms=50,
                     retry_backoff_max_ms=100)
        assert p.send(topic, b"first", partition=0).result(WAIT).offset == 0
    started = time.monotonic()
    try:
        future = p.send(topic, b"lost", partition=0)
        error = future.exception(WAIT)
        assert isinstance(error, RequestTimeoutError | KafkaConnectionError)
        assert time.monotonic() - started < 10
    finally:
        p.close(timeout=1)


def _inject_produce_errors(monkeypatch, topic: str, codes: list[int]) -> list[int]:
    """Answer the next Produce requests with ``codes`` (one per request) instead of sending
    them; later requests reach the broker. Returns the list of codes still to inject."""
    real_send = Cluster.send

    def send(self, node, request, purpose="default", version=None, timeout_ms=None):
        if isinstance(request, ProduceRequest) and codes:
            answer: Future = Future()
            answer.set_result(ProduceResponse(responses=[ProduceResponseTopic(
                name=topic, partition_responses=[ProduceResponsePartition(
                    index=0, error_code=codes.pop(0), base_offset=-1)])]))
            return answer
        return real_send(self, node, request, purpose, version, timeout_ms)
    monkeypatch.setattr(Cluster, "send", send)
    return codes


def test_retriable_errors_are_retried_after_a_metadata_refresh(kafka_broker, unique_name,  # noqa: F811
                                                               monkeypatch) -> None:
    topic = unique_name("retry")
    refreshes: list[int] = []
    real_refresh = Cluster.refresh

    def counting_refresh(self, *args, **kwargs):
        refreshes.append(1)
        return real_refresh(self, *args, **kwargs)
    monkeypatch.setattr(Cluster, "refresh", counting_refresh)
    with Producer(bootstrap_servers=kafka_broker.bootstrap_servers, retry_backoff_ms=10) as p:
        p.partitions_for(topic)
        before = len(refreshes)
        left = _inject_produce_errors(monkeypatch, topic, [6, 3])  # NOT_LEADER, UNKNOWN_TOPIC
        placed = p.send(topic, b"v", partition=0).result(WAIT)
    assert left == [] and placed.offset == 0
    assert len(refreshes) > before


def test_fatal_errors_and_spent_retries_fail_the_records(kafka_broker, unique_name,  # noqa: F811
                                                         monkeypatch) -> None:
    topic = unique_name("fatal")
    with Producer(bootstrap_servers=kafka_broker.bootstrap_servers, retries=0) as p:
        p.partitions_for(topic)
        _inject_produce_errors(monkeypatch, topic, [10, 6])  # MESSAGE_TOO_LARGE, NOT_LEADER
        with pytest.raises(MessageTooLargeError):
            p.send(topic, b"v", partition=0).result(WAIT)
        with pytest.raises(NotLeaderOrFollowerError):
            p.send(topic, b"w", partition=0).result(WAIT)
        assert p.send(topic, b"x", partition=0).result(WAIT).offset == 0


def test_send_uses_the_c_accumulator_when_built(kafka_broker, producer, unique_name,  # noqa: F811
                                               accumulator_kind) -> None:
    assert isinstance(producer._acc, accumulator.Accumulator) is (accumulator_kind == "python")
    assert ("send" in vars(producer)) is (accumulator_kind == "c")

    class Counting(Producer):
        sent = 0

        def send(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            self.sent += 1
            return super().send(*args, **kwargs)

    with Counting(bootstrap_servers=kafka_broker.bootstrap_servers) as mine:
        assert mine.send(unique_name("sub"), b"v", key=b"k").result(WAIT).offset == 0
        assert mine.sent == 1
