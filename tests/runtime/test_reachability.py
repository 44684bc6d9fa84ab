"""Reachability's log lines: an outage is one WARNING, a closed connection one INFO per broker
per ``repeat_s`` (the rest DEBUG), whatever the number of sockets or rounds."""

from __future__ import annotations

import logging

import pytest

from groupkit.runtime.reachability import Reachability


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def lines(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level]


def test_closed_connections_are_one_info_line_per_broker_per_period(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="groupkit.runtime.reachability")
    clock = Clock()
    reach = Reachability(repeat_s=30.0, clock=clock)
    for _ in range(35):  # a broker that closes connection after connection, 100 ms apart
        reach.closed("b1:9092", "b1:9092 closed the connection")
        reach.connected("b1:9092")
        clock.now += 0.1
    reach.closed("b2:9092", "b2:9092 closed the connection")
    assert lines(caplog, logging.INFO) == [
        "connection to b1:9092 closed: b1:9092 closed the connection",
        "connection to b2:9092 closed: b2:9092 closed the connection"]
    assert len(lines(caplog, logging.DEBUG)) == 34
    assert lines(caplog, logging.WARNING) == []
    clock.now += 30
    reach.closed("b1:9092", "again")
    assert lines(caplog, logging.INFO)[-1] == "connection to b1:9092 closed: again"


def test_an_outage_is_one_warning_then_one_info_when_it_ends(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="groupkit.runtime.reachability")
    clock = Clock()
    reach = Reachability(repeat_s=30.0, clock=clock)
    reach.closed("b1:9092", "reset")
    for _ in range(10):
        reach.failed("b1:9092", "connection refused")
        clock.now += 1
    reach.connected("b1:9092")
    assert [m.split(":")[0] for m in lines(caplog, logging.WARNING)] == ["broker b1"]
    assert "reachable again after 10 failed attempt(s)" in lines(caplog, logging.INFO)[-1]
