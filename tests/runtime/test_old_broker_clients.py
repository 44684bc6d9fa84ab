"""Clients against a broker older than what they ask for (a scripted one-node cluster whose
ApiVersions leaves APIs out): each stops with one error that names the missing feature and the
release that has it, at once, instead of retrying or encoding what the version cannot carry."""

from __future__ import annotations

import logging

import pytest

from groupkit import Admin, Producer
from groupkit.errors import ApiKey, FatalTransactionError, FeatureUnsupportedError
from groupkit.protocol.headers import RequestHeader
from groupkit.protocol.versions import CLIENT_VERSIONS
from tests.support.fake_broker import FakeCluster


def refuse(header: RequestHeader, frame: bytes) -> bytes:
    raise AssertionError(f"API {header.api_key} was not to be sent")


def test_an_idempotent_producer_fails_once_on_a_broker_without_init_producer_id(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="groupkit")
    # Kafka 0.10 has no InitProducerId (KIP-98 came in 0.11).
    versions = {k: v for k, v in CLIENT_VERSIONS.items() if k != ApiKey.INIT_PRODUCER_ID}
    with FakeCluster(refuse, {"t": 1}, versions) as cluster, \
            Producer(bootstrap_servers=cluster.bootstrap_servers) as producer:
        error = producer.send("t", b"x", partition=0).exception(10)
        producer.flush(5)
    assert isinstance(error, FatalTransactionError)
    cause = error.__cause__
    assert isinstance(cause, FeatureUnsupportedError) and cause.release == "0.11"
    assert "InitProducerId (API key 22)" in str(cause)
    assert len([r for r in caplog.records if "InitProducerId" in r.getMessage()]) == 1
    assert cluster.scripted == []


def test_a_pin_without_an_api_fails_the_bootstrap_naming_it_not_no_brokers() -> None:
    # Admin asks for topic metadata without auto-creation: Metadata v4 (Kafka 0.11) and newer.
    with FakeCluster(refuse, {"t": 1}) as cluster, \
            Admin(bootstrap_servers=cluster.bootstrap_servers, api_version="0.10.2") as admin, \
            pytest.raises(FeatureUnsupportedError, match=r"allow_auto_topic_creation.*0\.11"):
        admin.log_end_offsets([("t", 0)])
