"""read_committed filtering across clients: records of aborted transactions never reach a
read_committed reader, committed ones all do, a read_uncommitted reader gets everything.

Two transactional producers of one client (groupkit, confluent-kafka or kafka-python) write
interleaved transactions, some committed, some aborted (tests/support/txn_data.py); groupkit's
and the peers' consumers read them. Neither test broker lists the aborted transactions in its
Fetch answers (docs/test-brokers.md), so the readers go through a proxy that adds the list
Apache Kafka's broker would send, computed from the markers the broker wrote
(tests/support/kafka_fetch_view.py); records, markers and the last stable offset are the
broker's. That a peer's reader filters the same answers to the same records checks the list
too.
"""

from __future__ import annotations

import uuid

import pytest

from groupkit.testing.pytest_plugin import kafka_broker  # noqa: F401
from tests.support.broker_data import create_topics
from tests.support.kafka_fetch_view import AbortedTransactionIndex
from tests.support.recording_proxy import RecordingProxy
from tests.support.txn_data import (
    INTERLEAVED_ABORTED,
    INTERLEAVED_COMMITTED,
    TRANSACTIONAL_PRODUCERS,
    committed_view,
    interleaved_transactions,
    log_entries,
    read_confluent,
    read_groupkit,
    read_kafka_python,
    until,
)

pytestmark = [pytest.mark.broker, pytest.mark.xdist_group("transactions")]

WRITERS = list(TRANSACTIONAL_PRODUCERS)
ENDS = until(b"end-0", b"end-1")


@pytest.fixture(scope="module")
def written(kafka_broker):  # noqa: F811
    """Each client's interleaved transactions in a topic of their own: client -> topic."""
    bootstrap = kafka_broker.bootstrap_servers
    topics = {client: f"rc-{client}-{uuid.uuid4().hex[:8]}" for client in WRITERS}
    create_topics(bootstrap, {topic: 2 for topic in topics.values()})
    for client, topic in topics.items():
        interleaved_transactions(client, bootstrap, topic)
    return topics


@pytest.fixture(scope="module")
def kafka_view(kafka_broker):  # noqa: F811
    """A proxy whose read_committed Fetch answers list aborted transactions as Kafka's do."""
    host, port = kafka_broker.bootstrap_servers.split(":")
    index = AbortedTransactionIndex(kafka_broker.bootstrap_servers)
    try:
        with RecordingProxy(host, int(port), rewriters={1: index.rewrite}) as proxy:
            yield proxy, index
            assert proxy.errors == []
    finally:
        index.close()


@pytest.mark.parametrize("writer", WRITERS)
def test_the_log_holds_every_record_and_marker(kafka_broker, written, writer) -> None:  # noqa: F811
    """What the readers are checked against: the committed view computed from the markers is
    the committed records, and the aborted ones are in the log too (so filtering is needed)."""
    entries = {p: log_entries(kafka_broker.bootstrap_servers, written[writer], p) for p in (0, 1)}
    assert sorted(committed_view(entries[0]) + committed_view(entries[1])) == \
        sorted(INTERLEAVED_COMMITTED)
    values = [v for p in (0, 1) for v, _ in entries[p] if isinstance(v, bytes)]
    assert sorted(values) == sorted(INTERLEAVED_COMMITTED + INTERLEAVED_ABORTED)


READERS = {"groupkit": lambda b, t, done, **kw: read_groupkit(b, t, 2, done, **kw),
           "confluent-kafka": read_confluent, "kafka-python": read_kafka_python}


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("writer", WRITERS)
def test_read_committed_sees_exactly_the_committed_records(kafka_view, written, writer,
                                                           reader) -> None:
    proxy, index = kafka_view
    before = index.filled
    values = READERS[reader](proxy.bootstrap_servers, written[writer], ENDS)
    assert sorted(values) == sorted(INTERLEAVED_COMMITTED)
    assert index.filled > before  # the answers it read listed aborted transactions


@pytest.mark.parametrize("writer", WRITERS)
def test_read_uncommitted_sees_every_record(kafka_view, written, writer) -> None:
    proxy, _ = kafka_view
    values = read_groupkit(proxy.bootstrap_servers, written[writer], 2, ENDS,
                           isolation="read_uncommitted")
    assert sorted(values) == sorted(INTERLEAVED_COMMITTED + INTERLEAVED_ABORTED)
