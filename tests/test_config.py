"""Settings are checked up front: a bad value names the setting and says what is wanted."""

import pytest

from groupkit.config import ConsumerConfig, ProducerConfig, parse_bootstrap
from groupkit.errors import ConfigError


def test_java_defaults():
    c = ConsumerConfig.from_kwargs({"bootstrap_servers": "localhost:9092", "group_id": "g"})
    assert c.session_timeout_ms == 45000
    assert c.heartbeat_interval_ms == 3000
    assert c.max_poll_interval_ms == 300000
    assert c.effective_rebalance_timeout_ms == 300000
    assert c.auto_offset_reset == "latest"
    assert c.enable_auto_commit is True
    # Not Java's order (range first): groupkit groups rebalance incrementally by default.
    assert c.assignors == ("cooperative-sticky", "range")
    assert c.bootstrap_servers == (("localhost", 9092),)


def test_bootstrap_forms():
    assert parse_bootstrap("a:1, b:2") == (("a", 1), ("b", 2))
    assert parse_bootstrap(["[::1]:9092", ("h", 5)]) == (("::1", 9092), ("h", 5))
    for bad in ["", "nohost", "h:x", "h:70000", []]:
        with pytest.raises(ConfigError, match="bootstrap_servers"):
            parse_bootstrap(bad)


@pytest.mark.parametrize(("name", "value"), [
    ("session_timeout_ms", -1),
    ("session_timeout_ms", "45000"),
    ("auto_offset_reset", "oldest"),
    ("isolation_level", "committed"),
    ("enable_auto_commit", "yes"),
    ("max_poll_records", 0),
    ("security_protocol", "TLS"),
    ("rebalance_timeout_ms", 0),
])
def test_bad_values_name_the_setting(name, value):
    with pytest.raises(ConfigError, match=name):
        ConsumerConfig.from_kwargs({"bootstrap_servers": "h:1", "group_id": "g", name: value})


def test_unknown_setting_suggests_the_right_name():
    with pytest.raises(ConfigError, match="did you mean 'session_timeout_ms'"):
        ConsumerConfig.from_kwargs({"bootstrap_servers": "h:1", "session_timeout": 10})


def test_cross_field_rules():
    with pytest.raises(ConfigError, match="heartbeat_interval_ms"):
        ConsumerConfig(bootstrap_servers="h:1", session_timeout_ms=3000,
                       heartbeat_interval_ms=3000)
    with pytest.raises(ConfigError, match="sasl_plain_username"):
        ConsumerConfig(bootstrap_servers="h:1", security_protocol="SASL_PLAINTEXT")
    with pytest.raises(ConfigError, match="group_id"):
        ConsumerConfig(bootstrap_servers="h:1", group_instance_id="static-1")


def test_static_members_stay_on_close_unless_asked():
    assert ConsumerConfig(bootstrap_servers="h:1", group_id="g").sends_leave_on_close
    static = ConsumerConfig(bootstrap_servers="h:1", group_id="g", group_instance_id="i")
    assert not static.sends_leave_on_close
    asked = ConsumerConfig(bootstrap_servers="h:1", group_id="g", group_instance_id="i",
                           leave_group_on_close=True)
    assert asked.sends_leave_on_close


def test_secrets_stay_out_of_repr():
    c = ProducerConfig(bootstrap_servers="h:1", security_protocol="SASL_PLAINTEXT",
                       sasl_plain_username="u", sasl_plain_password="hunter2", acks="all")
    assert "hunter2" not in repr(c)
    assert c.acks == -1


@pytest.mark.parametrize(("assignors", "message"), [
    (["rnage"], "unknown partition assignor 'rnage'; did you mean 'range'"),
    (["range", "range"], "must be unique"),
    ([42], "names or Assignor instances"),
])
def test_assignors_are_checked_when_the_config_is_built(assignors, message):
    with pytest.raises(ConfigError, match=message):
        ConsumerConfig(bootstrap_servers="h:1", group_id="g", assignors=assignors)


def _fail_if_scanned():
    raise AssertionError("the plugin entry points were scanned for a built-in name")


def test_built_in_assignor_names_are_checked_without_scanning_the_plugins(monkeypatch):
    # The scan loads importlib.metadata (megabytes of an idle member's memory): a config with
    # built-in names only, the default among them, must not need it.
    monkeypatch.setattr("assignors.registry._plugins", _fail_if_scanned)
    ConsumerConfig(bootstrap_servers="h:1", group_id="g")
    ConsumerConfig(bootstrap_servers="h:1", group_id="g",
                   assignors=["range", "roundrobin", "sticky"])


def test_a_plugin_assignor_name_is_found_by_the_scan_and_accepted(monkeypatch):
    from assignors import RangeAssignor

    class EntryPoint:
        name = "ranged"

        def load(self):
            return RangeAssignor

    scans = []
    monkeypatch.setattr("assignors.registry._plugins",
                        lambda: scans.append(1) or [EntryPoint()])
    config = ConsumerConfig(bootstrap_servers="h:1", group_id="g", assignors=["ranged"])
    assert config.assignors == ("ranged",)
    assert scans
    with pytest.raises(ConfigError, match="unknown partition assignor 'rangd'; did you mean"
                                          " 'ranged'"):
        ConsumerConfig(bootstrap_servers="h:1", group_id="g", assignors=["rangd"])


def test_the_group_protocol_is_classic_unless_asked_and_case_does_not_matter():
    base = {"bootstrap_servers": "h:1", "group_id": "g"}
    assert ConsumerConfig.from_kwargs(base).group_protocol == "classic"
    assert ConsumerConfig.from_kwargs({**base, "group_protocol": "CONSUMER"}).group_protocol \
        == "consumer"
    with pytest.raises(ConfigError, match="group_protocol must be one of"):
        ConsumerConfig.from_kwargs({**base, "group_protocol": "share"})


@pytest.mark.parametrize("given", [
    {"assignors": ["range"]}, {"session_timeout_ms": 45000}, {"heartbeat_interval_ms": 3000},
    {"assignors": ["range"], "session_timeout_ms": 10000}])
def test_settings_the_broker_owns_are_refused_with_the_consumer_protocol(given):
    # As Java's ConsumerConfig: set at all (even to the default value) is refused.
    with pytest.raises(ConfigError) as refused:
        ConsumerConfig.from_kwargs({"bootstrap_servers": "h:1", "group_id": "g",
                                    "group_protocol": "consumer", **given})
    text = str(refused.value)
    assert all(name in text for name in given) and "group_protocol='consumer'" in text
    assert "group_remote_assignor" in text  # what to use instead
    # Without a group id they do not matter (Java checks only with group.id set).
    ConsumerConfig.from_kwargs({"bootstrap_servers": "h:1", "group_protocol": "consumer",
                                **given})


def test_a_remote_assignor_is_refused_with_the_classic_protocol():
    with pytest.raises(ConfigError, match="group_remote_assignor cannot be set when"
                                          " group_protocol='classic'"):
        ConsumerConfig.from_kwargs({"bootstrap_servers": "h:1", "group_id": "g",
                                    "group_remote_assignor": "uniform"})
    c = ConsumerConfig.from_kwargs({"bootstrap_servers": "h:1", "group_id": "g",
                                    "group_protocol": "consumer",
                                    "group_remote_assignor": "uniform"})
    assert c.group_remote_assignor == "uniform"


# --- idempotence (Java 3.x/4.x ProducerConfig.postProcessAndValidateIdempotenceConfigs) --------


def test_idempotence_is_on_by_default() -> None:
    assert ProducerConfig(bootstrap_servers="h:1").idempotent


def test_unset_idempotence_is_silently_off_with_acks_or_retries_that_rule_it_out() -> None:
    assert not ProducerConfig(bootstrap_servers="h:1", acks=1).idempotent
    assert not ProducerConfig(bootstrap_servers="h:1", acks=0).idempotent
    assert not ProducerConfig(bootstrap_servers="h:1", retries=0).idempotent
    assert not ProducerConfig(bootstrap_servers="h:1", enable_idempotence=False).idempotent


@pytest.mark.parametrize("settings,named", [
    ({"enable_idempotence": True, "acks": 1}, "acks"),
    ({"enable_idempotence": True, "retries": 0}, "retries"),
    ({"max_in_flight_requests_per_connection": 6}, "max_in_flight"),
    ({"enable_idempotence": True, "max_in_flight_requests_per_connection": 6}, "max_in_flight"),
    ({"transactional_id": "t", "enable_idempotence": False}, "transactional_id"),
    ({"transactional_id": "t", "acks": 1}, "transactional_id"),
    ({"enable_idempotence": "yes"}, "enable_idempotence"),
])
def test_contradictions_with_idempotence_are_config_errors(settings: dict, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        ProducerConfig(bootstrap_servers="h:1", **settings)


def test_more_in_flight_is_fine_without_idempotence() -> None:
    config = ProducerConfig(bootstrap_servers="h:1", enable_idempotence=False,
                            max_in_flight_requests_per_connection=10)
    assert not config.idempotent
