"""Metrics of a consumer that polls fast and then stops, scraped over real HTTP (issue 27).

Counters are exact at every scrape however fast the polls come: each poll's records are
counted as they are handed over. Lag gauges are current within 0.1 s of a change, also once
the application has stopped polling. The truth is what the test handed over and the
producer's log ends.
"""

from __future__ import annotations

import re
import time

import pytest
from prometheus_client import CollectorRegistry

from assignors import TopicPartition
from groupkit.consumer import Consumer
from groupkit.metrics import PrometheusMetrics, serve
from groupkit.testing import LocalBroker
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support.broker_data import make_batched_topic
from tests.support.metrics_scrape import scrape, value, values
from tests.support.pool_process import PoolProcess, pools  # noqa: F401
from tests.support.waits import eventually

pytestmark = pytest.mark.broker

WAIT = 30.0
VALUE = b"v" * 50
#: How long after the last change a gauge may lag behind (the metrics' promise), plus the
#: time a loaded two-core machine may take to run the thread that brings it up to date.
FRESH_S = 0.1
SCHEDULING_S = 0.4


def test_fast_polls_then_none_leave_exact_counts_and_current_lag(
        kafka_broker: LocalBroker, unique_name) -> None:  # noqa: F811
    bootstrap, topic = kafka_broker.bootstrap_servers, unique_name("t")
    ends = make_batched_topic(bootstrap, topic, {p: [500] for p in range(4)}, VALUE)
    reg = CollectorRegistry()
    tps = [TopicPartition(topic, p) for p in range(4)]
    labels = {"group": "", "topic": topic}
    with Consumer(bootstrap_servers=bootstrap, hooks=[PrometheusMetrics(registry=reg)],
                  max_poll_records=50, auto_offset_reset="earliest") as consumer:
        consumer.assign(tps)
        handed, polls = 0, 0
        deadline = time.monotonic() + WAIT
        while handed < 500:
            assert time.monotonic() < deadline, f"only {handed} records came"
            got = len(consumer.poll(WAIT))
            handed += got
            polls += got > 0
            # Exact after every poll, however fast they come (read straight from the registry
            # here, so the polls stay fast; the HTTP scrapes below render the same registry).
            assert (reg.get_sample_value("groupkit_records_consumed_total", labels) or 0) \
                == handed
        stopped = time.monotonic()
        assert handed == 500 and polls >= 10
        # The application polls no more from here on.
        with serve(reg, 0, host="127.0.0.1") as server:
            port = server.address[1]
            s = scrape(port)
            assert value(s, "groupkit_records_consumed_total", **labels) == 500
            assert value(s, "groupkit_bytes_consumed_total", **labels) > 500 * len(VALUE)
            truth = {str(tp.partition): ends[tp.partition] - consumer.position(tp, timeout=5)
                     for tp in tps}
            assert sorted(truth.values()) == [0, 500, 500, 500]
            left = stopped + FRESH_S + SCHEDULING_S - time.monotonic()
            if left > 0:
                time.sleep(left)  # the promise is a time bound: scrape once it has passed
            s = scrape(port)
            lag = {dict(k)["partition"]: v
                   for k, v in values(s, "groupkit_consumer_lag_records", **labels).items()}
            assert lag == truth
            assert value(s, "groupkit_records_consumed_total", **labels) == 500


def test_a_pool_worker_that_stops_polling_leaves_exact_counts_and_current_lag(
        kafka_broker: LocalBroker, unique_name, pools) -> None:  # noqa: F811
    # The same path in multiprocess mode: the worker's hooks write the values its pool serves.
    bootstrap, topic, group = kafka_broker.bootstrap_servers, unique_name("t"), unique_name("g")
    ends = make_batched_topic(bootstrap, topic, {p: [250] for p in range(4)}, VALUE)
    pool: PoolProcess = pools("StallsAfter500", 1, bootstrap, group, topic,
                              "metrics_host='127.0.0.1'", "metrics_port=0")

    def port() -> int:
        found = re.search(r"serving metrics on [\d.]+:(\d+)", pool.log())
        assert found, pool.log()
        return int(found.group(1))

    def stalled() -> dict:
        found = [line for line in pool.lines() if line["kind"] == "stalled"]
        assert found, pool.log()
        return found[0]

    metrics_port = eventually(port, WAIT, "the pool to serve its metrics", step=0.1)
    stall = eventually(stalled, WAIT, "the worker to take 500 records and stall", step=0.05)
    stopped = time.monotonic()
    labels = {"group": group, "topic": topic}
    s = scrape(metrics_port)
    assert value(s, "groupkit_records_consumed_total", **labels) == stall["handed"] >= 500
    truth = {p: ends[int(p)] - position for p, position in stall["positions"].items()}
    assert len(truth) == 4 and sum(truth.values()) == 1000 - stall["handed"]
    left = stopped + FRESH_S + SCHEDULING_S - time.monotonic()
    if left > 0:
        time.sleep(left)
    s = scrape(metrics_port)
    lag = {dict(k)["partition"]: v
           for k, v in values(s, "groupkit_consumer_lag_records", **labels).items()}
    assert lag == truth
    assert value(s, "groupkit_records_consumed_total", **labels) == stall["handed"]
    assert pool.stop() == 0, pool.log()
