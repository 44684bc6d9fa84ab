"""GroupConsumer's own logic over a scripted stand-in Consumer: config checks, when offsets are
committed, the error policies, and signals. The same behaviour against a real broker is in
tests/test_group_consumer.py."""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

import groupkit.group_consumer as module
from assignors import TopicPartition
from groupkit.errors import ConfigError, IllegalStateError, WakeupError
from groupkit.group_consumer import GroupConsumer

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)
BOTH = ("assigned", {TP0, TP1})
BOOT = {"bootstrap_servers": "127.0.0.1:9"}


def rec(tp: TopicPartition, offset: int) -> SimpleNamespace:
    return SimpleNamespace(topic=tp.topic, partition=tp.partition, offset=offset, key=None,
                           value=b"x", headers=[], timestamp=0)


class ScriptedConsumer:
    """Plays a list of steps, one per poll: records, a rebalance callback, or a callable.

    Like the real Consumer, close() revokes every partition still held, and wakeup() makes the
    next poll raise WakeupError instead of playing a step.
    """

    script: list[Any] = []
    last: ScriptedConsumer | None = None

    def __init__(self, **settings: Any) -> None:
        self.settings = settings
        self.steps = list(type(self).script)
        self.log: list[tuple[str, Any]] = []
        self.closed = False
        self.held: set[TopicPartition] = set()
        self.timeouts: list[float] = []
        self.woken = False
        self.answered = True
        # On the base class, so that a test's subclass of it is found by on_revoked/commits().
        ScriptedConsumer.last = self

    def brokers_answered(self) -> bool:
        return self.answered

    def wakeup(self) -> None:
        self.woken = True

    def subscribe(self, topics: list[str], listener: Any, *, pattern: str | None = None
                  ) -> None:
        self.topics = topics
        self.listener = listener
        self.pattern = pattern

    def poll(self, timeout: float) -> list[Any]:
        self.timeouts.append(timeout)
        if self.woken:
            self.woken = False
            raise WakeupError("woken")
        if not self.steps:
            raise AssertionError("the script ran out before the worker stopped")
        step = self.steps.pop(0)
        if isinstance(step, tuple):
            kind, partitions = step
            self.held = self.held | partitions if kind == "assigned" else self.held - partitions
            getattr(self.listener, f"on_partitions_{kind}")(set(partitions))
            return []
        if callable(step):
            step()
            return []
        return step

    def commit(self, offsets: dict[TopicPartition, int], timeout: float | None = None) -> None:
        self.log.append(("commit", dict(offsets)))

    def close(self, timeout: float = 30.0) -> None:
        self.listener.on_partitions_revoked(self.held)
        self.held = set()
        self.closed = True


@pytest.fixture
def play(monkeypatch: pytest.MonkeyPatch) -> Callable[..., ScriptedConsumer]:
    def setup(*steps: Any) -> ScriptedConsumer:
        monkeypatch.setattr(ScriptedConsumer, "script", list(steps))
        return ScriptedConsumer

    # Each test starts with no consumer of an earlier test's left in ``last``.
    monkeypatch.setattr(ScriptedConsumer, "last", None)
    monkeypatch.setattr(module, "Consumer", ScriptedConsumer)
    return setup


class Recorder(GroupConsumer):
    topics = ["t"]
    group_id = "g"
    auto_commit_interval_ms = 3_600_000

    def __init__(self, fail_at: int | None = None, **settings: Any) -> None:
        super().__init__(**{**BOOT, **settings})
        self.fail_at = fail_at
        self.seen: list[tuple[int, int]] = []

    def process(self, record: Any) -> None:
        if record.offset == self.fail_at:
            raise ValueError(f"bad record {record.offset}")
        self.seen.append((record.partition, record.offset))

    def on_revoked(self, partitions: set[TopicPartition]) -> None:
        ScriptedConsumer.last.log.append(("on_revoked", partitions))  # type: ignore[union-attr]

    def on_lost(self, partitions: set[TopicPartition]) -> None:
        ScriptedConsumer.last.log.append(("on_lost", partitions))  # type: ignore[union-attr]


def commits() -> list[dict[TopicPartition, int]]:
    assert ScriptedConsumer.last is not None
    return [what for kind, what in ScriptedConsumer.last.log if kind == "commit"]


# --- configuration -----------------------------------------------------------------------------


def test_a_subclass_without_process_is_refused() -> None:
    class Nothing(GroupConsumer):
        topics = ["t"]
        group_id = "g"

    with pytest.raises(ConfigError, match="exactly one of process"):
        Nothing(**BOOT)


def test_a_subclass_with_both_process_and_process_batch_is_refused() -> None:
    class Both(Recorder):
        def process_batch(self, records: list[Any]) -> None:
            pass

    with pytest.raises(ConfigError, match="exactly one of process"):
        Both()


@pytest.mark.parametrize("topics", [[], "orders", None, ["ok", ""]])
def test_topics_must_be_a_non_empty_list_of_names(topics: Any) -> None:
    with pytest.raises(ConfigError, match="topics"):
        Recorder(topics=topics)


def test_group_id_is_required() -> None:
    with pytest.raises(ConfigError, match="group_id"):
        Recorder(group_id=None)


def test_unknown_setting_names_the_closest_one() -> None:
    with pytest.raises(ConfigError, match="did you mean 'session_timeout_ms'"):
        Recorder(session_timeout=6000)


def test_enable_auto_commit_is_refused_with_the_reason() -> None:
    with pytest.raises(ConfigError, match="commits by itself"):
        Recorder(enable_auto_commit=True)


def test_on_error_must_be_a_known_policy() -> None:
    with pytest.raises(ConfigError, match="on_error"):
        Recorder(on_error="ignore")


def test_bad_consumer_setting_fails_at_construction() -> None:
    with pytest.raises(ConfigError, match="heartbeat_interval_ms"):
        Recorder(session_timeout_ms=1000, heartbeat_interval_ms=3000)


def test_keywords_override_class_attributes(play: Callable[..., Any]) -> None:
    class Tuned(Recorder):
        session_timeout_ms = 7000
        heartbeat_interval_ms = 700

    worker = Tuned(session_timeout_ms=9000, topics=["other"])
    assert worker.config.session_timeout_ms == 9000
    assert worker.config.heartbeat_interval_ms == 700
    assert worker.config.enable_auto_commit is False
    assert worker.topic_names == ("other",)
    play(worker.stop)
    worker.run()
    assert ScriptedConsumer.last is not None
    assert ScriptedConsumer.last.topics == ["other"]
    assert ScriptedConsumer.last.settings["session_timeout_ms"] == 9000
    assert ScriptedConsumer.last.settings["enable_auto_commit"] is False


def test_a_pattern_class_attribute_is_what_the_worker_subscribes_to(play) -> None:
    class Orders(Recorder):
        topics = ()
        pattern = "orders-.*"

    worker = Orders()
    assert worker.topic_names == () and worker.topic_pattern == "orders-.*"
    play(worker.stop)
    worker.run()
    assert ScriptedConsumer.last is not None
    assert (ScriptedConsumer.last.topics, ScriptedConsumer.last.pattern) == ([], "orders-.*")


def test_a_worker_with_topics_subscribes_without_a_pattern(play) -> None:
    worker = Recorder()
    play(worker.stop)
    worker.run()
    assert ScriptedConsumer.last is not None
    assert (ScriptedConsumer.last.topics, ScriptedConsumer.last.pattern) == (["t"], None)


@pytest.mark.parametrize(("topics", "pattern", "says"), [
    (["t"], "t-.*", "not both"), ((), None, "neither is set"), ((), "", "non-empty"),
    ((), 5, "non-empty")])
def test_topics_and_pattern_are_one_or_the_other(topics: Any, pattern: Any, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        Recorder(topics=topics, pattern=pattern)


def test_a_classic_pattern_must_be_a_python_regular_expression() -> None:
    # The classic protocol matches it here; the consumer protocol's broker judges its own
    # syntax (RE2/J: \pL is a letter there, an error in Python's re).
    with pytest.raises(ConfigError, match="not a regular expression"):
        Recorder(topics=(), pattern="orders-(")
    assert Recorder(topics=(), pattern=r"\pL+", group_protocol="consumer").topic_pattern == r"\pL+"


# --- commits and error policies ----------------------------------------------------------------


def test_stop_policy_commits_only_what_process_returned_for_and_reraises(play) -> None:
    worker = Recorder(fail_at=2)
    play(BOTH, [rec(TP0, 0), rec(TP0, 1), rec(TP0, 2), rec(TP0, 3)])
    with pytest.raises(ValueError, match="bad record 2"):
        worker.run()
    assert worker.seen == [(0, 0), (0, 1)]
    assert commits() == [{TP0: 2}]
    assert ScriptedConsumer.last is not None and ScriptedConsumer.last.closed
    assert worker.summary.records_processed == 2


def test_skip_policy_logs_the_coordinates_and_commits_past_the_record(play, caplog) -> None:
    worker = Recorder(fail_at=2, on_error="skip")
    play(BOTH, [rec(TP0, 0), rec(TP0, 1), rec(TP0, 2), rec(TP0, 3)], worker.stop)
    with caplog.at_level(logging.ERROR, logger="groupkit.group_consumer"):
        summary = worker.run()
    assert worker.seen == [(0, 0), (0, 1), (0, 3)]
    assert commits() == [{TP0: 4}]
    assert (summary.records_processed, summary.records_skipped) == (3, 1)
    assert "t[0]@2" in caplog.text and "bad record 2" in caplog.text


def test_batch_failure_with_stop_commits_nothing_of_that_batch(play) -> None:
    class Batches(GroupConsumer):
        topics = ["t"]
        group_id = "g"
        auto_commit_interval_ms = 0
        calls = 0

        def process_batch(self, records: list[Any]) -> None:
            type(self).calls += 1
            if type(self).calls == 2:
                raise RuntimeError("batch failed")

    play(BOTH, [rec(TP0, 0), rec(TP1, 0)], [rec(TP0, 1), rec(TP1, 1)])
    with pytest.raises(RuntimeError, match="batch failed"):
        Batches(**BOOT).run()
    assert commits() and all(c == {TP0: 1, TP1: 1} for c in commits())


def test_batch_failure_with_skip_logs_each_partition_range_and_commits_past_it(
        play, caplog) -> None:
    class Batches(GroupConsumer):
        topics = ["t"]
        group_id = "g"
        on_error = "skip"

        def process_batch(self, records: list[Any]) -> None:
            raise RuntimeError("batch failed")

    worker = Batches(**BOOT)
    play(BOTH, [rec(TP0, 3), rec(TP0, 4), rec(TP0, 5), rec(TP1, 9)], worker.stop)
    with caplog.at_level(logging.ERROR, logger="groupkit.group_consumer"):
        summary = worker.run()
    assert "t[0]@3-5, t[1]@9" in caplog.text
    assert (summary.records_processed, summary.records_skipped) == (0, 4)
    assert commits() == [{TP0: 6, TP1: 10}]


def test_due_commits_happen_inside_a_batch_and_send_every_position_as_java_does(play) -> None:
    # Java's auto-commit sends every consumed position each interval, moved or not, so a
    # late-arriving older commit is overwritten at the next interval.
    worker = Recorder(auto_commit_interval_ms=0)
    play(BOTH, [rec(TP0, 0), rec(TP1, 5)], [rec(TP1, 6)], [], worker.stop)
    worker.run()
    sent = commits()
    assert sent[0] == {TP0: 1}
    assert {TP0: 1, TP1: 6} in sent and sent[-1] == {TP0: 1, TP1: 7}
    assert all(c[TP0] == 1 for c in sent)
    assert worker.summary.commits == len(sent)


def test_revocation_calls_on_revoked_then_commits_the_revoked_partitions(play) -> None:
    worker = Recorder()
    play(("assigned", {TP0, TP1}), [rec(TP0, 0), rec(TP1, 0)], ("revoked", {TP0}), worker.stop)
    summary = worker.run()
    assert ScriptedConsumer.last is not None
    assert ScriptedConsumer.last.log == [
        ("on_revoked", {TP0}), ("commit", {TP0: 1}), ("on_revoked", {TP1}), ("commit", {TP1: 1})]
    assert summary.rebalances == 1


def test_lost_partitions_are_not_committed(play) -> None:
    worker = Recorder()
    play(BOTH, [rec(TP0, 0), rec(TP1, 0)], ("lost", {TP0}), worker.stop)
    worker.run()
    assert ScriptedConsumer.last is not None
    assert ScriptedConsumer.last.log == [
        ("on_lost", {TP0}), ("on_revoked", {TP1}), ("commit", {TP1: 1})]


def test_run_twice_is_refused(play) -> None:
    worker = Recorder()
    play(worker.stop)
    worker.run()
    with pytest.raises(IllegalStateError, match="once"):
        worker.run()


# --- signals -------------------------------------------------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_run_and_the_old_handler_comes_back(play, signum: int) -> None:
    before = signal.getsignal(signum)
    worker = Recorder()
    play(BOTH, [rec(TP0, 0)], lambda: os.kill(os.getpid(), signum), [], [], [])
    summary = worker.run()
    assert summary.records_processed == 1
    assert commits() == [{TP0: 1}]
    assert signal.getsignal(signum) is before


@pytest.mark.parametrize("signum, raised", [(signal.SIGINT, KeyboardInterrupt),
                                            (signal.SIGTERM, SystemExit)])
def test_a_second_signal_during_the_grace_stops_at_once(play, signum: int,
                                                        raised: type[BaseException]) -> None:
    before = signal.getsignal(signum)
    worker = Recorder()
    twice = [lambda: os.kill(os.getpid(), signum), lambda: os.kill(os.getpid(), signum)]

    class Stuck(ScriptedConsumer):
        def close(self, timeout: float = 30.0) -> None:
            # A close that would hang (e.g. on a dead coordinator) until the second signal.
            self.log.append(("close", timeout))
            twice.pop()()
            raise AssertionError("the second signal did not stop the close")

    play(BOTH, [rec(TP0, 0)], twice.pop(), [])
    module.Consumer = Stuck  # type: ignore[misc]  # monkeypatch restores it
    with pytest.raises(raised):
        worker.run()
    assert Stuck.last is not None and Stuck.last.log[-1][0] == "close"
    assert 0 < Stuck.last.log[-1][1] <= worker.stop_grace_ms / 1000
    assert signal.getsignal(signum) is before


def test_close_gets_what_is_left_of_the_stop_grace(play) -> None:
    worker = Recorder(stop_grace_ms=2500)
    seen: list[float] = []

    class Timed(ScriptedConsumer):
        def close(self, timeout: float = 30.0) -> None:
            seen.append(timeout)
            super().close()

    play(BOTH, worker.stop, [])
    module.Consumer = Timed  # type: ignore[misc]
    worker.run()
    assert len(seen) == 1 and 2.0 < seen[0] <= 2.5


@pytest.mark.parametrize("grace", [-1, 1.5, "10s", True])
def test_stop_grace_must_be_whole_milliseconds(grace: Any) -> None:
    with pytest.raises(ConfigError, match="stop_grace_ms"):
        Recorder(stop_grace_ms=grace)


def test_a_misspelled_setting_as_class_attribute_is_refused_at_construction() -> None:
    class Typo(Recorder):
        sesion_timeout_ms = 10_000

    with pytest.raises(ConfigError, match=r"Typo.sesion_timeout_ms .*did you mean"
                                          r" 'session_timeout_ms'"):
        Typo()


def test_a_class_attribute_unlike_any_setting_is_the_subclass_own() -> None:
    class Own(Recorder):
        output_path = "/tmp/out"
        retries_seen = 0

    assert Own().output_path == "/tmp/out"


def test_an_idle_interval_sends_the_positions_again(play) -> None:
    worker = Recorder(auto_commit_interval_ms=0)
    play(BOTH, [rec(TP0, 0)], [], [], worker.stop)
    worker.run()
    assert commits().count({TP0: 1}) >= 2


def test_an_unknown_assignor_is_refused_at_construction() -> None:
    with pytest.raises(ConfigError, match="did you mean 'cooperative-sticky'"):
        Recorder(assignors=["cooperative-stiky"])


# --- how long a poll waits -----------------------------------------------------------------------


def test_stop_wakes_the_consumers_poll_and_the_loop_polls_no_more(play) -> None:
    worker = Recorder()
    play(BOTH, [rec(TP0, 0)], worker.stop, [rec(TP0, 1)])
    worker.run()
    assert ScriptedConsumer.last is not None
    assert ScriptedConsumer.last.woken, "stop() did not wake the consumer's poll"
    assert ScriptedConsumer.last.steps == [[rec(TP0, 1)]], "the loop polled on after stop()"
    assert worker.summary.records_processed == 1


def test_a_poll_ended_by_wakeup_is_not_an_error_of_the_worker(play) -> None:
    worker = Recorder()
    consumer = play(BOTH, [rec(TP0, 0)], [])

    class WokenEarly(consumer):  # type: ignore[misc, valid-type]
        def poll(self, timeout: float) -> list[Any]:
            if not self.steps:
                worker.stop()  # as from another thread while this poll waits: it wakes it
            return super().poll(timeout)

    module.Consumer = WokenEarly  # type: ignore[misc]  # monkeypatch restores it
    summary = worker.run()
    assert summary.records_processed == 1
    assert commits() == [{TP0: 1}]


def test_an_idle_poll_waits_up_to_five_seconds_when_no_commit_is_due(play) -> None:
    worker = Recorder()  # commits every hour
    play(BOTH, [], worker.stop)
    worker.run()
    assert ScriptedConsumer.last is not None
    waits = ScriptedConsumer.last.timeouts
    assert all(4.9 < w <= 5.0 for w in waits[:3]), waits


def test_a_poll_waits_no_longer_than_until_the_next_commit(play) -> None:
    worker = Recorder(auto_commit_interval_ms=1000)
    play(BOTH, [rec(TP0, 0)], worker.stop)
    worker.run()
    assert ScriptedConsumer.last is not None
    assert all(0 <= w <= 1.0 for w in ScriptedConsumer.last.timeouts[:3])


def test_a_poll_waits_at_most_half_the_max_poll_interval(play) -> None:
    # /healthz and the pool call a member unhealthy when it has not polled for the interval.
    worker = Recorder(max_poll_interval_ms=3000)
    play(BOTH, worker.stop)
    worker.run()
    assert ScriptedConsumer.last is not None
    assert all(1.4 < w <= 1.5 for w in ScriptedConsumer.last.timeouts[:2])


def test_while_no_broker_answered_a_poll_ends_by_the_give_up_time(play) -> None:
    worker = Recorder(default_api_timeout_ms=2000, request_timeout_ms=1000)

    class Unanswered(ScriptedConsumer):
        def __init__(self, **settings: Any) -> None:
            super().__init__(**settings)
            self.answered = False

    play(BOTH, worker.stop)
    module.Consumer = Unanswered  # type: ignore[misc]  # monkeypatch restores it
    worker.run()
    assert ScriptedConsumer.last is not None
    assert all(0 <= w <= 2.0 for w in ScriptedConsumer.last.timeouts[:2])
