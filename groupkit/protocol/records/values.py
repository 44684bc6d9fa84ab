"""The record and batch value types every record format reads into or writes from."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from groupkit.protocol import native

TIMESTAMP_CREATE = 0
TIMESTAMP_LOG_APPEND = 1
NO_TIMESTAMP = -1
"""Timestamp of magic-0 messages and of records written without one."""

CONTROL_ABORT = 0
CONTROL_COMMIT = 1
"""Types of the marker a control batch holds (the second int16 of its record key)."""

Header = tuple[str, bytes | None]


@attrs.frozen
class Record:
    """One consumed record. ``timestamp_type`` is 0 (create time) or 1 (log-append time).

    Records read by the C extension, and their header lists, are not tracked by the cyclic
    garbage collector (they hold only ints, bytes and str), so a record put into its own header
    list would never be freed; reference counting frees records as usual. A record it read
    without headers gets its (empty, tracked) list when ``headers`` is first read.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header] = attrs.field(factory=list)
    timestamp_type: int = TIMESTAMP_CREATE


if native.module is not None:
    # The C reader leaves the headers slot of a record without headers empty; this
    # descriptor makes the list when it is first read (csrc/list_slot.c).
    Record.headers = native.module.ListSlot(Record.__dict__["headers"])


@attrs.frozen
class RecordBatch:
    """One batch with its metadata, as a read_committed reader needs it.

    A legacy message-set entry (magic 0/1) appears as a batch of its message(s) with no
    producer state (id/epoch/sequence -1).
    """

    base_offset: int
    last_offset_delta: int
    magic: int
    compression: str | None
    timestamp_type: int
    is_transactional: bool
    is_control: bool
    first_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    partition_leader_epoch: int
    records: list[Record]

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


RecordInput = Record | Sequence[Any]
"""A Record, or a tuple (key, value), (key, value, headers) or (key, value, headers, timestamp)."""

Row = tuple[bytes | None, bytes | None, Sequence[Header] | None, int]
"""A record as :func:`encode_rows` takes it: (key, value, headers or None, timestamp in ms)."""
