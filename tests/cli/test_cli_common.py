"""The CLI's pieces that need no broker: --command-config properties, topic arguments, exit
statuses, and describe's member columns decoded from consumer-protocol bytes real peers wrote
(tests/fixtures/group_bytes.json; the local broker returns no member bytes in DescribeGroups).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from assignors import TopicPartition
from groupkit.admin_values import GroupDescription, MemberDescription, Node
from groupkit.cli import main
from groupkit.cli.common import UsageError, admin_settings, console, table, topic_partitions
from groupkit.cli.group_view import GroupView, OffsetRow, member_cells
from groupkit.cli.properties import client_settings, parse_properties
from groupkit.errors import ConfigError
from groupkit.protocol.messages.describe_groups import DescribeGroupsResponseMember
from tests.support.captured_groups import captured_members

# --- --command-config --------------------------------------------------------------------------


def test_java_properties_syntax() -> None:
    text = ("# comment\n! also a comment\n  security.protocol = SASL_SSL\n"
            "sasl.mechanism:SCRAM-SHA-512\nclient.id  tools\n"
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule \\\n"
            "    required username=\"ops\" password=\"s3cret\";\n"
            "odd\\=key=x\\u0041\\t\n")
    props = parse_properties(text)
    assert props["security.protocol"] == "SASL_SSL"
    assert props["sasl.mechanism"] == "SCRAM-SHA-512"
    assert props["client.id"] == "tools"
    assert props["odd=key"] == "xA\t"
    assert props["sasl.jaas.config"] == ("org.apache.kafka.common.security.scram.ScramLoginModule"
                                         ' required username="ops" password="s3cret";')
    assert len(props) == 5


def test_properties_become_client_settings() -> None:
    props = {"security.protocol": "sasl_ssl", "sasl.mechanism": "scram-sha-256",
             "sasl.jaas.config": 'x.PlainLoginModule required username="u" password="p";',
             "ssl.truststore.location": "/ca.pem", "ssl.truststore.type": "PEM",
             "ssl.endpoint.identification.algorithm": "", "request.timeout.ms": "5000",
             "group.id": "ignored"}
    assert client_settings(props, "f") == {
        "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_plain_username": "u", "sasl_plain_password": "p", "ssl_cafile": "/ca.pem",
        "ssl_check_hostname": False, "request_timeout_ms": 5000}


def test_bad_properties_are_config_errors_saying_what_to_do() -> None:
    with pytest.raises(ConfigError, match="JKS key store; groupkit reads PEM"):
        client_settings({"ssl.truststore.location": "/t.jks"}, "f")
    with pytest.raises(ConfigError, match="username"):
        client_settings({"sasl.jaas.config": "PlainLoginModule required;"}, "f")
    with pytest.raises(ConfigError, match="whole number"):
        client_settings({"request.timeout.ms": "soon"}, "f")


def test_bootstrap_comes_from_the_flag_then_the_environment_then_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    config = tmp_path / "client.properties"
    config.write_text("bootstrap.servers=file:1\nclient.id=c\n")
    monkeypatch.delenv("GROUPKIT_BOOTSTRAP_SERVERS", raising=False)
    args = argparse.Namespace(bootstrap_server=None, command_config=str(config), timeout=None)
    assert admin_settings(args) == {"bootstrap_servers": "file:1", "client_id": "c"}
    args.timeout = 2500
    assert admin_settings(args)["request_timeout_ms"] == 2500
    assert admin_settings(args)["default_api_timeout_ms"] == 2500
    args.timeout = 0
    with pytest.raises(UsageError, match="--timeout"):
        admin_settings(args)
    args.timeout = None
    monkeypatch.setenv("GROUPKIT_BOOTSTRAP_SERVERS", "env:1")
    assert admin_settings(args)["bootstrap_servers"] == "env:1"
    args.bootstrap_server = "flag:1"
    assert admin_settings(args)["bootstrap_servers"] == "flag:1"
    monkeypatch.delenv("GROUPKIT_BOOTSTRAP_SERVERS")
    with pytest.raises(UsageError, match="--bootstrap-server"):
        admin_settings(argparse.Namespace(bootstrap_server=None, command_config=None,
                                          timeout=None))


# --- exit statuses -----------------------------------------------------------------------------


def test_usage_problems_exit_2_with_one_line(capsys, monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("GROUPKIT_BOOTSTRAP_SERVERS", raising=False)
    assert main(["groups", "list"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "GROUPKIT_BOOTSTRAP_SERVERS" in err
    assert main(["groups", "list", "--bootstrap-server", "h:1",
                 "--command-config", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot read --command-config" in err
    with pytest.raises(SystemExit) as exited:
        main(["groups", "describe"])
    assert exited.value.code == 2


def test_errors_exit_1_and_debug_adds_the_traceback(capsys) -> None:
    argv = ["groups", "list", "--bootstrap-server", "127.0.0.1:1"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("groupkit: error:") and "Traceback" not in err
    assert main([*argv, "--debug"]) == 1
    assert "Traceback" in capsys.readouterr().err


# --- --topic arguments -------------------------------------------------------------------------


def test_topic_arguments_name_partitions_or_whole_topics() -> None:
    counts = {"orders": 3, "audit": 1}
    assert topic_partitions(["orders:2,0", "audit", "orders:0"], counts) == [
        TopicPartition("orders", 2), TopicPartition("orders", 0), TopicPartition("audit", 0)]
    with pytest.raises(UsageError, match="'ghost' does not exist"):
        topic_partitions(["ghost"], counts)
    with pytest.raises(UsageError, match="partitions 0-2, not 3"):
        topic_partitions(["orders:3"], counts)
    with pytest.raises(UsageError, match="numbers separated by commas"):
        topic_partitions(["orders:a"], counts)


# --- describe's columns from real member bytes -------------------------------------------------


def test_members_show_their_decoded_assignment_in_table_and_json() -> None:
    members, expected = captured_members()
    assert len(members) >= 2
    view = GroupView(GroupDescription("g", "Stable", "consumer", "range", tuple(members),
                                      Node(1, "b1", 9092)), ())
    as_json = view.to_json()
    assert as_json["coordinator"] == {"id": 1, "host": "b1", "port": 9092}
    for m in as_json["members"]:
        got = sorted((a["topic"], a["partition"]) for a in m["assignment"])
        assert got == expected[m["member_id"]]
        assert (m["host"], m["client_id"], m["group_instance_id"]) == ("/10.0.0.1", "c", None)
    for m in members:
        cell = member_cells(m)[4]
        for topic in {t for t, _ in expected[m.member_id]}:
            parts = sorted(p for t, p in expected[m.member_id] if t == topic)
            assert f"{topic}: {','.join(map(str, parts))}" in cell


def test_other_protocols_show_the_raw_size_and_null_assignment() -> None:
    wire = DescribeGroupsResponseMember(
        member_id="w1", group_instance_id="i1", client_id="connect", client_host="/h",
        member_metadata=b"\x01\x02", member_assignment=b"\x00" * 17)
    member = MemberDescription.from_wire(wire, "connect")
    view = GroupView(GroupDescription("g", "Stable", "connect", "sessioned", (member,)), ())
    assert view.to_json()["members"][0]["assignment"] is None
    assert view.to_json()["coordinator"] is None
    assert member_cells(member)[4] == "(17 bytes)"


def test_offsets_json_and_table_use_null_and_dash_for_unknown(capsys) -> None:
    row = OffsetRow("orders", 0, None, 12, None, None)
    assert row.to_json() == {"topic": "orders", "partition": 0, "current_offset": None,
                             "log_end_offset": 12, "lag": None, "member_id": None}
    console().print(table(("TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                           "CONSUMER-ID", "HOST", "CLIENT-ID"), [row.cells()]))
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].split() == ["orders", "0", "-", "12", "-", "-", "-", "-"]


class _Cluster:
    """What gather() asks of an Admin, answered from fixed values."""

    def __init__(self, description: GroupDescription, committed: dict, ends: dict) -> None:
        self.description, self.committed, self.ends = description, committed, ends
        self.asked_ends: list[TopicPartition] = []

    def describe_groups(self, ids):
        return {g: self.description for g in ids}

    def list_group_offsets(self, group_id):
        from groupkit.values import OffsetAndMetadata

        return {tp: OffsetAndMetadata(o) for tp, o in self.committed.items()}

    def list_topics(self):
        counts: dict[str, int] = {}
        for tp in self.ends:
            counts[tp.topic] = max(counts.get(tp.topic, 0), tp.partition + 1)
        return counts

    def log_end_offsets(self, partitions):
        self.asked_ends = list(partitions)
        return {tp: self.ends[tp] for tp in partitions}


def test_owners_come_from_decoded_assignments_and_uncommitted_partitions_show_dashes() -> None:
    from groupkit.cli.group_view import gather

    members, expected = captured_members()
    owned = {TopicPartition(t, p): m for m in members for t, p in expected[m.member_id]}
    first, *rest = sorted(owned)
    assert rest
    stray, gone = TopicPartition("old-topic", 0), TopicPartition("deleted-topic", 0)
    committed = {first: 1, stray: 4, gone: 3}
    ends = {tp: 10 for tp in owned} | {stray: 9}
    cluster = _Cluster(GroupDescription("g", "Stable", "consumer", "range", tuple(members)),
                       committed, ends)
    [view] = gather(cluster, ["g"])  # type: ignore[arg-type]
    rows = {TopicPartition(r.topic, r.partition): r for r in view.offsets}
    assert set(rows) == set(owned) | {stray, gone}
    assert sorted(cluster.asked_ends) == sorted(set(rows) - {gone})
    assert (rows[gone].current_offset, rows[gone].log_end_offset, rows[gone].lag) == (3, None,
                                                                                      None)
    assert (rows[first].current_offset, rows[first].lag) == (1, 9)
    assert rows[first].member is owned[first]
    for tp in rest:
        assert (rows[tp].current_offset, rows[tp].log_end_offset, rows[tp].lag) == (None, 10,
                                                                                    None)
        assert rows[tp].to_json()["member_id"] == owned[tp].member_id
    assert rows[stray].member is None and rows[stray].lag == 5
    assert view.total_lag == 9 + 5
    assert [(r.topic, r.partition) for r in view.offsets] == sorted(
        (tp.topic, tp.partition) for tp in rows)
