"""reset-offsets' own parsing: ISO 8601 times and durations (as Java's Instant/Duration read
them), and the CSV plan --export writes and --from-file reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from assignors import TopicPartition
from groupkit.cli.common import UsageError
from groupkit.cli.reset_offsets import parse_datetime, parse_duration, read_plan


def test_iso_times_with_zones_and_fractions() -> None:
    assert parse_datetime("1970-01-01T00:00:01Z") == 1000
    assert parse_datetime("1970-01-01T00:00:01.250z") == 1250
    assert parse_datetime("1970-01-01T02:00:00+02:00") == 0
    with pytest.raises(UsageError, match="ISO 8601 time"):
        parse_datetime("last tuesday")


def test_iso_durations_in_javas_form() -> None:
    assert parse_duration("PT30M") == 30 * 60_000
    assert parse_duration("pt1h30m") == 90 * 60_000
    assert parse_duration("P1DT12H") == 36 * 3_600_000
    assert parse_duration("PT0.5S") == 500
    assert parse_duration("P2D") == 2 * 86_400_000
    for bad in ("P", "PT", "30M", "P1DT", "-PT1M", "P1W"):
        with pytest.raises(UsageError, match="ISO 8601 duration"):
            parse_duration(bad)


def test_plan_files_in_one_group_and_several_group_form(tmp_path: Path) -> None:
    plan = tmp_path / "plan.csv"
    plan.write_text("orders,0,5\n\norders,1,7\n")
    assert read_plan(str(plan), "g") == {TopicPartition("orders", 0): 5,
                                         TopicPartition("orders", 1): 7}
    plan.write_text("g,orders,0,5\nother,orders,0,9\n")
    assert read_plan(str(plan), "g") == {TopicPartition("orders", 0): 5}
    plan.write_text("orders,zero,5\n")
    with pytest.raises(UsageError, match="line 1: expected topic,partition,offset"):
        read_plan(str(plan), "g")
    with pytest.raises(UsageError, match="cannot read --from-file"):
        read_plan(str(tmp_path / "missing.csv"), "g")
