"""The pool's one metrics endpoint: a scrape shows the records every worker consumed, the
pool's own gauges, and /healthz follows the slots."""

from __future__ import annotations

import os
import re
import signal

import pytest

from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support.broker_data import make_batched_topic
from tests.support.metrics_scrape import healthz, scrape, value
from tests.support.pool_process import WAIT, PoolProcess, pools  # noqa: F401
from tests.support.waits import eventually

pytestmark = pytest.mark.broker


def test_one_scrape_shows_every_worker(kafka_broker: LocalBroker, unique_name, pools  # noqa: F811
                                       ) -> None:
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    make_batched_topic(bootstrap, topic, {p: [30] for p in range(4)})
    pool: PoolProcess = pools("RecordingWorker", 2, bootstrap, group, topic,
                              "metrics_host='127.0.0.1'", "metrics_port=0")

    def port() -> int:
        found = re.search(r"serving metrics on [\d.]+:(\d+)", pool.log())
        assert found, pool.log()
        return int(found.group(1))

    metrics_port = eventually(port, WAIT, "the pool to serve its metrics", step=0.2)

    def all_counted() -> None:
        holders = {pid: h for pid, h in pool.holders().items() if h}
        assert len(holders) == 2
        processed = pool.processed()
        assert len(set(processed)) == 120
        s = scrape(metrics_port)
        assert value(s, "groupkit_records_consumed_total", group=group, topic=topic) == len(
            processed)
        assert value(s, "groupkit_assigned_partitions", group=group, topic=topic) == 4
        assert value(s, "groupkit_pool_workers", state="running") == 2
        status, body = healthz(metrics_port)
        assert status == 200 and body["running"] == 2, body

    eventually(all_counted, WAIT, "one scrape to count both workers' records", step=0.2)
    pids = {line["pid"] for line in pool.lines() if line["kind"] == "record"}
    assert len(pids) == 2  # the records came from both workers
    os.kill(next(iter(pids)), signal.SIGKILL)

    def restart_counted() -> None:
        s = scrape(metrics_port)
        assert value(s, "groupkit_pool_worker_restarts_total", reason="crashed") == 1

    eventually(restart_counted, WAIT, "the restart to be counted", step=0.2)
    assert pool.stop() == 0, pool.log()
