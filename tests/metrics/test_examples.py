"""The Prometheus examples and the README name only metrics groupkit exports, and the
dashboard and alert rules cover what operators watch."""

from __future__ import annotations

import json
import re
from pathlib import Path

from groupkit.metrics import METRIC_NAMES, METRICS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "prometheus"
NAME = re.compile(r"\bgroupkit_[a-z0-9_]+")


def dashboard_exprs() -> list[str]:
    dashboard = json.loads((EXAMPLES / "grafana-dashboard.json").read_text())
    exprs = []
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["targets"], f"panel {panel['title']!r} has no query"
        exprs.extend(t["expr"] for t in panel["targets"])
    return exprs


def test_every_metric_the_examples_use_is_exported() -> None:
    used: dict[str, set[str]] = {}
    for path in sorted(EXAMPLES.iterdir()):
        for name in NAME.findall(path.read_text()):
            used.setdefault(name, set()).add(path.name)
    assert used, "the examples use no groupkit metric at all"
    unknown = {name: files for name, files in used.items() if name not in METRIC_NAMES}
    assert not unknown, f"not exported by groupkit: {unknown}"


def test_the_dashboard_shows_what_the_issue_asks_for() -> None:
    text = "\n".join(dashboard_exprs())
    for name in ("groupkit_rebalances_total", "groupkit_rebalance_duration_seconds_bucket",
                 "groupkit_consumer_lag_records", "groupkit_records_consumed_total",
                 "groupkit_commit_duration_seconds_bucket",
                 "groupkit_last_heartbeat_timestamp_seconds", "groupkit_member_state"):
        assert name in text, name


def test_the_alert_rules_cover_lag_rebalance_storms_and_stale_heartbeats() -> None:
    rules = (EXAMPLES / "alerts.yml").read_text()
    alerts = re.findall(r"^\s*- alert: (\w+)$", rules, re.MULTILINE)
    assert {"GroupkitLagGrowing", "GroupkitRebalanceStorm", "GroupkitHeartbeatStale"} <= set(
        alerts)
    assert rules.count("expr:") == len(alerts)
    assert "alerts.yml" in (EXAMPLES / "prometheus.yml").read_text()


def test_the_readme_table_lists_every_metric() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Metrics"):]
    section = section[:section.index("\n## ", 1)] if "\n## " in section[1:] else section
    listed = set(re.findall(r"^\| `(groupkit_[a-z0-9_]+)`", section, re.MULTILINE))
    assert listed == {spec.name for spec in METRICS}
