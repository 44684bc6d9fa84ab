"""Finding assignors by name, and a plugin installed from examples/custom_assignor."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from assignors import (
    CooperativeStickyAssignor,
    RangeAssignor,
    RebalanceProtocol,
    RoundRobinAssignor,
    StickyAssignor,
    available,
    known,
    lookup,
    resolve,
)
from groupkit.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("range", RangeAssignor),
        ("roundrobin", RoundRobinAssignor),
        ("sticky", StickyAssignor),
        ("cooperative-sticky", CooperativeStickyAssignor),
    ],
)
def test_lookup_builds_a_new_builtin_each_time(name, cls):
    first, second = lookup(name), lookup(name)
    assert type(first) is cls and first.name == name
    assert first is not second


def test_only_cooperative_sticky_supports_cooperative():
    cooperative = [n for n in available() if RebalanceProtocol.COOPERATIVE in lookup(n).supported_protocols]
    assert cooperative == ["cooperative-sticky"]


def test_unknown_name_raises_config_error_listing_known_names():
    with pytest.raises(ConfigError) as caught:
        lookup("no-such-assignor")
    message = str(caught.value)
    assert "'no-such-assignor'" in message
    for name in ("range", "roundrobin", "sticky", "cooperative-sticky"):
        assert name in message


def test_resolve_takes_a_name_or_an_instance():
    mine = StickyAssignor()
    assert resolve(mine) is mine
    assert isinstance(resolve("range"), RangeAssignor)
    with pytest.raises(ConfigError):
        resolve(42)  # type: ignore[arg-type]


def test_available_starts_with_the_builtins():
    assert available()[:4] == ["range", "roundrobin", "sticky", "cooperative-sticky"]


def test_installed_plugin_is_found_and_used(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(ROOT / "examples" / "custom_assignor", source)
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--no-build-isolation", "--target", str(target), str(source)],
        check=True, timeout=120, capture_output=True,
    )
    script = textwrap.dedent(
        """
        import assignors
        from assignors import ClusterView, MemberSubscription
        from assignors.wire import decode_subscription
        from groupkit_weighted import WeightedAssignor

        found = assignors.lookup("weighted")
        assert isinstance(found, WeightedAssignor), found
        assert "weighted" in assignors.available()
        members = {
            "big": decode_subscription(WeightedAssignor(capacity=3).metadata(["t"])),
            "small": decode_subscription(found.metadata(["t"])),
        }
        result = found.assign(ClusterView({"t": 8}), members)
        print(len(result["big"].partitions), len(result["small"].partitions))
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", script],
        env={"PYTHONPATH": f"{target}:{ROOT}", "PATH": "/usr/bin:/bin"},
        check=True, timeout=60, capture_output=True, text=True,
    )
    assert run.stdout.split() == ["6", "2"]


def test_a_plugin_must_build_an_assignor(monkeypatch):
    class EntryPoint:
        name = "broken"

        def load(self):
            return lambda: object()

    monkeypatch.setattr("assignors.registry._plugins", lambda: [EntryPoint()])
    with pytest.raises(ConfigError, match="not an Assignor"):
        lookup("broken")
    assert "broken" in available()


def test_known_answers_built_in_names_without_the_plugin_scan(monkeypatch):
    class EntryPoint:
        name = "plugged"

    scans = []
    monkeypatch.setattr("assignors.registry._plugins",
                        lambda: scans.append(1) or [EntryPoint()])
    assert known("range") and known("cooperative-sticky")
    assert scans == []  # the scan loads importlib.metadata: built-in names never need it
    assert known("plugged")
    assert not known("rnage")
    assert len(scans) == 2
