"""Prints the chaos cases' one-line figures after the run, also under pytest-xdist (where a
test's own output is not shown): each case records its line as a user property."""

from __future__ import annotations

import pytest

from tests.support.chaos import CHAOS_PROPERTY


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    lines = sorted(value for kind in ("passed", "failed")
                   for report in terminalreporter.stats.get(kind, [])
                   if getattr(report, "when", "") == "call"
                   for name, value in getattr(report, "user_properties", [])
                   if name == CHAOS_PROPERTY)
    if lines:
        terminalreporter.section("chaos cases")
        for line in lines:
            terminalreporter.write_line(line)
