"""The share-group API's checks that need no broker: settings, modes, call order."""

from __future__ import annotations

from typing import Any

import pytest

import groupkit
from groupkit import AcknowledgeType, RejectRecord, ShareConsumer, ShareWorker
from groupkit.errors import ConfigError, GroupkitError, IllegalStateError

BOOT = "127.0.0.1:9"  # nothing is contacted by these tests


def test_a_share_consumer_needs_a_group_and_a_known_mode() -> None:
    with pytest.raises(ConfigError, match="group_id is required"):
        ShareConsumer(bootstrap_servers=BOOT)
    with pytest.raises(ConfigError, match="share_acknowledgement_mode"):
        ShareConsumer(bootstrap_servers=BOOT, group_id="g", share_acknowledgement_mode="auto")
    with pytest.raises(ConfigError, match="did you mean 'max_poll_records'"):
        ShareConsumer(bootstrap_servers=BOOT, group_id="g", max_pol_records=5)


def test_calls_before_subscribe_and_after_close_are_refused() -> None:
    consumer = ShareConsumer(bootstrap_servers=BOOT, group_id="g")
    with pytest.raises(IllegalStateError, match="subscribe"):
        consumer.poll(0)
    with pytest.raises(IllegalStateError, match="subscribe"):
        consumer.commit_sync(0)
    with pytest.raises(ConfigError, match="topic names"):
        consumer.subscribe([])
    consumer.close()
    consumer.close()  # twice does nothing
    with pytest.raises(IllegalStateError, match="closed"):
        consumer.poll(0)


def test_acknowledge_needs_explicit_mode() -> None:
    consumer = ShareConsumer(bootstrap_servers=BOOT, group_id="g")
    record: Any = object()
    with pytest.raises(IllegalStateError, match="explicit"):
        consumer.acknowledge(record, AcknowledgeType.ACCEPT)
    consumer.close()


def test_the_public_names() -> None:
    assert groupkit.AcknowledgeType.RELEASE == 2
    assert issubclass(RejectRecord, GroupkitError)
    assert groupkit.ShareWorker is ShareWorker


def test_a_share_worker_defines_exactly_one_of_process_and_process_batch() -> None:
    class Neither(ShareWorker):
        topics = ["t"]
        group_id = "g"

    class Both(Neither):
        def process(self, record: Any) -> None: ...
        def process_batch(self, records: Any) -> None: ...

    class One(Neither):
        def process(self, record: Any) -> None: ...

    for cls in (Neither, Both):
        with pytest.raises(ConfigError, match="exactly one"):
            cls(bootstrap_servers=BOOT)
    with pytest.raises(ConfigError, match="needs a group_id"):
        One(bootstrap_servers=BOOT, group_id=None)
    with pytest.raises(ConfigError, match="group.share.session.timeout.ms"):
        One(bootstrap_servers=BOOT, session_timeout_ms=6000)
    with pytest.raises(ConfigError, match="unknown setting 'max_pol_records'"):
        One(bootstrap_servers=BOOT, max_pol_records=5)
    assert One(bootstrap_servers=BOOT).config.explicit
