"""Every API in the registry, every version, both directions: encode then decode gives it back.

Also: unknown tagged fields survive a round trip, and a field a version does not carry refuses a
non-default value unless Kafka marks it ignorable (then it is dropped and decodes as the default).
"""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given, settings, strategies as st

from groupkit.errors import FeatureUnsupportedError, FieldVersionError
from groupkit.protocol.registry import load_all
from groupkit.protocol.schema import Message
from tests.protocol import strategies as gs

CASES = gs.all_cases()
FLEXIBLE_CASES = [c for c in CASES if c[0].is_flexible(c[1])]


def test_registry_pairs_every_request_with_its_response() -> None:
    for key, request in load_all().items():
        response = request.Response
        assert response.Request is request
        assert key == response.API_KEY
        assert (response.MIN_VERSION, response.MAX_VERSION) == (
            request.MIN_VERSION, request.MAX_VERSION)
        assert response.FLEXIBLE_FROM == request.FLEXIBLE_FROM


@pytest.mark.parametrize("case", CASES, ids=gs.case_id)
@settings(max_examples=8)
@given(data=st.data())
def test_roundtrip(case: tuple[type[Message], int], data: st.DataObject) -> None:
    cls, version = case
    msg = data.draw(gs.messages(cls, version))
    encoded = msg.encode(version)
    decoded = cls.decode(encoded, version)
    assert decoded == msg
    assert decoded.encode(version) == encoded


@pytest.mark.parametrize("case", FLEXIBLE_CASES, ids=gs.case_id)
@settings(max_examples=4)
@given(data=st.data())
def test_unknown_tags_survive(case: tuple[type[Message], int], data: st.DataObject) -> None:
    cls, version = case
    msg = data.draw(gs.messages(cls, version))
    tags = data.draw(gs.unknown_tags(cls))
    tagged = attrs.evolve(msg, unknown_tags=tags)
    decoded = cls.decode(tagged.encode(version), version)
    assert decoded == msg
    assert decoded.unknown_tags == tags
    assert decoded.encode(version) == tagged.encode(version)


def _absent_cases() -> list[tuple[type[Message], int, type, str]]:
    out = []
    for cls, version in CASES:
        for owner, a, _spec in gs.absent_fields(cls, version, cls.is_flexible(version)):
            out.append((cls, version, owner, a.name))
    return out


@pytest.mark.parametrize(
    "cls,version,owner,name", _absent_cases(),
    ids=lambda x: x.__name__ if isinstance(x, type) else str(x))
def test_field_absent_from_version(cls: type[Message], version: int, owner: type,
                                   name: str) -> None:
    flexible = cls.is_flexible(version)
    a = attrs.fields_dict(owner)[name]
    spec = gs.spec_of(a)
    assert spec is not None
    default = getattr(gs.minimal(owner, version, flexible), name)
    value = gs.non_default(spec.type, default)
    msg = gs.minimal(cls, version, flexible, {owner: {name: value}})
    baseline = gs.minimal(cls, version, flexible)
    try:
        adapted = msg.for_version(version)
    except FieldVersionError:
        adapted = msg
    if spec.ignorable:
        assert msg.encode(version) == baseline.encode(version)
    elif adapted is not msg and owner is cls:
        assert getattr(adapted, name) == getattr(baseline, name)
        assert cls.decode(msg.encode(version), version) == adapted
    elif spec.feature is not None and spec.versions is not None and version < spec.versions[0]:
        # A field that is a feature: the error names it and the release that has it.
        with pytest.raises(FeatureUnsupportedError, match=name) as raised:
            msg.encode(version)
        assert raised.value.feature == spec.feature
        assert raised.value.release is not None and raised.value.release in str(raised.value)
    else:
        with pytest.raises(FieldVersionError, match=name):
            msg.encode(version)
