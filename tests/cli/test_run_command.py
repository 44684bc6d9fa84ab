"""``groupkit run``: settings from --set, the MODULE:CLASS target, and errors as exit status 2."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from groupkit.cli import main
from groupkit.cli.run import load_target, parse_sets
from groupkit.errors import ConfigError


def test_set_values_are_python_literals_else_strings() -> None:
    assert parse_sets(["a=1", "b=[1, 'x']", "c=orders", "d=None", "e= x=y"]) == {
        "a": 1, "b": [1, "x"], "c": "orders", "d": None, "e": " x=y"}
    with pytest.raises(ConfigError, match="NAME=VALUE"):
        parse_sets(["novalue"])


def test_the_target_is_imported_from_the_current_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "poolapp_here.py").write_text(
        "from groupkit import GroupConsumer\n"
        "class W(GroupConsumer):\n"
        "    def process(self, record): pass\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.path", list(__import__("sys").path))
    assert load_target("poolapp_here:W").__name__ == "W"
    with pytest.raises(ConfigError, match="MODULE:CLASS"):
        load_target("poolapp_here")
    with pytest.raises(ConfigError, match="cannot load poolapp_here:Missing"):
        load_target("poolapp_here:Missing")


def test_bad_settings_exit_2_with_a_message(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR):
        status = main(["run", "groupkit.demo_pool:PoolDemoWorker", "--processes", "2",
                       "--set", "grace_timeout_s=3"])
    assert status == 2
    assert "did you mean 'graceful_timeout_s'?" in caplog.text
