"""Transactions against the second coordinator: confluent-kafka's mock cluster.

The mock serves InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn
and writes COMMIT/ABORT markers, but it cannot show read_committed filtering: its Fetch answers
list no aborted transactions and give the high watermark as the last stable offset, open
transactions included (docs/test-brokers.md; tests/integration/test_read_committed.py shows the
filtering). What it can show: groupkit's transactional producer works against a coordinator
that is not Tansu, its markers land where Kafka's would, interleaved with a peer's.
"""

from __future__ import annotations

import pytest

from tests.support.mock_cluster import MockCluster
from tests.support.txn_data import (
    INTERLEAVED_ABORTED,
    INTERLEAVED_COMMITTED,
    committed_view,
    interleaved_transactions,
    log_entries,
)

pytestmark = pytest.mark.xdist_group("mock-cluster")


@pytest.mark.parametrize("client", ["groupkit", "confluent-kafka"])
def test_interleaved_transactions_end_with_their_markers_on_the_mock(client: str) -> None:
    with MockCluster(brokers=3) as mock:
        mock.create_topic("txn", 2)
        interleaved_transactions(client, mock.bootstrap_servers, "txn")
        # The mock writes its markers with CRC 0 (its source says it does not check them).
        logs = [log_entries(mock.bootstrap_servers, "txn", p, check_crc=False) for p in (0, 1)]
    assert sorted(committed_view(logs[0]) + committed_view(logs[1])) == \
        sorted(INTERLEAVED_COMMITTED)
    values = [v for log in logs for v, _ in log if isinstance(v, bytes)]
    assert sorted(values) == sorted(INTERLEAVED_COMMITTED + INTERLEAVED_ABORTED)
    # Partition 0: A's record, B's two, A commits, B aborts, A's aborted one, A's committed
    # one, B's committed end: each marker right after the records it closes.
    assert [v if isinstance(v, str) else None for v, _ in logs[0]] == [
        None, None, None, "COMMIT", "ABORT", None, "ABORT", None, "COMMIT", None, "COMMIT"]
