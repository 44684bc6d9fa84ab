"""The metrics server over real HTTP on loopback: paths, content types, a port in use."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request

import pytest

from groupkit.errors import ConfigError
from groupkit.hooks import BrokerUnreachable, MemberStateChanged, Polled
from groupkit.metrics import HealthCheck, PrometheusMetrics, serve


def get(url: str, accept: str = "") -> tuple[int, str, bytes]:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return reply.status, reply.headers["Content-Type"], reply.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read()


def test_metrics_healthz_and_unknown_paths() -> None:
    metrics = PrometheusMetrics()
    metrics(BrokerUnreachable("b:9092", "refused", 1))
    health = HealthCheck(10.0, 10.0)
    health(Polled("g", 0, ()))
    health(MemberStateChanged("g", "PREPARING_REBALANCE", "STABLE"))
    with serve(metrics.registry, 0, host="127.0.0.1", health=health) as server:
        host, port = server.address
        assert host == "127.0.0.1" and port > 0 and server.url == f"http://127.0.0.1:{port}"
        code, kind, body = get(f"{server.url}/metrics")
        assert code == 200 and kind.startswith("text/plain")
        assert b'groupkit_connection_errors_total{broker="b:9092"} 1.0' in body
        code, kind, body = get(f"{server.url}/metrics",
                               accept="application/openmetrics-text; version=1.0.0")
        assert code == 200 and kind.startswith("application/openmetrics-text")
        assert body.endswith(b"# EOF\n")
        code, kind, body = get(f"{server.url}/healthz")
        assert code == 200 and kind == "application/json"
        assert json.loads(body)["groups"]["g"]["state"] == "STABLE"
        health(MemberStateChanged("g", "STABLE", "FATAL"))
        code, _, body = get(f"{server.url}/healthz")
        assert code == 503 and "fatal" in json.loads(body)["reason"]
        code, _, body = get(f"{server.url}/nope")
        assert code == 404 and json.loads(body)["paths"] == ["/metrics", "/healthz"]
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_a_port_in_use_is_a_config_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=f"cannot serve metrics on 127.0.0.1:{port}"):
            serve(PrometheusMetrics().registry, port, host="127.0.0.1")


def test_group_consumer_checks_metrics_port_when_built() -> None:
    from groupkit.consumer import ConsumerRecord
    from groupkit.group_consumer import GroupConsumer

    class Worker(GroupConsumer):
        topics = ["t"]
        group_id = "g"
        bootstrap_servers = "localhost:9092"

        def process(self, record: ConsumerRecord) -> None:
            pass

    for bad in (-1, 65536, "9100", True):
        with pytest.raises(ConfigError, match="metrics_port must be a port number"):
            Worker(metrics_port=bad)
    assert Worker().metrics is None
    worker = Worker(metrics_port=0)
    assert isinstance(worker.metrics, PrometheusMetrics)
    assert worker.metrics_address is None  # bound by run(), closed when it returns
