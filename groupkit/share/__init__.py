"""Share groups (KIP-932) on the record side, sans-IO: share sessions, acknowledgement batches
and the acquired-records bookkeeping. The membership side is ``groupkit.group.share``."""

from groupkit.share.acknowledge import GAP, AcknowledgeType, ack_batches
from groupkit.share.ledger import Acquired, Sent, ShareLedger
from groupkit.share.session import FetchSettings, SharePartition, ShareSession, next_epoch

__all__ = [
    "GAP",
    "AcknowledgeType",
    "Acquired",
    "FetchSettings",
    "Sent",
    "ShareLedger",
    "SharePartition",
    "ShareSession",
    "ack_batches",
    "next_epoch",
]
