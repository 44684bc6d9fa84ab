"""Version negotiation: highest shared version per API, and named errors when none is shared."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from groupkit.errors import UnsupportedVersionError
from groupkit.protocol import registry, versions
from groupkit.protocol.messages.api_versions import ApiVersion, ApiVersionsResponse
from groupkit.protocol.schema import STRING, Request, f, message
from groupkit.protocol.versions import CLIENT_VERSIONS, negotiate, pick_version

_KEY = 32001


@message(api_key=_KEY, versions="2-6", flexible="5+")
class WidgetRequest(Request):
    name: str = f(STRING)


@pytest.fixture
def widget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.REQUESTS, _KEY, WidgetRequest)
    monkeypatch.setitem(versions.CLIENT_VERSIONS, _KEY, (2, 6))


def test_client_versions_are_the_request_classes_versions() -> None:
    assert CLIENT_VERSIONS[18] == (0, 4)
    requests = registry.load_all()
    assert set(CLIENT_VERSIONS) == set(requests)
    for key, (low, high) in CLIENT_VERSIONS.items():
        cls = requests[key]
        assert (low, high) == (cls.MIN_VERSION, cls.MAX_VERSION)


@pytest.mark.usefixtures("widget")
@pytest.mark.parametrize(("broker", "expected"), [
    ((0, 9), 6),      # broker newer: our max
    ((0, 4), 4),      # broker older: its max
    ((3, 5), 5),
    ((6, 6), 6),
    ((2, 2), 2),
])
def test_highest_shared_version(broker: tuple[int, int], expected: int) -> None:
    assert pick_version(_KEY, {_KEY: broker}) == expected
    assert negotiate({_KEY: broker})[_KEY] == expected


@pytest.mark.usefixtures("widget")
@pytest.mark.parametrize("broker", [(0, 1), (7, 12)])
def test_disjoint_ranges_name_the_api_and_both_ranges(broker: tuple[int, int]) -> None:
    with pytest.raises(UnsupportedVersionError) as info:
        pick_version(_KEY, {_KEY: broker})
    text = str(info.value)
    assert "WidgetRequest" in text
    assert f"{broker[0]}-{broker[1]}" in text
    assert "2-6" in text
    assert _KEY not in negotiate({_KEY: broker})


@pytest.mark.usefixtures("widget")
def test_api_missing_on_the_broker() -> None:
    with pytest.raises(UnsupportedVersionError, match="does not support WidgetRequest.*2-6"):
        pick_version(_KEY, {18: (0, 3)})
    assert negotiate({18: (0, 3)}) == {18: 3}


def test_api_unknown_to_groupkit() -> None:
    with pytest.raises(UnsupportedVersionError, match="API key 31998"):
        pick_version(31998, {31998: (0, 1)})
    assert 31998 not in negotiate({31998: (0, 1), 18: (0, 2)})


def test_negotiate_reads_an_api_versions_response() -> None:
    resp = ApiVersionsResponse(api_keys=[
        ApiVersion(api_key=18, min_version=0, max_version=3),
        ApiVersion(api_key=31997, min_version=0, max_version=5),
    ])
    assert negotiate(resp) == {18: 3}
    assert pick_version(18, resp) == 3


@pytest.mark.usefixtures("widget")
def test_negotiate_covers_every_shared_api() -> None:
    assert negotiate({18: (0, 9), _KEY: (0, 3)}) == {18: 4, _KEY: 3}


@given(low=st.integers(0, 20), span=st.integers(0, 20))
def test_pick_agrees_with_brute_force(low: int, span: int) -> None:
    broker = (low, low + span)
    client = CLIENT_VERSIONS[18]
    shared = [v for v in range(client[0], client[1] + 1) if broker[0] <= v <= broker[1]]
    if shared:
        assert pick_version(18, {18: broker}) == max(shared)
        assert negotiate({18: broker}) == {18: max(shared)}
    else:
        with pytest.raises(UnsupportedVersionError):
            pick_version(18, {18: broker})
        assert negotiate({18: broker}) == {}
