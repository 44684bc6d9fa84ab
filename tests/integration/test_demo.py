"""The demo runs end to end on its own broker: every produced record is consumed, none lost."""

from __future__ import annotations

import pytest

from groupkit.cli import main
from groupkit.demo import run_demo

pytestmark = pytest.mark.broker


def test_demo_consumes_every_produced_record() -> None:
    lines: list[str] = []
    summary = run_demo(partitions=4, rate=100, out=lines.append)
    text = "\n".join(lines)
    assert summary.produced > 0
    assert summary.lost == 0
    assert summary.consumed == summary.produced + summary.duplicates
    # Two workers form the group, a third joins, the first leaves: three generations at least.
    assert summary.rebalances >= 3
    assert summary.commits > 0
    for phase in ("starting worker-1 and worker-2", "adding worker-3", "stopping worker-1"):
        assert phase in text
    assert "worker-3  assigned" in text
    assert f"summary: {summary.produced} produced" in text
    # It ends with the group as 'groupkit groups describe' shows it: every record committed.
    described = text[text.index("$ groupkit groups describe demo-workers"):]
    assert "GROUP demo-workers" in described and "TOTAL-LAG 0" in described
    assert described.count("\ndemo-orders ") == 4  # one offset row per partition


def test_demo_command_line_rejects_unknown_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["demo", "--partitions", "x"])
    assert info.value.code == 2
    assert "--partitions" in capsys.readouterr().err
