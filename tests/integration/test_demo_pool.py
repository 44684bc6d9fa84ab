"""The pool demo end to end: a pool of worker processes, one killed and replaced, nothing lost."""

from __future__ import annotations

import pytest

from groupkit.demo_pool import run_pool_demo

pytestmark = pytest.mark.broker


def test_pool_demo_replaces_a_killed_worker_and_loses_nothing() -> None:
    lines: list[str] = []
    summary = run_pool_demo(processes=2, partitions=4, rate=100, out=lines.append)
    text = "\n".join(lines)
    assert summary.produced > 0
    assert summary.lost == 0
    assert summary.consumed == summary.produced + summary.duplicates
    assert summary.restarts == 1
    assert summary.pool_exit_status == 0
    assert "killing worker pid" in text and "curl http://127.0.0.1:" in text
    assert "groupkit_records_consumed_total" in text
    # It ends with the group as 'groupkit groups describe' shows it: every record committed.
    described = text[text.index("$ groupkit groups describe demo-pool-workers"):]
    assert "GROUP demo-pool-workers" in described and "TOTAL-LAG 0" in described
    assert described.count("\ndemo-orders ") == 4  # one offset row per partition
