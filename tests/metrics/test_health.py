"""The /healthz rules, sans-IO: events and times go in, a verdict comes out."""

from __future__ import annotations

from groupkit.hooks import MemberStateChanged, Polled
from groupkit.metrics import HealthCheck

POLL = Polled("g", 0, ())


def state(old: str, new: str, group: str = "g") -> MemberStateChanged:
    return MemberStateChanged(group, old, new)


def check(t0: float = 100.0) -> HealthCheck:
    return HealthCheck(max_poll_interval_s=10.0, rebalance_timeout_s=30.0, clock=lambda: t0)


def test_a_stable_member_that_polls_is_healthy() -> None:
    h = check()
    h.observe(state("UNJOINED", "COORDINATOR_UNKNOWN"), 100.0)
    h.observe(state("COORDINATOR_UNKNOWN", "PREPARING_REBALANCE"), 100.1)
    h.observe(state("PREPARING_REBALANCE", "STABLE"), 103.0)
    h.observe(POLL, 105.0)
    verdict = h.status(114.9)
    assert verdict.healthy and verdict.http_status == 200
    body = verdict.to_json()
    assert body["status"] == "ok" and "reason" not in body
    assert body["groups"] == {"g": {"state": "STABLE", "seconds_in_state": 11.9}}
    assert body["seconds_since_poll"] == 9.9


def test_no_poll_within_the_poll_interval_is_unhealthy() -> None:
    h = check()
    h.observe(state("PREPARING_REBALANCE", "STABLE"), 101.0)
    h.observe(POLL, 102.0)
    verdict = h.status(112.5)
    assert not verdict.healthy and verdict.http_status == 503
    assert "not polled again for 10.5 s" in verdict.reason
    assert "max_poll_interval_ms (10000 ms)" in verdict.reason
    h.observe(POLL, 112.6)
    assert h.status(112.7).healthy


def test_a_consumer_that_never_polls_fails_after_the_interval_from_its_start() -> None:
    h = check(t0=50.0)
    assert h.status(59.0).healthy
    verdict = h.status(60.5)
    assert not verdict.healthy and "has not polled for 10.5 s" in verdict.reason


def test_before_the_first_poll_time_runs_from_the_first_event() -> None:
    h = check(t0=50.0)  # built long before the consumer starts
    h.observe(state("UNJOINED", "COORDINATOR_UNKNOWN"), 500.0)
    assert h.status(509.0).healthy
    assert not h.status(510.5).healthy


def test_rebalancing_is_healthy_until_the_rebalance_timeout() -> None:
    h = check()
    h.observe(state("STABLE", "PREPARING_REBALANCE"), 100.0)
    h.observe(state("PREPARING_REBALANCE", "COMPLETING_REBALANCE"), 120.0)
    h.observe(state("COMPLETING_REBALANCE", "PREPARING_REBALANCE"), 125.0)
    for t in (101.0, 110.0, 125.0, 129.0):
        h.observe(POLL, t)
    assert h.status(129.9).healthy
    # The clock runs from the first rebalancing state, not from the latest one.
    h.observe(POLL, 130.2)
    verdict = h.status(130.5)
    assert not verdict.healthy
    assert "rebalancing for 30.5 s, longer than its rebalance timeout (30 s)" in verdict.reason
    h.observe(state("PREPARING_REBALANCE", "STABLE"), 131.0)
    assert h.status(131.0).healthy
    # A new rebalance starts a new clock.
    h.observe(state("STABLE", "REVOKING"), 140.0)
    h.observe(POLL, 140.0)
    assert h.status(149.0).healthy


def test_a_member_out_of_its_group_is_unhealthy_whatever_the_polls() -> None:
    for gone, words in [("UNJOINED", "is not a member of its group"),
                        ("LEAVING", "is leaving"), ("CLOSED", "has closed"),
                        ("FATAL", "fatal error")]:
        h = check()
        h.observe(state("STABLE", gone), 100.0)
        h.observe(POLL, 100.0)
        verdict = h.status(100.5)
        assert not verdict.healthy and words in verdict.reason, gone
        assert verdict.to_json()["groups"]["g"]["state"] == gone


def test_a_consumer_protocol_member_is_judged_by_its_own_states() -> None:
    h = check()
    h.observe(state("UNSUBSCRIBED", "JOINING"), 100.0)
    h.observe(state("JOINING", "RECONCILING"), 100.5)
    h.observe(state("RECONCILING", "ACKNOWLEDGING"), 101.0)
    h.observe(POLL, 101.0)
    assert h.status(101.5).healthy  # rebalancing, within the rebalance timeout
    h.observe(state("ACKNOWLEDGING", "STABLE"), 101.5)
    assert h.status(102.0).healthy
    h.observe(state("STABLE", "STALE"), 103.0)
    h.observe(POLL, 103.0)
    verdict = h.status(103.5)
    assert not verdict.healthy and "poll interval expired" in verdict.reason


def test_every_reason_is_given_and_each_group_is_judged() -> None:
    h = check()
    h.observe(state("STABLE", "STABLE", "a"), 100.0)
    h.observe(state("STABLE", "UNJOINED", "b"), 100.0)
    verdict = h.status(111.0)
    assert not verdict.healthy
    assert "has not polled" in verdict.reason and "group b" in verdict.reason
    assert "group a" not in verdict.reason


def test_the_hook_takes_its_time_from_the_clock() -> None:
    now = [0.0]
    h = HealthCheck(5.0, 5.0, clock=lambda: now[0])
    now[0] = 4.0
    h(POLL)
    h(state("UNJOINED", "COORDINATOR_UNKNOWN"))
    now[0] = 8.0
    assert h.check().healthy
    now[0] = 9.5
    assert not h.check().healthy
