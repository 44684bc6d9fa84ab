"""``groupkit groups delete-offsets`` against a fake broker that has OffsetDelete (the local
one does not), answering with bytes written out in tests/support/fake_broker.py."""

from __future__ import annotations

import pytest

from groupkit.errors import ApiKey, ErrorCode
from tests.support.cli_groups import run_cli
from tests.support.fake_broker import FakeCluster, offset_delete_answer


class ScriptedCluster(FakeCluster):
    """Answers each scripted request with the next body in ``answers``."""

    def __init__(self) -> None:
        self.answers: list[bytes] = []
        super().__init__(lambda header, frame: self.answers.pop(0), {"orders": 3})


@pytest.fixture
def fake():
    cluster = ScriptedCluster()
    yield cluster
    cluster.close()


def test_a_whole_topic_is_deleted_partition_by_partition(fake, capsys) -> None:
    fake.answers.append(offset_delete_answer(0, [("orders", [(0, 0), (1, 0), (2, 0)])]))
    status, out, err = run_cli(capsys, "groups", "delete-offsets", "g1", "--topic", "orders",
                               "--bootstrap-server", fake.bootstrap_servers)
    assert status == 0, err
    assert out == "Deleted the committed offsets of group 'g1' for orders-0, orders-1, orders-2.\n"
    [(header, frame)] = fake.scripted
    assert header.api_key == ApiKey.OFFSET_DELETE
    assert frame.endswith(b"\x00\x00\x00\x03" + b"".join(
        p.to_bytes(4, "big") for p in (0, 1, 2)))


def test_a_topic_the_group_still_reads_is_refused_by_the_broker(fake, capsys) -> None:
    fake.answers.append(offset_delete_answer(0, [("orders", [(1, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)])]))
    status, out, err = run_cli(capsys, "groups", "delete-offsets", "g1", "--topic", "orders:1",
                               "--bootstrap-server", fake.bootstrap_servers)
    assert status == 1 and out == ""
    assert "GROUP_SUBSCRIBED_TO_TOPIC" in err and "orders-1" in err
    assert err.count("\n") == 1


def test_an_unknown_topic_is_a_usage_error_before_any_request(fake, capsys) -> None:
    status, _, err = run_cli(capsys, "groups", "delete-offsets", "g1", "--topic", "ghost",
                             "--bootstrap-server", fake.bootstrap_servers)
    assert status == 2 and "'ghost' does not exist" in err
    assert fake.scripted == []
