"""Chaos at the transaction APIs: an exactly-once member (processing_guarantee=
"exactly_once_v2", its own process, every connection through the fault-injecting proxy) has
its next InitProducerId, AddPartitionsToTxn, TxnOffsetCommit or EndTxn reset or blackholed,
while records keep arriving. Whatever happened: every input record's output is in the output
topic's committed view exactly once, the committed offsets end at the input's log end, and the
member stops with status 0. The committed view is computed from the log's markers (Tansu lists
no aborted transactions in Fetch answers). Each case's figure goes to docs/reliability.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support.broker_data import committed, create_topic, produce
from tests.support.chaos import CHAOS_PROPERTY, MEMBER_SETTINGS, Member, log_ends
from tests.support.recording_proxy import Fault, RecordingProxy
from tests.support.txn_data import committed_view, log_entries
from tests.support.waits import eventually

pytestmark = pytest.mark.broker

API_KEYS = {"InitProducerId": 22, "AddPartitionsToTxn": 24, "TxnOffsetCommit": 28,
            "EndTxn": 26}
CASES = [f"{api}-reset" for api in API_KEYS] + ["TxnOffsetCommit-blackhole",
                                                 "EndTxn-blackhole"]
PARTITIONS = 4
BATCH = 100
WAIT = 60.0


@pytest.mark.parametrize("case", CASES)
def test_transaction_faults_lose_nothing_and_write_nothing_twice(
        case: str, kafka_broker: LocalBroker, unique_name, tmp_path: Path,  # noqa: F811
        record_property: Callable[[str, object], None]) -> None:
    direct = kafka_broker.bootstrap_servers
    topic, group = unique_name("t"), unique_name("g")
    out = f"{topic}-out"
    create_topic(direct, topic, PARTITIONS)
    create_topic(direct, out, PARTITIONS)
    produce(direct, topic, range(BATCH), PARTITIONS)
    api, action = case.split("-")
    settings = {**MEMBER_SETTINGS, "processing_guarantee": "exactly_once_v2",
                "transactional_id": f"{group}-a", "out_topic": out}
    del settings["auto_commit_interval_ms"]
    started = time.monotonic()
    with RecordingProxy(kafka_broker.host, kafka_broker.port) as proxy:
        fault = Fault(API_KEYS[api], action, client_id="chaos-a")
        if api == "InitProducerId":
            proxy.arm(fault)  # the producer's first request to its coordinator
        a = Member(tmp_path, "a", proxy.bootstrap_servers, group, topic, settings)
        try:
            if api != "InitProducerId":
                eventually(lambda: _assert(len(a.processed()) > 0), WAIT,
                           "a to process records")
                proxy.arm(fault)
            produce(direct, topic, range(BATCH, 2 * BATCH), PARTITIONS)
            fault_at = proxy.wait_fired(1, WAIT)[0].at
            produce(direct, topic, range(2 * BATCH, 3 * BATCH), PARTITIONS)
            ends = log_ends(direct, topic, PARTITIONS)
            eventually(lambda: _assert(committed(direct, group, topic, PARTITIONS) == ends),
                       WAIT, "the committed offsets to reach the log end")
            recovered = time.monotonic() - fault_at
        finally:
            code = a.stop(30)
    assert code == 0, a.output()
    outputs = [v for p in range(PARTITIONS) for v in committed_view(log_entries(direct, out, p))]
    expected = {b"%d:%d" % (p, o) for p, end in ends.items() for o in range(end)}
    assert len(outputs) == len(set(outputs)), "an input's output was committed twice"
    assert set(outputs) == expected, f"{len(expected - set(outputs))} outputs missing"
    processed = a.processed()
    record_property(CHAOS_PROPERTY, f"{case}: {len(expected)} records, {len(processed)}"
                    f" processed ({len(processed) - len(set(processed))} again after an"
                    f" abort), recovered in {recovered:.1f} s, case {time.monotonic() - started:.1f} s")


def _assert(condition: bool) -> None:
    assert condition
