"""groupkit's read_committed filter on real Fetch answers of interleaved peer transactions.

tests/fixtures/read_committed_bytes.json holds Tansu's answers to read_committed Fetches from
offsets 0, 2 and 5 of a partition that two confluent-kafka transactional producers wrote
(tests/fixtures/capture_read_committed_bytes.py): producer A's committed records, between them
B's aborted ones (ABORT marker at 4), then A's aborted one at 5 and A's and B's committed ones.
Tansu lists no aborted transactions in its answers; each capture keeps the list Apache Kafka's
broker sends with that answer (``kafka_aborted``), computed from the markers. Fed that list, the
consumer's decoding path hands over exactly the committed records from each offset, taken whole
or one at a time; with Tansu's empty list the aborted ones get through, which is why the live
tests read through tests/support/kafka_fetch_view.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from assignors import TopicPartition
from groupkit.protocol.headers import (
    decode_request_frame,
    decode_response_frame,
    encode_response_frame,
)
from groupkit.protocol.messages.fetch import FetchResponse, FetchResponseAbortedTransaction
from groupkit.protocol.records import decode_batches, filter_aborted
from groupkit.runtime.fetched import read_chunk

FIXTURE = json.loads((Path(__file__).parents[1] / "fixtures" / "read_committed_bytes.json")
                     .read_text())
TP = TopicPartition(FIXTURE["topic"], FIXTURE["partition"])
CAPTURES = {c["fetch_offset"]: c for c in FIXTURE["captures"]}

#: The partition's records in offset order, and the ones a read_committed reader may see.
LOG = [b"A1-0", b"B1-0", b"B1-0b", b"A2-0", b"A3-0", b"end-0"]
COMMITTED = [b"A1-0", b"A3-0", b"end-0"]
#: Where each record sits (markers at 3, 4, 6, 8 and 10).
OFFSETS = {b"A1-0": 0, b"B1-0": 1, b"B1-0b": 2, b"A2-0": 5, b"A3-0": 7, b"end-0": 9}


def _answer(capture: dict[str, Any]) -> Any:
    _, request = decode_request_frame(bytes.fromhex(capture["request"]))
    assert request.isolation_level == 1
    assert request.topics[0].partitions[0].fetch_offset == capture["fetch_offset"]
    _, response = decode_response_frame(bytes.fromhex(capture["response"]), FetchResponse,
                                         capture["api_version"], strict=True)
    return response.responses[0].partitions[0]


def _listed(capture: dict[str, Any]) -> list[FetchResponseAbortedTransaction]:
    return [FetchResponseAbortedTransaction(producer_id=pid, first_offset=first)
            for pid, first in capture["kafka_aborted"]]


def _take_all(offset: int, records: Any, aborted: Any, *, read_committed: bool,
              step: int) -> list[bytes]:
    chunk = read_chunk(TP, offset, records, aborted, check_crcs=True,
                       read_committed=read_committed)
    out: list[bytes] = []
    while piece := chunk.take(step):
        out.extend(r.value for r in piece)
    assert chunk.done and chunk.next_offset == 11
    return out


def _from(offset: int, values: list[bytes]) -> list[bytes]:
    return [v for v in values if OFFSETS[v] >= offset]


@pytest.mark.parametrize("offset", sorted(CAPTURES))
@pytest.mark.parametrize("step", [500, 1])
def test_kafkas_list_filters_exactly_the_aborted_records(offset: int, step: int) -> None:
    capture = CAPTURES[offset]
    part = _answer(capture)
    assert part.last_stable_offset == part.high_watermark == 11
    assert part.aborted_transactions == []  # Tansu's (docs/test-brokers.md)
    listed = _listed(capture)
    values = _take_all(offset, part.records, listed, read_committed=True, step=step)
    assert values == _from(offset, COMMITTED)
    assert [r.value for r in filter_aborted(
        [b for b in decode_batches(part.records) if b.last_offset >= offset],
        [(a.producer_id, a.first_offset) for a in listed])] == _from(offset, COMMITTED)


@pytest.mark.parametrize("offset", sorted(CAPTURES))
def test_read_uncommitted_and_tansus_empty_list_hand_over_everything(offset: int) -> None:
    part = _answer(CAPTURES[offset])
    everything = _from(offset, LOG)
    assert _take_all(offset, part.records, _listed(CAPTURES[offset]), read_committed=False,
                     step=500) == everything
    assert _take_all(offset, part.records, [], read_committed=True, step=500) == everything


def test_the_list_survives_the_wire_at_the_captured_version() -> None:
    """The answer with Kafka's list, encoded and read back at the captured version, is the
    answer the filter above was given."""
    capture = CAPTURES[0]
    version = capture["api_version"]
    correlation_id, response = decode_response_frame(bytes.fromhex(capture["response"]),
                                                     FetchResponse, version)
    topic = response.responses[0]
    filled = attrs.evolve(response, responses=[attrs.evolve(topic, partitions=[attrs.evolve(
        topic.partitions[0], aborted_transactions=_listed(capture))])])
    frame = encode_response_frame(filled, version, correlation_id)[4:]
    _, again = decode_response_frame(frame, FetchResponse, version, strict=True)
    part = again.responses[0].partitions[0]
    assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == \
        [tuple(x) for x in capture["kafka_aborted"]]
    assert _take_all(0, part.records, part.aborted_transactions, read_committed=True,
                     step=500) == COMMITTED
