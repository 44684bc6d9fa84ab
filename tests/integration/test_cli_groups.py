"""``groupkit groups list`` and ``describe`` on the local broker, against the truth read with
peer clients: a group of a groupkit member and a kafka-python member, offsets committed by
confluent-kafka, log ends from what the producer was told, committed offsets read back by
kafka-python."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.broker_data import commit_as_peer, committed_by_peer, make_batched_topic
from tests.support.cli_groups import (
    active_group,
    cli_json,
    run_cli,
)


@pytest.fixture(scope="module")
def bootstrap(kafka_broker) -> str:
    return kafka_broker.bootstrap_servers


def test_describe_shows_the_true_offsets_log_ends_and_lag_of_a_live_group(
        bootstrap, unique_name, capsys) -> None:
    topic, group = unique_name("orders"), unique_name("g")
    # Several batches per partition: the log end is not the last batch's base offset + 1.
    ends = make_batched_topic(bootstrap, topic, {0: [40, 30, 30], 1: [25, 25], 2: [9]})
    commit_as_peer(bootstrap, group, {(topic, 0): 35, (topic, 1): 50})
    truth = committed_by_peer(bootstrap, group, topic, 3)
    assert truth == {0: 35, 1: 50, 2: None}
    with active_group(bootstrap, group, topic):
        [described] = cli_json(capsys, "groups", "describe", group,
                               "--bootstrap-server", bootstrap)
        status, table, err = run_cli(capsys, "groups", "describe", group,
                                     "--bootstrap-server", bootstrap)
    assert described["group"] == group and described["state"] == "Stable"
    assert len(described["members"]) == 2
    assert described["coordinator"]["port"] == int(bootstrap.rsplit(":", 1)[1])
    members = {m["member_id"] for m in described["members"]}
    rows = {r["partition"]: r for r in described["offsets"]}
    # Committed partitions always; an assigned one without a commit only where the broker
    # says who owns what (Kafka does, Tansu 0.6 does not).
    assert {0, 1} <= set(rows) <= {0, 1, 2}
    for p in (0, 1):
        assert rows[p]["current_offset"] == truth[p]
        assert rows[p]["log_end_offset"] == ends[p]
        assert rows[p]["lag"] == ends[p] - truth[p]
    assert (rows[0]["lag"], rows[1]["lag"]) == (65, 0)
    if 2 in rows:
        assert (rows[2]["current_offset"], rows[2]["lag"]) == (None, None)
        assert rows[2]["log_end_offset"] == ends[2]
    assert all(r["member_id"] is None or r["member_id"] in members for r in rows.values())
    assert status == 0, err
    assert "TOTAL-LAG 65" in table and "STATE Stable" in table
    line = next(x for x in table.splitlines() if x.startswith(topic) and x.split()[1] == "0")
    assert line.split()[1:5] == ["0", "35", "100", "65"]
    owner = line.split()[5]
    assert owner == "-" or owner in members


def test_list_filters_by_the_state_the_group_is_really_in(bootstrap, unique_name,
                                                           capsys) -> None:
    topic, group = unique_name("listed"), unique_name("g")
    make_batched_topic(bootstrap, topic, {0: [3]})
    commit_as_peer(bootstrap, group, {(topic, 0): 1})
    listed = cli_json(capsys, "groups", "list", "--bootstrap-server", bootstrap)
    # (The "type" key, ListGroups v5's group type, is there when the broker gives it.)
    assert {"group": group, "state": "Empty", "protocol_type": "consumer"} in [
        {k: g[k] for k in ("group", "state", "protocol_type")} for g in listed]
    with active_group(bootstrap, group, topic):
        stable = cli_json(capsys, "groups", "list", "--state", "stable",
                          "--bootstrap-server", bootstrap)
        empty = cli_json(capsys, "groups", "list", "--state", "Empty,Dead",
                         "--bootstrap-server", bootstrap)
    assert group in {g["group"] for g in stable}
    assert all(g["state"] == "Stable" for g in stable)
    assert group not in {g["group"] for g in empty}
    status, _, err = run_cli(capsys, "groups", "list", "--state", "Sleeping",
                             "--bootstrap-server", bootstrap)
    assert status == 2 and "--state takes Stable, Empty" in err


def test_describe_of_a_group_nobody_knows_prints_it_and_says_so(bootstrap, unique_name,
                                                                  capsys) -> None:
    group = unique_name("ghost")
    status, out, err = run_cli(capsys, "groups", "describe", group, "--output", "json",
                               "--bootstrap-server", bootstrap)
    # Kafka describes an unknown group as Dead (exit 1, a sentence on stderr); Tansu 0.6 as
    # Empty, which is a group that exists as far as any client can tell.
    if '"Dead"' in out:
        assert status == 1 and "does not exist" in err
    else:
        assert status == 0 and err == ""
    assert f'"group": "{group}"' in out


def test_the_command_reads_the_environment_and_fails_in_one_line(bootstrap) -> None:
    env = {"GROUPKIT_BOOTSTRAP_SERVERS": bootstrap, "PATH": ""}
    ok = subprocess.run([sys.executable, "-m", "groupkit.cli", "groups", "list"],
                        env=env, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.split()[:3] == ["GROUP", "STATE", "PROTOCOL-TYPE"]
    down = subprocess.run([sys.executable, "-m", "groupkit.cli", "groups", "list",
                           "--bootstrap-server", "127.0.0.1:1"],
                          env={"PATH": ""}, capture_output=True, text=True, timeout=60)
    assert down.returncode == 1
    assert len(down.stderr.strip().splitlines()) == 1
    assert "Traceback" not in down.stderr and "127.0.0.1:1" in down.stderr

