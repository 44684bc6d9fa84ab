"""API version negotiation: the highest version of each API that groupkit and a broker share."""

from __future__ import annotations

from collections.abc import Mapping

from groupkit.errors import UnsupportedVersionError
from groupkit.protocol.messages.api_versions import ApiVersionsResponse
from groupkit.protocol.registry import REQUESTS

VersionRanges = Mapping[int, tuple[int, int]]

#: API key -> (lowest, highest) version groupkit can encode and decode.
CLIENT_VERSIONS: dict[int, tuple[int, int]] = {
    key: (cls.MIN_VERSION, cls.MAX_VERSION) for key, cls in sorted(REQUESTS.items())
}


def _ranges(broker: VersionRanges | ApiVersionsResponse) -> VersionRanges:
    if isinstance(broker, ApiVersionsResponse):
        return {a.api_key: (a.min_version, a.max_version) for a in broker.api_keys}
    return broker


def _shared(client: tuple[int, int], broker: tuple[int, int]) -> int | None:
    low, high = max(client[0], broker[0]), min(client[1], broker[1])
    return high if low <= high else None


def negotiate(broker_ranges: VersionRanges | ApiVersionsResponse) -> dict[int, int]:
    """Map each API both sides speak to the highest version they share.

    APIs the broker does not list, or whose ranges do not overlap, are left out. The caller
    checks an ApiVersionsResponse's ``error_code`` first; only its ``api_keys`` are read here.
    """
    broker = _ranges(broker_ranges)
    chosen: dict[int, int] = {}
    for key, client in CLIENT_VERSIONS.items():
        theirs = broker.get(key)
        if theirs is not None and (version := _shared(client, theirs)) is not None:
            chosen[key] = version
    return chosen


def pick_version(api_key: int, broker_ranges: VersionRanges | ApiVersionsResponse) -> int:
    """The highest version of one API both sides speak, or UnsupportedVersionError saying why."""
    client = CLIENT_VERSIONS.get(api_key)
    if client is None:
        raise UnsupportedVersionError(
            f"groupkit has no schema for API key {api_key}, so it cannot send it at any version")
    name = REQUESTS[api_key].__name__
    theirs = _ranges(broker_ranges).get(api_key)
    if theirs is None:
        raise UnsupportedVersionError(
            f"the broker does not support {name} (API key {api_key}) at all; groupkit speaks"
            f" versions {client[0]}-{client[1]}: use a broker version that has this API")
    version = _shared(client, theirs)
    if version is None:
        raise UnsupportedVersionError(
            f"{name} (API key {api_key}): the broker speaks versions {theirs[0]}-{theirs[1]},"
            f" groupkit speaks {client[0]}-{client[1]}, and they share none: upgrade the side"
            " that is older")
    return version
