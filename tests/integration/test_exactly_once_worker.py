"""GroupConsumer with processing_guarantee="exactly_once_v2" against Tansu: each poll's output
and offsets in one transaction; a failed process() aborts it and the records are read again.

The read_committed view of the output is computed from the log's markers (tests/support/
txn_data.committed_view): Tansu does not list aborted transactions in Fetch answers, so a reader
there cannot filter them (docs/reliability.md).
"""

from __future__ import annotations

import threading

import pytest

from groupkit import GroupConsumer
from groupkit.errors import ConfigError
from groupkit.producer import Producer
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401
from tests.support.broker_data import committed, create_topic
from tests.support.txn_data import WAIT, committed_view, log_entries
from tests.support.waits import wait_for

pytestmark = [pytest.mark.broker, pytest.mark.xdist_group("transactions")]

FAST = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 500,
        "auto_offset_reset": "earliest"}


class Upper(GroupConsumer):
    processing_guarantee = "exactly_once_v2"
    fail_on: bytes | None = None

    def process(self, record) -> None:
        if record.value == self.fail_on:
            type(self).fail_on = None  # once
            raise RuntimeError("boom")
        self.send(self.out_topic, record.value.upper(), key=record.key)


def _run(worker: GroupConsumer) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def target() -> None:
        try:
            worker.run()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            errors.append(exc)
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, errors


def test_exactly_once_needs_read_committed() -> None:
    with pytest.raises(ConfigError, match="read_committed"):
        Upper(bootstrap_servers="h:1", topics=["t"], group_id="g",
              isolation_level="read_uncommitted")
    with pytest.raises(ConfigError, match="processing_guarantee"):
        Upper(bootstrap_servers="h:1", topics=["t"], group_id="g", processing_guarantee="eos")


def test_output_and_offsets_commit_together_and_a_failure_aborts(
        kafka_broker, unique_name) -> None:  # noqa: F811
    bootstrap = kafka_broker.bootstrap_servers
    source, sink, group = unique_name("in"), unique_name("out"), unique_name("g")
    create_topic(bootstrap, source, 2)
    create_topic(bootstrap, sink, 1)
    values = [b"v%02d" % i for i in range(20)]
    with Producer(bootstrap_servers=bootstrap) as p:
        for i, v in enumerate(values):
            p.send(source, v, partition=i % 2)
    txn_id = unique_name("tx")
    # The first worker fails on v07: its poll's transaction aborts and run() raises.
    first = Upper(bootstrap_servers=bootstrap, topics=[source], group_id=group,
                  transactional_id=txn_id, **FAST)
    first.out_topic = sink
    Upper.fail_on = b"v07"
    thread, errors = _run(first)
    thread.join(WAIT * 2)
    assert not thread.is_alive() and errors and "boom" in str(errors[0])
    # A second worker with the same transactional id goes on from the committed offsets.
    second = Upper(bootstrap_servers=bootstrap, topics=[source], group_id=group,
                   transactional_id=txn_id, **FAST)
    second.out_topic = sink

    def done() -> bool:
        return committed(bootstrap, group, source, 2) == {0: 10, 1: 10}
    thread, errors = _run(second)
    try:
        wait_for(done, WAIT * 2, "the group's committed offsets reach the input's end")
    finally:
        second.stop()
        thread.join(WAIT)
    assert not errors
    output = committed_view(log_entries(bootstrap, sink, 0))
    assert sorted(output) == sorted(v.upper() for v in values)
    assert second.summary.commits >= 1


class Copier(GroupConsumer):
    """at_least_once (the default): self.send goes through an idempotent producer, flushed
    before the offsets of the records that produced it are committed."""

    def process(self, record) -> None:
        self.send(self.out_topic, record.value, partition=record.partition)


def test_at_least_once_send_is_flushed_before_its_offsets_commit(
        kafka_broker, unique_name) -> None:  # noqa: F811
    bootstrap = kafka_broker.bootstrap_servers
    source, sink, group = unique_name("in"), unique_name("out"), unique_name("g")
    create_topic(bootstrap, source, 1)
    create_topic(bootstrap, sink, 1)
    with Producer(bootstrap_servers=bootstrap) as p:
        for i in range(10):
            p.send(source, b"%d" % i, partition=0)
    worker = Copier(bootstrap_servers=bootstrap, topics=[source], group_id=group,
                    auto_commit_interval_ms=200, **FAST)
    worker.out_topic = sink
    thread, errors = _run(worker)
    try:
        wait_for(lambda: committed(bootstrap, group, source, 1) == {0: 10}, WAIT * 2,
                 "the offsets to be committed")
        # Committed offsets imply their output was delivered first.
        assert [v for v, _ in log_entries(bootstrap, sink, 0)] == [b"%d" % i for i in range(10)]
    finally:
        worker.stop()
        thread.join(WAIT)
    assert not errors
