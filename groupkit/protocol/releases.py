"""Which API versions each Apache Kafka release speaks: what ``api_version="2.3"`` caps to.

``api_version`` (kafka-python's and aiokafka's name for it) is ``"auto"`` or a broker release.
A release caps every API at the highest version that release speaks; per connection the cap
is intersected with what the broker advertises in ApiVersions, so a pin never raises a version
above the broker's own. An API the release does not have at all is not sent. A pin is for
brokers that advertise versions they cannot serve (see docs/test-brokers.md), for tests that
must speak as an older broker would, and for holding a client at one release's wire format.

The table is facts, not choices: the ApiVersions answers of real brokers of each release (the
table kafka-python keeps, captured from each release), checked against the message specs'
``validVersions`` on each release branch of apache/kafka (2.2-3.9, stable versions only, where
the specs' ``listeners`` show the APIs a KRaft broker adds) and against franz-go's
per-release history (4.0-4.2). Only APIs a client sends are listed: the inter-broker ones
(LeaderAndIsr, WriteTxnMarkers, the Raft and share-state APIs, ...) are left out. The telemetry
APIs (71, 72) stay from 3.7 on: a broker lists them only when it has a metrics reporter.
Patch releases never changed an API's versions, so "2.3.1" is "2.3".
"""

from __future__ import annotations

from functools import cache

from groupkit.errors import ConfigError

#: The setting's value that negotiates every connection's versions with ApiVersions alone.
AUTO = "auto"

#: Each release, oldest first, with what changed from the release before it:
#: API key -> the highest version it speaks, or None for an API it no longer has.
_HISTORY: tuple[tuple[str, dict[int, int | None]], ...] = (
    ("0.10.0", {0: 2, 1: 2, 2: 0, 3: 1, 8: 2, 9: 1, 10: 0, 11: 0, 12: 0, 13: 0, 14: 0, 15: 0,
                16: 0, 17: 0, 18: 0}),
    ("0.10.1", {1: 3, 2: 1, 3: 2, 11: 1, 19: 0, 20: 0}),
    ("0.10.2", {9: 2, 19: 1}),
    ("0.11", {0: 3, 1: 5, 2: 2, 3: 4, 8: 3, 9: 3, 10: 1, 11: 2, 12: 1, 13: 1, 14: 1, 15: 1,
              16: 1, 18: 1, 19: 2, 20: 1, 21: 0, 22: 0, 23: 0, 24: 0, 25: 0, 26: 0, 28: 0,
              29: 0, 30: 0, 31: 0, 32: 0, 33: 0}),
    ("1.0", {0: 5, 1: 6, 3: 5, 17: 1, 34: 0, 35: 0, 36: 0, 37: 0}),
    ("1.1", {1: 7, 32: 1, 38: 0, 39: 0, 40: 0, 41: 0, 42: 0}),
    ("2.0", {0: 6, 1: 8, 2: 3, 3: 6, 8: 4, 9: 4, 10: 2, 11: 3, 12: 2, 13: 2, 14: 2, 15: 2,
             16: 2, 18: 2, 19: 3, 20: 2, 21: 1, 22: 1, 23: 1, 24: 1, 25: 1, 26: 1, 28: 1,
             29: 1, 30: 1, 31: 1, 32: 2, 33: 1, 34: 1, 35: 1, 37: 1, 38: 1, 39: 1, 40: 1,
             41: 1, 42: 1}),
    ("2.1", {0: 7, 1: 10, 2: 4, 3: 7, 8: 6, 9: 5, 20: 3, 23: 2, 28: 2}),
    ("2.2", {2: 5, 11: 4, 36: 1, 43: 0}),
    ("2.3", {1: 11, 3: 8, 8: 7, 11: 5, 12: 3, 14: 3, 15: 3, 23: 3, 44: 0}),
    ("2.4", {0: 8, 3: 9, 8: 8, 9: 6, 10: 3, 11: 6, 12: 4, 13: 4, 14: 4, 15: 5, 16: 3, 18: 3,
             19: 5, 20: 4, 22: 2, 38: 2, 42: 2, 43: 2, 44: 1, 45: 0, 46: 0, 47: 0}),
    ("2.5", {9: 7, 11: 7, 14: 5, 22: 3, 28: 3, 29: 2, 30: 2, 31: 2, 36: 2, 37: 2, 39: 2,
             40: 2, 41: 2}),
    ("2.6", {16: 4, 21: 2, 32: 3, 35: 2, 48: 0, 49: 0}),
    ("2.7", {1: 12, 19: 6, 20: 5, 22: 4, 24: 2, 25: 2, 26: 2, 37: 3, 50: 0, 51: 0, 57: 0}),
    ("2.8", {0: 9, 2: 6, 3: 11, 19: 7, 20: 6, 23: 4, 24: 3, 25: 3, 26: 3, 32: 4, 33: 2, 34: 2,
             48: 1, 49: 1, 55: 0, 60: 0, 61: 0, 64: 0}),
    ("3.0", {2: 7, 9: 8, 10: 4, 64: None, 65: 0, 66: 0}),
    ("3.1", {1: 13, 3: 12}),
    ("3.2", {11: 9, 13: 5, 35: 3}),
    ("3.3", {29: 3, 30: 3, 31: 3, 35: 4, 38: 3, 41: 3, 55: 1, 57: 1, 64: 0}),
    ("3.4", {}),
    ("3.5", {1: 15, 2: 8}),
    ("3.6", {24: 4}),
    ("3.7", {0: 10, 1: 16, 8: 9, 9: 9, 60: 1, 68: 0, 71: 0, 72: 0, 74: 0}),
    ("3.8", {0: 11, 10: 5, 16: 5, 22: 5, 24: 5, 25: 4, 26: 4, 28: 4, 66: 1, 69: 0, 75: 0}),
    ("3.9", {1: 17, 2: 9, 10: 6, 18: 4, 55: 2, 80: 0, 81: 0}),
    ("4.0", {0: 12, 2: 10, 3: 13, 15: 6, 26: 5, 28: 5, 57: 2, 60: 2, 68: 1, 69: 1}),
    ("4.1", {0: 13, 1: 18, 45: 1, 66: 2, 74: 1, 76: 1, 77: 1, 78: 1, 79: 1, 90: 0, 91: 0,
             92: 0}),
    ("4.2", {2: 11, 8: 10, 9: 10, 78: 2, 79: 2, 80: 1, 88: 0, 89: 0, 90: 1}),
    ("4.3", {35: 5}),
)

RELEASES: tuple[str, ...] = tuple(name for name, _ in _HISTORY)


def normalize(name: str) -> str | None:
    """The release ``name`` means ("2.3.1" -> "2.3", "0.10.2.1" -> "0.10.2", "0.10" ->
    "0.10.0"), or None when it names no release in the table."""
    parts = name.strip().split(".")
    if not all(p.isdigit() for p in parts) or len(parts) < 2:
        return None
    numbers = [str(int(p)) for p in parts]
    if numbers[:2] == ["0", "10"]:
        key = "0.10." + (numbers[2] if len(numbers) > 2 else "0")
    else:
        key = ".".join(numbers[:2])
    return key if key in RELEASES else None


def check(value: object, setting: str = "api_version") -> str:
    """``value`` if it is "auto" or a release the table knows; else ConfigError listing them."""
    if isinstance(value, str) and (value.strip() == AUTO or normalize(value) is not None):
        return value.strip()
    raise ConfigError(
        f"{setting} must be {AUTO!r} (negotiate with each broker) or a Kafka release groupkit"
        f" knows the API versions of: {', '.join(RELEASES)}; not {value!r}")


@cache
def caps(release: str) -> dict[int, int]:
    """API key -> the highest version ``release`` speaks, for every API it has."""
    key = normalize(release)
    if key is None:
        check(release)  # raises, naming the releases
    versions: dict[int, int] = {}
    for name, changes in _HISTORY:
        for api, version in changes.items():
            if version is None:
                versions.pop(api, None)
            else:
                versions[api] = version
        if name == key:
            break
    return versions


def first_release(api_key: int, version: int = 0) -> str | None:
    """The oldest release that speaks ``api_key`` at ``version`` or higher (None: none does)."""
    for name in RELEASES:
        if caps(name).get(api_key, -1) >= version:
            return name
    return None


def newest_below(api_key: int, version: int) -> str | None:
    """The newest release that speaks ``api_key`` but only below ``version`` (None: none)."""
    for name in reversed(RELEASES):
        top = caps(name).get(api_key)
        if top is not None and top < version:
            return name
    return None
