"""A pool of exactly-once workers (``groupkit run``, real processes and signals) reading one
topic and writing another while records keep arriving: one worker SIGKILLed mid-transaction,
another SIGSTOPped past its session and resumed (a zombie). The output, read as a
read_committed reader must see it, holds every input record's output exactly once; the
group's committed offsets reach the input's log end; the pool stops with status 0.

The read_committed view is computed from the output log's markers (Tansu lists no aborted
transactions in Fetch answers). Tansu's TxnOffsetCommit does not check the generation, so
the zombie is stopped by the worker's own check (``group_metadata(current=True)``); on Kafka
the coordinator refuses it as well (KIP-447).
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support import waits
from tests.support.broker_data import committed, create_topic, write_batches
from tests.support.pool_process import WAIT, pools  # noqa: F401
from tests.support.txn_data import committed_view, log_entries

pytestmark = pytest.mark.broker
PARTITIONS = 6


def test_exactly_once_pool_survives_a_kill_and_a_zombie(
        kafka_broker: LocalBroker, unique_name, pools) -> None:  # noqa: F811
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    create_topic(bootstrap, topic, PARTITIONS)
    create_topic(bootstrap, f"{topic}-out", PARTITIONS)
    ends = write_batches(bootstrap, topic, {p: [20] for p in range(PARTITIONS)})
    pool = pools("ExactlyOnceWorker", 3, bootstrap, group, topic)

    def three_share_all() -> dict[int, set[int]]:
        held = {pid: h for pid, h in pool.holders().items() if h}
        assert len(held) == 3 and set().union(*held.values()) == set(range(PARTITIONS)), held
        return held

    held = waits.eventually(three_share_all, WAIT, "three workers to share the partitions",
                            step=0.2)
    victim, zombie = list(held)[:2]
    more: dict[int, int] = {}

    def keep_writing() -> None:
        for _ in range(5):
            for p, end in write_batches(bootstrap, topic,
                                        {p: [10] for p in range(PARTITIONS)}).items():
                more[p] = end
            time.sleep(0.5)
    writer = threading.Thread(target=keep_writing, daemon=True)
    writer.start()
    os.kill(victim, signal.SIGKILL)
    os.kill(zombie, signal.SIGSTOP)
    try:
        def others_hold_everything() -> None:
            live = {pid: h for pid, h in pool.holders().items()
                    if h and pid not in (victim, zombie)}
            assert set().union(set(), *live.values()) == set(range(PARTITIONS)), live
        # Past the zombie's session: the group has moved its partitions to the others.
        waits.eventually(others_hold_everything, WAIT, "the others to take every partition",
                         step=0.2)
    finally:
        os.kill(zombie, signal.SIGCONT)
    writer.join(WAIT)
    total = {p: max(ends[p], more.get(p, 0)) for p in range(PARTITIONS)}
    waits.eventually(lambda: _assert(committed(bootstrap, group, topic, PARTITIONS) == total),
                     WAIT, "the committed offsets to reach the input's end", step=0.5)
    assert pool.stop() == 0, pool.log()
    outputs = [value for p in range(PARTITIONS)
               for value in committed_view(log_entries(bootstrap, f"{topic}-out", p))]
    expected = {b"%d:%d" % (p, o) for p in range(PARTITIONS) for o in range(total[p])}
    assert len(outputs) == len(set(outputs)), "an input's output was committed twice"
    assert set(outputs) == expected


def _assert(condition: bool) -> None:
    assert condition
