"""``groupkit groups delete`` and ``delete-offsets`` on the local broker (which has no
OffsetDelete: the command says so and exits 1; the request itself is tested against a fake
broker in tests/cli/test_delete_offsets_fake.py)."""

from __future__ import annotations

import pytest

from tests.support.broker_data import commit_as_peer, committed_by_peer, make_batched_topic
from tests.support.cli_groups import (
    active_group,
    cli_json,
    member_ids_left,
    run_cli,
)


@pytest.fixture(scope="module")
def bootstrap(kafka_broker) -> str:
    return kafka_broker.bootstrap_servers


def test_delete_removes_the_group_and_its_offsets(bootstrap, unique_name, capsys) -> None:
    topic, group, other = unique_name("t"), unique_name("g"), unique_name("g")
    make_batched_topic(bootstrap, topic, {0: [5], 1: [5]})
    commit_as_peer(bootstrap, group, {(topic, 0): 3, (topic, 1): 4})
    commit_as_peer(bootstrap, other, {(topic, 0): 1})
    status, out, err = run_cli(capsys, "groups", "delete", group, "--bootstrap-server",
                               bootstrap)
    assert status == 0, err
    assert out == f"Deleted group {group!r}.\n"
    assert committed_by_peer(bootstrap, group, topic, 2) == {0: None, 1: None}
    assert committed_by_peer(bootstrap, other, topic, 2) == {0: 1, 1: None}
    listed = {g["group"] for g in cli_json(capsys, "groups", "list",
                                          "--bootstrap-server", bootstrap)}
    assert group not in listed and other in listed


def test_delete_of_a_group_with_members_is_refused(bootstrap, unique_name, capsys) -> None:
    topic, group = unique_name("t"), unique_name("g")
    make_batched_topic(bootstrap, topic, {0: [5]})
    commit_as_peer(bootstrap, group, {(topic, 0): 2})
    with active_group(bootstrap, group, topic):
        status, out, err = run_cli(capsys, "groups", "delete", group, "--bootstrap-server",
                                   bootstrap)
        assert status == 2 and out == "" and "still has active members" in err
        assert committed_by_peer(bootstrap, group, topic, 1) == {0: 2}
    member_ids_left(bootstrap, group)


def test_delete_offsets_says_the_broker_lacks_offset_delete(bootstrap, unique_name,
                                                            capsys) -> None:
    topic, group = unique_name("t"), unique_name("g")
    make_batched_topic(bootstrap, topic, {0: [5], 1: [5]})
    commit_as_peer(bootstrap, group, {(topic, 0): 3})
    status, out, err = run_cli(capsys, "groups", "delete-offsets", group, "--topic",
                               f"{topic}:0", "--bootstrap-server", bootstrap)
    assert status == 1 and out == ""
    assert "does not offer OffsetDelete (API 47" in err and err.count("\n") == 1
    assert committed_by_peer(bootstrap, group, topic, 2) == {0: 3, 1: None}
