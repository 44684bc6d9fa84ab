"""The per-release API version table behind ``api_version``, and negotiation under a pin.

The facts checked here are Kafka's own: the release each KIP shipped in, as its message specs'
version comments and the KIP pages say (static membership in 2.3, flexible versions in 2.4,
OffsetDelete in 2.4, require_stable in 2.5, KIP-848's ConsumerGroupHeartbeat v1 in 4.0).
"""

from __future__ import annotations

import pytest

from groupkit.errors import ApiKey, ConfigError
from groupkit.protocol import releases
from groupkit.protocol.messages.api_versions import ApiVersion, ApiVersionsResponse
from groupkit.protocol.versions import CLIENT_VERSIONS, negotiate


def test_the_releases_asked_for_are_all_there() -> None:
    wanted = ["0.10.0", "0.10.1", "0.10.2", "0.11", "1.0", "1.1",
              *(f"2.{n}" for n in range(9)), *(f"3.{n}" for n in range(10)), "4.0", "4.1"]
    assert set(wanted) <= set(releases.RELEASES)
    assert list(releases.RELEASES) == sorted(
        releases.RELEASES, key=lambda r: tuple(int(p) for p in r.split(".")))


@pytest.mark.parametrize("api,version,release", [
    (ApiKey.JOIN_GROUP, 5, "2.3"),              # KIP-345 group_instance_id
    (ApiKey.HEARTBEAT, 3, "2.3"),
    (ApiKey.OFFSET_COMMIT, 7, "2.3"),
    (ApiKey.JOIN_GROUP, 6, "2.4"),              # the first flexible group versions (KIP-482)
    (ApiKey.SYNC_GROUP, 4, "2.4"),
    (ApiKey.LEAVE_GROUP, 3, "2.4"),             # KIP-345 batch leave
    (ApiKey.API_VERSIONS, 3, "2.4"),            # KIP-511
    (ApiKey.OFFSET_DELETE, 0, "2.4"),           # KIP-496
    (ApiKey.OFFSET_FETCH, 7, "2.5"),            # KIP-447 require_stable
    (ApiKey.OFFSET_FETCH, 8, "3.0"),            # KIP-709 batched groups
    (ApiKey.FIND_COORDINATOR, 4, "3.0"),        # KIP-699 batched keys
    (ApiKey.FETCH, 13, "3.1"),                  # KIP-516 topic ids in Fetch
    (ApiKey.JOIN_GROUP, 9, "3.2"),              # KIP-814 skip_assignment
    (ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, "4.0"),  # KIP-848 generally available
    (ApiKey.PRODUCE, 13, "4.1"),                # KIP-516 topic ids in Produce
    (ApiKey.PRODUCE, 3, "0.11"),                # KIP-98 transactions, record batches
])
def test_each_feature_arrives_in_its_release(api: int, version: int, release: str) -> None:
    assert releases.first_release(api, version) == release


def test_a_release_never_lowers_an_api_it_keeps() -> None:
    for older, newer in zip(releases.RELEASES[:-1], releases.RELEASES[1:], strict=True):
        before, after = releases.caps(older), releases.caps(newer)
        for api, top in after.items():
            assert top >= before.get(api, -1), (older, newer, api)


def test_the_pin_the_mock_cluster_needs_stops_before_the_flexible_group_versions() -> None:
    caps = releases.caps("2.3")
    assert caps[ApiKey.JOIN_GROUP] == 5 and caps[ApiKey.SYNC_GROUP] == 3
    assert caps[ApiKey.LEAVE_GROUP] == 2 and caps[ApiKey.OFFSET_FETCH] == 5
    assert caps[ApiKey.API_VERSIONS] == 2 and ApiKey.OFFSET_DELETE not in caps
    assert releases.newest_below(ApiKey.JOIN_GROUP, 6) == "2.3"
    assert releases.newest_below(ApiKey.API_VERSIONS, 0) is None


@pytest.mark.parametrize("given,release", [
    ("2.3", "2.3"), ("2.3.1", "2.3"), (" 3.9 ", "3.9"), ("4.0.0", "4.0"), ("0.10", "0.10.0"),
    ("0.10.2.1", "0.10.2"), ("0.11.0.3", "0.11"), ("1.1.1", "1.1")])
def test_patch_releases_mean_their_release(given: str, release: str) -> None:
    assert releases.normalize(given) == release
    assert releases.caps(given) == releases.caps(release)


@pytest.mark.parametrize("bad", ["2", "9.9", "2.x", "latest", "", 2.3, None, "0.9"])
def test_an_unknown_release_is_a_config_error_listing_the_known_ones(bad: object) -> None:
    with pytest.raises(ConfigError, match=r"api_version must be 'auto'.*2\.3, 2\.4.*4\.1"):
        releases.check(bad)


def test_auto_is_accepted() -> None:
    assert releases.check("auto") == "auto"


def _advertised(ranges: dict[int, tuple[int, int]]) -> ApiVersionsResponse:
    return ApiVersionsResponse(error_code=0, api_keys=[
        ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in ranges.items()])


def test_a_pin_caps_what_the_broker_advertises_and_leaves_out_what_the_release_lacks() -> None:
    broker = _advertised(dict(CLIENT_VERSIONS))
    chosen = negotiate(broker, releases.caps("2.3"))
    assert chosen[ApiKey.JOIN_GROUP] == 5 and chosen[ApiKey.FETCH] == 11
    assert ApiKey.OFFSET_DELETE not in chosen
    # Without a pin the broker's and groupkit's ranges decide alone.
    assert negotiate(broker)[ApiKey.JOIN_GROUP] == CLIENT_VERSIONS[ApiKey.JOIN_GROUP][1]


def test_a_pin_never_raises_a_version_above_the_brokers() -> None:
    broker = _advertised({ApiKey.JOIN_GROUP: (0, 4), ApiKey.FETCH: (4, 17)})
    chosen = negotiate(broker, releases.caps("3.9"))
    assert chosen == {ApiKey.JOIN_GROUP: 4, ApiKey.FETCH: 17}


def test_a_pin_below_the_brokers_lowest_version_leaves_the_api_out() -> None:
    # Kafka 4.0 refuses Fetch below v4 (KIP-896); a 0.10.0 pin speaks Fetch v2 at most.
    broker = _advertised({ApiKey.FETCH: (4, 17)})
    assert negotiate(broker, releases.caps("0.10.0")) == {}
