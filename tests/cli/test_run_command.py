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


def test_connection_settings_come_from_the_flag_set_environment_and_command_config(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "capture_settings_here.py").write_text(
        "from groupkit import GroupConsumer\n"
        "SEEN = []\n"
        "class W(GroupConsumer):\n"
        "    def __init__(self, **settings):\n"
        "        SEEN.append(settings)\n"
        "    def run(self):\n"
        "        return None\n"
        "    def process(self, record): pass\n")
    config = tmp_path / "client.properties"
    config.write_text("bootstrap.servers=file:1\nsecurity.protocol=sasl_ssl\n"
                      "sasl.mechanism=PLAIN\nsasl.username=u\nsasl.password=p\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.path", list(__import__("sys").path))
    monkeypatch.delenv("GROUPKIT_BOOTSTRAP_SERVERS", raising=False)
    argv = ["run", "capture_settings_here:W", "--command-config", str(config)]
    assert main(argv) == 0
    monkeypatch.setenv("GROUPKIT_BOOTSTRAP_SERVERS", "env:1")
    assert main(argv) == 0
    assert main([*argv, "--set", "bootstrap_servers='set:1'"]) == 0
    assert main([*argv, "--set", "bootstrap_servers='set:1'", "--bootstrap-server", "flag:1"]) == 0
    from capture_settings_here import SEEN

    assert [s["bootstrap_servers"] for s in SEEN] == ["file:1", "env:1", "set:1", "flag:1"]
    assert SEEN[0] == {"bootstrap_servers": "file:1", "security_protocol": "SASL_SSL",
                       "sasl_mechanism": "PLAIN", "sasl_plain_username": "u",
                       "sasl_plain_password": "p"}
