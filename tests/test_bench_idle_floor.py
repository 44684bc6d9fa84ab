"""bench/idle_floor.py: the design's four threads are measured and each one woke."""

from __future__ import annotations

import re

import pytest

from bench import idle_floor


def test_the_floor_reports_each_of_the_four_threads_and_a_total(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert idle_floor.main(["--seconds", "1.2"]) == 0
    out = capsys.readouterr().out
    rows = dict(re.findall(r"^  (poll|runner|heartbeat reader|fetch reader)\s+\d+ us/s\s+([\d.]+)",
                           out, re.MULTILINE))
    assert set(rows) == {"poll", "runner", "heartbeat reader", "fetch reader"}
    # Every thread of the pattern woke in the window (about twice a second each).
    assert all(float(switches) > 0 for switches in rows.values()), out
    assert re.search(r"total\s+[\d.]+ % of a core", out)
