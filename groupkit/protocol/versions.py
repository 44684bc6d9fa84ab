"""API version negotiation: the highest version of each API that groupkit and a broker share."""

from __future__ import annotations

from collections.abc import Mapping

from groupkit.errors import UnsupportedVersionError
from groupkit.protocol.messages.api_versions import ApiVersionsResponse
from groupkit.protocol.registry import request_class

VersionRanges = Mapping[int, tuple[int, int]]

#: API key -> (lowest, highest) version groupkit can encode and decode: each request class's
#: ``MIN_VERSION`` and ``MAX_VERSION``, written out so that negotiating does not import every
#: schema (tests/protocol/test_versions.py holds the two equal).
CLIENT_VERSIONS: dict[int, tuple[int, int]] = {
    0: (0, 11),   # Produce
    1: (0, 17),   # Fetch
    2: (0, 9),    # ListOffsets
    3: (0, 12),   # Metadata
    8: (0, 9),    # OffsetCommit
    9: (0, 9),    # OffsetFetch
    10: (0, 6),   # FindCoordinator
    11: (0, 9),   # JoinGroup
    12: (0, 4),   # Heartbeat
    13: (0, 5),   # LeaveGroup
    14: (0, 5),   # SyncGroup
    15: (0, 5),   # DescribeGroups
    16: (0, 5),   # ListGroups
    17: (0, 1),   # SaslHandshake
    18: (0, 4),   # ApiVersions
    19: (0, 7),   # CreateTopics
    20: (0, 6),   # DeleteTopics
    22: (0, 5),   # InitProducerId
    24: (0, 5),   # AddPartitionsToTxn
    25: (0, 4),   # AddOffsetsToTxn
    26: (0, 4),   # EndTxn
    28: (0, 4),   # TxnOffsetCommit
    36: (0, 2),   # SaslAuthenticate
    42: (0, 2),   # DeleteGroups
    47: (0, 0),   # OffsetDelete
    68: (0, 1),   # ConsumerGroupHeartbeat
    69: (0, 1),   # ConsumerGroupDescribe
    76: (0, 1),   # ShareGroupHeartbeat
    77: (0, 1),   # ShareGroupDescribe
    78: (0, 2),   # ShareFetch
    79: (0, 2),   # ShareAcknowledge
}


def _ranges(broker: VersionRanges | ApiVersionsResponse) -> VersionRanges:
    if isinstance(broker, ApiVersionsResponse):
        return {a.api_key: (a.min_version, a.max_version) for a in broker.api_keys}
    return broker


def _shared(client: tuple[int, int], broker: tuple[int, int]) -> int | None:
    low, high = max(client[0], broker[0]), min(client[1], broker[1])
    return high if low <= high else None


def negotiate(broker_ranges: VersionRanges | ApiVersionsResponse,
              cap: Mapping[int, int] | None = None) -> dict[int, int]:
    """Map each API both sides speak to the highest version they share.

    APIs the broker does not list, or whose ranges do not overlap, are left out. ``cap`` (an
    ``api_version`` pin: ``releases.caps``) lowers each API's highest version to the one the
    pinned release speaks and leaves out the APIs that release lacks. The caller checks an
    ApiVersionsResponse's ``error_code`` first; only its ``api_keys`` are read here.
    """
    broker = _ranges(broker_ranges)
    chosen: dict[int, int] = {}
    for key, client in CLIENT_VERSIONS.items():
        theirs = broker.get(key)
        if theirs is None:
            continue
        if cap is not None:
            highest = cap.get(key)
            if highest is None:
                continue
            client = (client[0], min(client[1], highest))
        if (version := _shared(client, theirs)) is not None:
            chosen[key] = version
    return chosen


def pick_version(api_key: int, broker_ranges: VersionRanges | ApiVersionsResponse) -> int:
    """The highest version of one API both sides speak, or UnsupportedVersionError saying why."""
    client = CLIENT_VERSIONS.get(api_key)
    if client is None:
        raise UnsupportedVersionError(
            f"groupkit has no schema for API key {api_key}, so it cannot send it at any version")
    name = request_class(api_key).__name__
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
