"""Suite-wide settings: hypothesis sized for a 2-core CI machine, no per-example deadline; the
chaos cases' figures in the terminal summary."""

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "groupkit", max_examples=60, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("groupkit")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The chaos cases' one-line figures (tests/integration/chaos), printed after the run also
    under pytest-xdist, where a test's own output is not shown: each records its line as the
    user property ``chaos``."""
    lines = sorted(value for kind in ("passed", "failed")
                   for report in terminalreporter.stats.get(kind, [])
                   if getattr(report, "when", "") == "call"
                   for name, value in getattr(report, "user_properties", [])
                   if name == "chaos")  # tests.support.chaos.CHAOS_PROPERTY
    if lines:
        terminalreporter.section("chaos cases")
        for line in lines:
            terminalreporter.write_line(line)
