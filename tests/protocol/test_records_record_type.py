"""decode_records/decode_batches building a Record subclass that carries topic and partition."""

from __future__ import annotations

import attrs
import pytest

from groupkit.errors import ConfigError
from groupkit.protocol.records import (
    Record,
    decode_batches,
    decode_records,
    encode_batch,
    encode_message_set,
)

pytestmark = pytest.mark.usefixtures("record_loops")


@attrs.frozen
class Sourced(Record):
    topic: str = attrs.field(kw_only=True)
    partition: int = attrs.field(kw_only=True)


@attrs.frozen
class WithExtra(Record):
    topic: str = attrs.field(kw_only=True)
    partition: int = attrs.field(kw_only=True)
    note: str = attrs.field(kw_only=True, default="")


@attrs.define(slots=False)
class Unslotted(Record):
    topic: str = attrs.field(kw_only=True)
    partition: int = attrs.field(kw_only=True)


def test_every_format_decodes_into_the_subclass_with_its_source() -> None:
    data = (encode_batch([(b"k", b"v0", [("h", b"1")])], base_offset=0)
            + encode_message_set([(None, b"v1")], magic=1, base_offset=1)
            + encode_message_set([(None, b"v2")], magic=0, compression="gzip", base_offset=2))
    records = decode_records(data, topic="t", partition=4, record_type=Sourced)
    assert records == [
        Sourced(0, records[0].timestamp, b"k", b"v0", [("h", b"1")], topic="t", partition=4),
        Sourced(1, records[1].timestamp, None, b"v1", [], records[1].timestamp_type,
                topic="t", partition=4),
        Sourced(2, -1, None, b"v2", [], topic="t", partition=4)]
    batches = decode_batches(data, topic="t", partition=4, record_type=Sourced)
    assert [r for b in batches for r in b.records] == records


def test_plain_records_stay_plain() -> None:
    records = decode_records(encode_batch([(None, b"v")]), topic="t", partition=0)
    assert type(records[0]) is Record


@pytest.mark.parametrize("bad", [dict, WithExtra, Unslotted])
def test_a_record_type_that_cannot_be_filled_is_refused(bad: type) -> None:
    with pytest.raises(ConfigError, match="record_type"):
        decode_records(encode_batch([(None, b"v")]), topic="t", partition=0, record_type=bad)


def test_a_record_type_is_checked_once_and_each_call_gets_its_own_source(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from groupkit.protocol.records import construct

    @attrs.frozen
    class Fresh(Record):
        topic: str = attrs.field(kw_only=True)
        partition: int = attrs.field(kw_only=True)

    checked: list[type] = []
    fields = attrs.fields

    def counting(cls: type) -> tuple[attrs.Attribute, ...]:
        checked.append(cls)
        return fields(cls)

    monkeypatch.setattr(construct.attrs, "fields", counting)
    data = encode_batch([(None, b"v")])
    first = decode_records(data, topic="a", partition=1, record_type=Fresh)
    second = decode_records(data, topic="b", partition=2, record_type=Fresh)
    assert checked.count(Fresh) == 1
    assert [(r.topic, r.partition) for r in first + second] == [("a", 1), ("b", 2)]
    with pytest.raises(ConfigError, match="record_type"):  # a refused one stays refused
        decode_records(data, topic="t", partition=0, record_type=WithExtra)
    with pytest.raises(ConfigError, match="record_type"):
        decode_records(data, topic="t", partition=0, record_type=WithExtra)
