"""``groupkit groups reset-offsets`` on the local broker: every target, read back with
kafka-python; the refusal while a groupkit and a kafka-python member are in the group; dry runs,
--export and --from-file.

The topic's partitions hold records written before and after a known moment, each side in its
own batches, so earliest, log end, "at a time" and clamping all have one true answer.
"""

from __future__ import annotations

import time
from pathlib import Path

import attrs
import pytest

from tests.support.broker_data import (
    commit_as_peer,
    committed_by_peer,
    make_batched_topic,
    write_batches,
)
from tests.support.cli_groups import (
    active_group,
    cli_json,
    member_ids_left,
    run_cli,
)


@attrs.frozen
class Written:
    topic: str
    ends: dict[int, int]
    #: The first offset written after ``moment`` (ms since the epoch), per partition.
    after: dict[int, int]
    moment: int


@pytest.fixture(scope="module")
def bootstrap(kafka_broker) -> str:
    return kafka_broker.bootstrap_servers


@pytest.fixture(scope="module")
def written(bootstrap) -> Written:
    topic = f"reset-{time.time_ns()}"
    before = make_batched_topic(bootstrap, topic, {0: [30, 30], 1: [25], 2: []})
    time.sleep(1.0)  # a gap of whole seconds for --by-duration to land in
    moment = int(time.time() * 1000)
    time.sleep(1.0)
    ends = write_batches(bootstrap, topic, {0: [40], 1: [25], 2: [9]})
    assert (before, ends) == ({0: 60, 1: 25, 2: 0}, {0: 100, 1: 50, 2: 9})
    return Written(topic, ends, before, moment)


def _group(bootstrap: str, written: Written, unique_name) -> str:
    group = unique_name("g")
    commit_as_peer(bootstrap, group, {(written.topic, 0): 35, (written.topic, 1): 10})
    return group


def _duration_to(moment_ms: int) -> str:
    return f"PT{(time.time() * 1000 - moment_ms) / 1000:.1f}S"


TARGETS = {
    "to-earliest": (["--to-earliest"], lambda w: {0: 0, 1: 0, 2: 0}),
    "to-latest": (["--to-latest"], lambda w: w.ends),
    "to-current": (["--to-current"], lambda w: {0: 35, 1: 10, 2: w.ends[2]}),
    "to-offset, clamped to the log end": (["--to-offset", "30"], lambda w: {0: 30, 1: 30, 2: 9}),
    "to-datetime": (None, lambda w: w.after),
    "by-duration": (None, lambda w: w.after),
    "to-datetime after every record": (["--to-datetime", "2100-01-01T00:00:00+01:00"],
                                       lambda w: w.ends),
    "by-duration before every record": (["--by-duration", "P1DT1H"], lambda w: {0: 0, 1: 0,
                                                                                  2: 0}),
}


@pytest.mark.parametrize("name", list(TARGETS))
def test_each_target_commits_what_a_peer_reads_back(bootstrap, written, unique_name, capsys,
                                                    name) -> None:
    argv, expected = TARGETS[name]
    if name == "to-datetime":
        argv = ["--to-datetime", time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(
            written.moment // 1000)) + f".{written.moment % 1000:03d}Z"]
    elif name == "by-duration":
        argv = ["--by-duration", _duration_to(written.moment)]
    group = _group(bootstrap, written, unique_name)
    plan = cli_json(capsys, "groups", "reset-offsets", group, "--topic", written.topic,
                    *argv, "--execute", "--bootstrap-server", bootstrap)
    want = expected(written)
    assert committed_by_peer(bootstrap, group, written.topic, 3) == want
    assert plan == [{"topic": written.topic, "partition": p, "old_offset": old,
                     "new_offset": want[p]} for p, old in ((0, 35), (1, 10), (2, None))]


def test_shift_by_moves_from_the_committed_offset_and_clamps_at_earliest(
        bootstrap, written, unique_name, capsys) -> None:
    group = _group(bootstrap, written, unique_name)
    cli_json(capsys, "groups", "reset-offsets", group, "--topic", f"{written.topic}:0,1",
             "--shift-by", "-20", "--execute", "--bootstrap-server", bootstrap)
    assert committed_by_peer(bootstrap, group, written.topic, 3) == {0: 15, 1: 0, 2: None}
    status, _, err = run_cli(capsys, "groups", "reset-offsets", group, "--topic",
                             f"{written.topic}:2", "--shift-by", "1", "--bootstrap-server",
                             bootstrap)
    assert status == 2 and "no committed offset to shift" in err


def test_a_dry_run_changes_nothing_and_its_export_is_what_from_file_applies(
        bootstrap, written, unique_name, capsys, tmp_path: Path) -> None:
    group = _group(bootstrap, written, unique_name)
    status, csv_text, err = run_cli(capsys, "groups", "reset-offsets", group, "--all-topics",
                                    "--to-offset", "45", "--export",
                                    "--bootstrap-server", bootstrap)
    assert status == 0 and "Dry run" in err
    assert csv_text == f"{written.topic},0,45\n{written.topic},1,45\n"
    assert committed_by_peer(bootstrap, group, written.topic, 3) == {0: 35, 1: 10, 2: None}
    plan = tmp_path / "plan.csv"
    plan.write_text(csv_text + f"{written.topic},2,10000\n")  # out of range: clamped
    status, _, err = run_cli(capsys, "groups", "reset-offsets", group, "--from-file",
                             str(plan), "--execute", "--bootstrap-server", bootstrap)
    assert status == 0 and "Dry run" not in err
    assert f"offset 10000 is outside {written.topic}-2's range [0, 9]; 9 is used" in err
    assert committed_by_peer(bootstrap, group, written.topic, 3) == {0: 45, 1: 45, 2: 9}


def test_reset_is_refused_while_members_are_active_and_done_once_they_left(
        bootstrap, written, unique_name, capsys) -> None:
    group = _group(bootstrap, written, unique_name)
    argv = ("groups", "reset-offsets", group, "--topic", written.topic, "--to-earliest",
            "--execute", "--bootstrap-server", bootstrap)
    with active_group(bootstrap, group, written.topic):
        status, out, err = run_cli(capsys, *argv)
        assert status == 2 and out == ""
        assert f"group {group!r} is Stable" in err and "no active members" in err
        assert err.count("\n") == 1
        assert committed_by_peer(bootstrap, group, written.topic, 3) == \
            {0: 35, 1: 10, 2: None}
    member_ids_left(bootstrap, group)
    status, _, err = run_cli(capsys, *argv)
    assert status == 0, err
    assert committed_by_peer(bootstrap, group, written.topic, 3) == {0: 0, 1: 0, 2: 0}


def test_usage_mistakes_exit_2(bootstrap, written, unique_name, capsys) -> None:
    group = _group(bootstrap, written, unique_name)
    status, _, err = run_cli(capsys, "groups", "reset-offsets", group, "--to-earliest",
                             "--bootstrap-server", bootstrap)
    assert status == 2 and "--all-topics" in err
    status, _, err = run_cli(capsys, "groups", "reset-offsets", group, "--all-topics",
                             "--to-datetime", "yesterday", "--bootstrap-server", bootstrap)
    assert status == 2 and "ISO 8601" in err
    with pytest.raises(SystemExit) as exited:
        run_cli(capsys, "groups", "reset-offsets", group, "--all-topics", "--to-earliest",
                "--to-latest", "--bootstrap-server", bootstrap)
    assert exited.value.code == 2
