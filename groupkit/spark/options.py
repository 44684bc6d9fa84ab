"""The options of the ``groupkit-kafka`` source, named as Spark's own Kafka source names them.

Checked when the DataFrame is loaded: an unknown or unsupported option, a bad value or a
contradiction raises ConfigError naming the option. Spark passes option names case-insensitively,
so they are compared in lower case. ``kafka.<setting>`` options are client settings in the Java
client's dotted spelling (``kafka.security.protocol``); they become groupkit's snake_case settings.
Pure Python: nothing here imports pyspark.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import attrs

from assignors import TopicPartition
from groupkit.config import ClientConfig, ConsumerConfig
from groupkit.errors import ConfigError

__all__ = ["EARLIEST", "LATEST", "SourceOptions"]

#: Spark's per-partition JSON spells "earliest" and "latest" as these offsets.
EARLIEST = -2
LATEST = -1

_SUBSCRIPTIONS = ("subscribe", "subscribepattern", "assign")
_KNOWN = frozenset({
    *_SUBSCRIPTIONS, "startingoffsets", "startingoffsetsfallback", "endingoffsets",
    "maxoffsetspertrigger", "failondataloss", "includeheaders", "kafkaconsumer.polltimeoutms",
    "kafka.bootstrap.servers", "kafka.group.id",
})
#: Options of Spark's Kafka source this one does not offer (yet): refused by name, not ignored.
_SPARK_ONLY = frozenset({
    "startingoffsetsbytimestamp", "endingoffsetsbytimestamp", "startingtimestamp",
    "endingtimestamp", "startingoffsetsbytimestampstrategy", "minpartitions",
    "minoffsetspertrigger", "maxtriggerdelay", "fetchoffset.numretries",
    "fetchoffset.retryintervalms", "groupidprefix",
})
#: Client settings the source decides itself; Spark's Kafka source refuses the same ones.
_OWN_SETTINGS = {
    "auto_offset_reset": "use startingOffsets",
    "enable_auto_commit": "the source commits each completed batch by itself",
    "group_instance_id": "readers never join the group",
    "key_deserializer": "keys are binary; cast or decode them in Spark",
    "value_deserializer": "values are binary; cast or decode them in Spark",
}
_CONSUMER_FIELDS = frozenset(a.name for a in attrs.fields(ConsumerConfig))
_CLIENT_FIELDS = frozenset(a.name for a in attrs.fields(ClientConfig))
_INT_SETTING = re.compile(r".*(_ms|_bytes|_records|_size)$")


def _flag(name: str, value: str) -> bool:
    text = value.strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(f"option {name} must be 'true' or 'false', not {value!r}")
    return text == "true"


def _positive(name: str, value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(f"option {name} must be a positive integer, not {value!r}") from None
    if number <= 0:
        raise ConfigError(f"option {name} must be a positive integer, not {value!r}")
    return number


def _setting_value(field: str, value: str) -> Any:
    """Spark options are strings: turn a numeric or boolean client setting into its type."""
    if field == "bootstrap_servers":
        return value
    if _INT_SETTING.match(field) or field in ("max_poll_records",):
        try:
            return int(value)
        except ValueError:
            raise ConfigError(f"option kafka.{field.replace('_', '.')} must be an integer,"
                              f" not {value!r}") from None
    if field in ("check_crcs", "ssl_check_hostname", "allow_auto_create_topics"):
        return _flag(f"kafka.{field.replace('_', '.')}", value)
    if field == "api_version":
        from groupkit.protocol.releases import check

        return check(value, "option kafka.api.version")
    return value


def _offsets_spec(name: str, value: str, allowed: tuple[str, ...]
                  ) -> str | dict[TopicPartition, int]:
    """A named position (``allowed``) or Spark's JSON ``{"topic": {"0": 23, "1": -2}}``."""
    text = value.strip()
    if text.lower() in allowed:
        return text.lower()
    try:
        parsed = json.loads(text)
    except ValueError:
        shown = ", ".join(allowed)
        raise ConfigError(f"option {name} must be one of {shown} or JSON such as"
                          f' {{"events": {{"0": 23, "1": -2}}}}, not {value!r}') from None
    out: dict[TopicPartition, int] = {}
    if not isinstance(parsed, dict):
        raise ConfigError(f"option {name}: the JSON must map topics to {{partition: offset}}")
    for topic, parts in parsed.items():
        if not isinstance(parts, dict):
            raise ConfigError(f"option {name}: topic {topic!r} must map to {{partition: offset}}")
        for p, offset in parts.items():
            if not str(p).isdigit() or isinstance(offset, bool) or not isinstance(offset, int) \
                    or offset < EARLIEST:
                raise ConfigError(f"option {name}: {topic}-{p} -> {offset!r} is not a partition"
                                  " number and an offset >= 0 (or -2 earliest, -1 latest)")
            out[TopicPartition(topic, int(p))] = offset
    if not out:
        raise ConfigError(f"option {name}: the JSON names no partition")
    return out


@attrs.frozen(kw_only=True)
class SourceOptions:
    """The checked options of one ``groupkit-kafka`` DataFrame."""

    #: Client settings for every connection (ConsumerConfig names), incl. bootstrap_servers.
    settings: dict[str, Any]
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[TopicPartition, ...] = ()
    starting: str | dict[TopicPartition, int] = "latest"
    fallback: str = "latest"
    ending: str | dict[TopicPartition, int] = "latest"
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    group_id: str | None = None
    poll_timeout_ms: int = 120000

    @classmethod
    def parse(cls, options: Mapping[str, str], streaming: bool | None) -> SourceOptions:
        """Check ``options`` (as Spark passes them) for a streaming or a batch read (None:
        at load(), before it is known which; the checks of one kind wait until then)."""
        given = {str(k).lower(): str(v) for k, v in options.items()}
        settings: dict[str, Any] = {}
        for name, value in given.items():
            if name in _SPARK_ONLY:
                raise ConfigError(f"option {name} of Spark's Kafka source is not supported by"
                                  " groupkit-kafka; remove it")
            if name in _KNOWN:
                continue
            if name.startswith("kafka."):
                field = name[len("kafka."):].replace(".", "_")
                if field in _OWN_SETTINGS:
                    raise ConfigError(f"option {name} cannot be set: {_OWN_SETTINGS[field]}")
                if field not in _CONSUMER_FIELDS:
                    raise ConfigError(f"unknown option {name}: kafka.<setting> takes a groupkit"
                                      " client setting in dotted form, e.g."
                                      " kafka.security.protocol")
                settings[field] = _setting_value(field, value)
                if field == "isolation_level" and value != "read_uncommitted":
                    # Ranges end at the high watermark; a read_committed reader would wait
                    # for records past the last stable offset until kafkaConsumer.pollTimeoutMs.
                    raise ConfigError("option kafka.isolation.level: only read_uncommitted is"
                                      " supported by groupkit-kafka so far; remove it")
                continue
            raise ConfigError(f"unknown option {name!r} for the groupkit-kafka source")
        servers = given.get("kafka.bootstrap.servers", "").strip()
        if not servers:
            raise ConfigError("option kafka.bootstrap.servers is required, e.g."
                              " .option('kafka.bootstrap.servers', 'localhost:9092')")
        settings["bootstrap_servers"] = servers
        # Build the config once now, so a bad client setting fails at load(), not in a task.
        ConsumerConfig.from_kwargs(settings)
        chosen = [k for k in _SUBSCRIPTIONS if k in given]
        if len(chosen) != 1:
            raise ConfigError("give exactly one of the options subscribe, subscribePattern or"
                              f" assign (given: {', '.join(chosen) or 'none'})")
        fields: dict[str, Any] = {"settings": settings}
        how = chosen[0]
        if how == "subscribe":
            topics = tuple(t.strip() for t in given[how].split(",") if t.strip())
            if not topics:
                raise ConfigError("option subscribe names no topic; e.g. 'events' or 'a,b'")
            fields["topics"] = topics
        elif how == "subscribepattern":
            try:
                re.compile(given[how])
            except re.error as exc:
                raise ConfigError(f"option subscribePattern is not a regular expression:"
                                  f" {exc}") from None
            fields["pattern"] = given[how]
        else:
            fields["assigned"] = _assigned(given[how])
        if "startingoffsets" in given:
            fields["starting"] = _offsets_spec("startingOffsets", given["startingoffsets"],
                                               ("earliest", "latest", "group"))
        elif streaming is False:
            fields["starting"] = "earliest"
        if "startingoffsetsfallback" in given:
            fallback = given["startingoffsetsfallback"].strip().lower()
            if fallback not in ("earliest", "latest"):
                raise ConfigError("option startingOffsetsFallback must be 'earliest' or"
                                  f" 'latest', not {given['startingoffsetsfallback']!r}")
            fields["fallback"] = fallback
        if "endingoffsets" in given:
            if streaming is True:
                raise ConfigError("option endingOffsets is for batch reads (spark.read) only;"
                                  " a stream runs until stopped")
            fields["ending"] = _offsets_spec("endingOffsets", given["endingoffsets"],
                                             ("latest",))
        if "maxoffsetspertrigger" in given:
            if streaming is False:
                raise ConfigError("option maxOffsetsPerTrigger is for streams only")
            fields["max_offsets_per_trigger"] = _positive(
                "maxOffsetsPerTrigger", given["maxoffsetspertrigger"])
        if "failondataloss" in given:
            fields["fail_on_data_loss"] = _flag("failOnDataLoss", given["failondataloss"])
        if "includeheaders" in given:
            fields["include_headers"] = _flag("includeHeaders", given["includeheaders"])
        if "kafkaconsumer.polltimeoutms" in given:
            fields["poll_timeout_ms"] = _positive("kafkaConsumer.pollTimeoutMs",
                                                  given["kafkaconsumer.polltimeoutms"])
        group = given.get("kafka.group.id", "").strip() or None
        fields["group_id"] = group
        parsed = cls(**fields)
        parsed._check_positions(streaming)
        return parsed

    def _check_positions(self, streaming: bool | None) -> None:
        if self.starting == "group" and self.group_id is None:
            raise ConfigError("startingOffsets=group needs the option kafka.group.id")
        if isinstance(self.starting, dict) and any(o == LATEST for o in self.starting.values()) \
                and streaming is False:
            raise ConfigError("startingOffsets of a batch read cannot be -1 (latest)")
        if isinstance(self.ending, dict) and any(o == EARLIEST for o in self.ending.values()):
            raise ConfigError("endingOffsets cannot be -2 (earliest)")
        if self.starting == "latest" and streaming is False:
            raise ConfigError("startingOffsets=latest makes an empty batch read; use earliest,"
                              " group or per-partition JSON")

    @property
    def client_settings(self) -> dict[str, Any]:
        """The settings an Admin takes (connection, TLS, SASL): ClientConfig's names only."""
        return {k: v for k, v in self.settings.items() if k in _CLIENT_FIELDS}


def _assigned(value: str) -> tuple[TopicPartition, ...]:
    """Spark's ``assign`` JSON: ``{"events": [0, 1]}``."""
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict) or not parsed or not all(
            isinstance(ps, list) and ps and all(isinstance(p, int) and p >= 0 for p in ps)
            for ps in parsed.values()):
        raise ConfigError(f'option assign must be JSON such as {{"events": [0, 1]}}, not'
                          f" {value!r}")
    return tuple(sorted(TopicPartition(t, p) for t, ps in parsed.items() for p in ps))
