"""``api_version`` reaches every client the same way: the Python settings, the CLI's
--api-version and --command-config (``api.version``), and the Spark source's
``kafka.api.version``; an unknown release is a ConfigError listing the known ones, at once."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from groupkit.cli.common import admin_settings
from groupkit.cli.properties import client_settings
from groupkit.config import AdminConfig, ConsumerConfig, ProducerConfig
from groupkit.errors import ConfigError

KNOWN = r"2\.1, 2\.2, 2\.3, 2\.4"


@pytest.mark.parametrize("config", [ConsumerConfig, ProducerConfig, AdminConfig])
def test_every_client_takes_auto_or_a_release(config: type) -> None:
    assert config.from_kwargs({"bootstrap_servers": "h:1"}).api_version == "auto"
    assert config.from_kwargs({"bootstrap_servers": "h:1", "api_version": "2.3"}
                              ).api_version == "2.3"
    with pytest.raises(ConfigError, match=rf"api_version must be 'auto'.*{KNOWN}.*not '2\.99'"):
        config.from_kwargs({"bootstrap_servers": "h:1", "api_version": "2.99"})


def test_the_clients_refuse_an_unknown_release_when_built() -> None:
    from groupkit import Admin, Consumer, Producer

    for client in (Consumer, Producer, Admin):
        with pytest.raises(ConfigError, match="api_version"):
            client(bootstrap_servers="127.0.0.1:1", api_version="kafka-2")


def test_the_command_line_takes_the_pin_from_a_flag_or_the_properties(tmp_path: Path) -> None:
    assert client_settings({"api.version": "2.3"}, "f") == {"api_version": "2.3"}
    config = tmp_path / "client.properties"
    config.write_text("bootstrap.servers=h:1\napi.version=2.8\n")
    args = argparse.Namespace(bootstrap_server=None, command_config=str(config), timeout=None,
                              api_version=None)
    assert admin_settings(args)["api_version"] == "2.8"
    args.api_version = "3.9"  # the flag wins over the file
    assert admin_settings(args)["api_version"] == "3.9"


def test_the_spark_source_takes_kafka_api_version() -> None:
    from groupkit.spark.options import SourceOptions

    base = {"kafka.bootstrap.servers": "h:1", "subscribe": "events"}
    options = SourceOptions.parse({**base, "kafka.api.version": "2.3"}, streaming=True)
    assert options.settings["api_version"] == "2.3"
    assert options.client_settings["api_version"] == "2.3"
    with pytest.raises(ConfigError, match=r"option kafka\.api\.version must be 'auto'"):
        SourceOptions.parse({**base, "kafka.api.version": "2.99"}, streaming=True)


def test_a_group_consumer_takes_it_as_a_class_attribute() -> None:
    from groupkit import GroupConsumer

    class Pinned(GroupConsumer):
        topics = ["t"]
        group_id = "g"
        api_version = "2.3"

        def process(self, record: object) -> None: ...

    class Unknown(Pinned):
        api_version = "2.99"

    assert Pinned(bootstrap_servers="127.0.0.1:1").config.api_version == "2.3"
    with pytest.raises(ConfigError, match=r"api_version must be 'auto'"):
        Unknown(bootstrap_servers="127.0.0.1:1")
