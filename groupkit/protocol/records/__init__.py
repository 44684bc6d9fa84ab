"""Kafka record batches (magic 2) and legacy message sets (magic 0 and 1), read and written.

One module per job: values (Record, RecordBatch), batch_read and batch_write (magic 2), legacy
(magic 0/1), control (markers and read_committed filtering), reader (walking a Fetch response's
record set). This module is the public entry.
"""

from groupkit.protocol.records.batch_write import encode_batch, encode_rows
from groupkit.protocol.records.control import (
    control_type,
    encode_control_batch,
    filter_aborted,
)
from groupkit.protocol.records.legacy import encode_message_set
from groupkit.protocol.records.reader import decode_batches, decode_records
from groupkit.protocol.records.values import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    NO_TIMESTAMP,
    TIMESTAMP_CREATE,
    TIMESTAMP_LOG_APPEND,
    Header,
    Record,
    RecordBatch,
    RecordInput,
    Row,
)

__all__ = [
    "CONTROL_ABORT", "CONTROL_COMMIT", "NO_TIMESTAMP", "TIMESTAMP_CREATE", "TIMESTAMP_LOG_APPEND",
    "Header", "Record", "RecordBatch", "RecordInput", "Row", "control_type", "decode_batches", "decode_records",
    "encode_batch", "encode_control_batch", "encode_message_set", "encode_rows", "filter_aborted",
]
