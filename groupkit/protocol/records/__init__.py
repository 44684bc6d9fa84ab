"""Kafka record batches (magic 2) and legacy message sets (magic 0 and 1), read and written.

One module per job: values (Record, RecordBatch), batch_read and batch_write (magic 2), legacy
(magic 0/1), control (markers and read_committed filtering), reader (walking a Fetch response's
record set). This module is the public entry; its names load on first use (PEP 562), so a
producer, which only writes batches, does not load the readers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from groupkit._lazy import lazy_exports

if TYPE_CHECKING:
    from groupkit.protocol.records.batch_write import (
        encode_batch as encode_batch,
        encode_rows as encode_rows,
    )
    from groupkit.protocol.records.control import (
        control_type as control_type,
        encode_control_batch as encode_control_batch,
        filter_aborted as filter_aborted,
    )
    from groupkit.protocol.records.legacy import encode_message_set as encode_message_set
    from groupkit.protocol.records.reader import (
        decode_batches as decode_batches,
        decode_records as decode_records,
    )
    from groupkit.protocol.records.values import (
        CONTROL_ABORT as CONTROL_ABORT,
        CONTROL_COMMIT as CONTROL_COMMIT,
        NO_TIMESTAMP as NO_TIMESTAMP,
        TIMESTAMP_CREATE as TIMESTAMP_CREATE,
        TIMESTAMP_LOG_APPEND as TIMESTAMP_LOG_APPEND,
        Header as Header,
        Record as Record,
        RecordBatch as RecordBatch,
        RecordInput as RecordInput,
        Row as Row,
    )

#: Home module -> the names it provides (the TYPE_CHECKING imports repeat them).
_EXPORTS: dict[str, tuple[str, ...]] = {
    "groupkit.protocol.records.batch_write": ("encode_batch", "encode_rows"),
    "groupkit.protocol.records.control": ("control_type", "encode_control_batch",
                                          "filter_aborted"),
    "groupkit.protocol.records.legacy": ("encode_message_set",),
    "groupkit.protocol.records.reader": ("decode_batches", "decode_records"),
    "groupkit.protocol.records.values": (
        "CONTROL_ABORT", "CONTROL_COMMIT", "NO_TIMESTAMP", "TIMESTAMP_CREATE",
        "TIMESTAMP_LOG_APPEND", "Header", "Record", "RecordBatch", "RecordInput", "Row",
    ),
}
_HOMES = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_HOMES)

__getattr__, __dir__ = lazy_exports(globals(), _HOMES)
