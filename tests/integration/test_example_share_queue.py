"""examples/share_queue on confluent-kafka's mock cluster: the TaskWorker's outcomes (a job
done is accepted, a malformed one rejected, one whose work raised released and done on its
second delivery), ``enqueue``, its /healthz and /metrics, and the README's ``groupkit run
tasks:TaskWorker --processes N --metrics-port P`` with N above the partition count, run from
the example's directory.

The mock's assignor gives each partition to one member; the pool test shares the partitions
among all workers by hand (``share_assign``), as Kafka's assignor does when members outnumber
partitions. The mock has no CreateTopics, so the tests create the topics and ``enqueue`` finds
them there. While members hold records, jobs are produced by the mock's one long-lived
producer: on the mock a client connection that closes ends every member's share sessions on
that broker, and their records come back (tests/support/mock_cluster.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.metrics_scrape import healthz, scrape, value, values
from tests.support.mock_cluster import MockCluster
from tests.support.waits import wait_for

pytestmark = pytest.mark.xdist_group("share-mock")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "share_queue"


def _tasks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("share_queue_tasks", EXAMPLE / "tasks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def mock() -> Iterator[MockCluster]:
    with MockCluster(share_auto_offset_reset="earliest", share_heartbeat_interval_ms=300,
                     share_session_timeout_ms=3000) as cluster:
        cluster.warm_producer()  # before any member: see tests/support/mock_cluster.py
        yield cluster


def test_the_task_worker_accepts_rejects_and_retries(mock: MockCluster,
                                                     caplog: Any) -> None:
    tasks = _tasks()
    topic = "example-tasks"
    mock.create_topic(topic)

    class Flaky(tasks.TaskWorker):
        """The example's worker, whose work fails the first time for every seventh job."""

        fetch_max_wait_ms = 100

        def __init__(self, **settings: Any) -> None:
            super().__init__(**settings)
            self.failed: set[int] = set()

        def run_job(self, job: dict[str, Any]) -> str:
            if job["id"] % 7 == 3 and job["id"] not in self.failed:
                self.failed.add(job["id"])
                raise ConnectionError("the result store is down")
            return str(super().run_job(job))

    worker = Flaky(bootstrap_servers=mock.bootstrap_servers, topics=[topic],
                   group_id="example-tasks", metrics_port=0)
    ran: list[Any] = []
    thread = threading.Thread(target=lambda: ran.append(worker.run()), daemon=True)
    caplog.set_level("INFO", logger="share_queue_tasks")
    # Enqueued before the worker joins (the group reads from the earliest offset here):
    # enqueue's connections close when it returns, which on the mock would release records
    # a member held then.
    tasks.enqueue(mock.bootstrap_servers, 40, topic=topic)
    mock.produce(topic, [b"not json", b'{"id": "seven", "text": "x", "rounds": 1}'])
    thread.start()
    try:
        wait_for(lambda: worker.summary.records_processed >= 40 + 6 + 2, 30,
                 "every job, the failed ones twice, and the two malformed ones")
        # The worker's own endpoint, as the README's metrics_port gives it.
        assert worker.metrics_address is not None
        base = f"http://127.0.0.1:{worker.metrics_address[1]}"
        with urllib.request.urlopen(base + "/healthz", timeout=5) as answer:
            assert answer.status == 200
            assert json.load(answer)["groups"]["example-tasks"]["state"] == "STABLE"
        with urllib.request.urlopen(base + "/metrics", timeout=5) as answer:
            text = answer.read().decode()
        labels = f'group="example-tasks",topic="{topic}"'
        assert f"groupkit_share_records_acquired_total{{{labels}}} 48.0" in text
        assert f"groupkit_share_records_redelivered_total{{{labels}}} 6.0" in text
    finally:
        worker.stop()
        thread.join(15)
    assert not thread.is_alive()
    [summary] = ran
    assert worker.failed == {3, 10, 17, 24, 31, 38}
    assert (summary.records_accepted, summary.records_released, summary.records_rejected) \
        == (40, 6, 2)
    assert worker.done == 40
    logged = caplog.text
    assert all(f"job {i}: delivery 2" in logged for i in worker.failed)
    assert len(re.findall(r"job \d+ done in", logged)) == 40


def test_groupkit_run_with_more_workers_than_partitions(mock: MockCluster,
                                                        tmp_path: Path) -> None:
    tasks = _tasks()
    topic, group = "example-pool", "example-pool-workers"
    mock.create_topic(topic, 2)
    log_path = tmp_path / "pool.log"
    args = [str(Path(sys.executable).with_name("groupkit")), "run", "tasks:TaskWorker",
            "--processes", "3", "--bootstrap-servers", mock.bootstrap_servers,
            "--set", f"topics=[{topic!r}]", "--set", f"group_id={group!r}",
            "--set", "fetch_max_wait_ms=100", "--set", "graceful_timeout_s=20",
            "--metrics-port", "0", "--set", "metrics_host='127.0.0.1'"]
    with log_path.open("w") as log:
        pool = subprocess.Popen(args, cwd=EXAMPLE, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, env={**os.environ})
    done = re.compile(r"\[worker \d+ pid (\d+)\] tasks: job (\d+) done in")

    def jobs_done() -> list[tuple[int, int]]:
        """(worker pid, job id) of every job the pool's workers logged as done."""
        return [(int(pid), int(job)) for pid, job in done.findall(log_path.read_text())]

    try:
        wait_for(lambda: len(mock.share_members(group)) == 3, 60,
                 "three task workers in the share group")
        members = mock.share_members(group)
        mock.share_assign(group, {m: [(topic, 0), (topic, 1)] for m in members})
        sent = 0
        while len({pid for pid, _ in jobs_done()}) < 3:
            assert sent < 600, f"not every worker got jobs:\n{log_path.read_text()[-3000:]}"
            # The mock's one producer: enqueue() would open and close connections, and on the
            # mock that ends every member's share sessions, releasing the jobs they hold.
            sent += mock.produce(topic, tasks.jobs(40, first_id=sent), partitions=2)
            wait_for(lambda want=sent: len(jobs_done()) >= want, 30, f"{sent} jobs done")
        # The pool's one endpoint, as the README's --metrics-port gives it.
        found = re.search(r"serving metrics on [\d.]+:(\d+)", log_path.read_text())
        assert found, log_path.read_text()[-3000:]
        port = int(found.group(1))
        samples = scrape(port)
        assert value(samples, "groupkit_pool_workers", state="running") == 3
        assert sum(values(samples, "groupkit_share_records_acquired_total",
                          group=group).values()) == sent
        assert healthz(port)[0] == 200
        pool.send_signal(signal.SIGTERM)
        assert pool.wait(30) == 0
    finally:
        if pool.poll() is None:
            os.killpg(pool.pid, signal.SIGKILL)
            pool.wait(10)
    ids = [i for _, i in jobs_done()]
    assert sorted(ids) == list(range(sent)), "a job was lost or done twice"
