"""Transaction API bytes written by confluent-kafka and kafka-python, decoded by groupkit.

tests/fixtures/txn_bytes.json was captured on the wire by tests/fixtures/capture_txn_bytes.py:
each peer's transactional producer (init, a committed transaction with offsets, an aborted one)
through a recording proxy in front of Tansu. Every frame decodes strictly and encodes back to
the same bytes; the facts a transactional producer relies on are checked in them (the produce
batches carry the id and epoch InitProducerId gave, sequences from 0 per partition, the
transactional bit; TxnOffsetCommit v3 carries the group membership). The answers are Tansu's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groupkit.protocol.headers import (
    decode_request_frame,
    decode_response_frame,
    encode_request_frame,
)
from groupkit.protocol.messages.init_producer_id import InitProducerIdRequest
from groupkit.protocol.messages.produce import ProduceRequest
from groupkit.protocol.messages.txn import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
    EndTxnRequest,
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from groupkit.protocol.records import decode_batches, encode_rows
from groupkit.protocol.registry import request_class

FIXTURE = Path(__file__).parents[1] / "fixtures" / "txn_bytes.json"
CAPTURES: list[dict[str, Any]] = json.loads(FIXTURE.read_text())["captures"]
EXCHANGES = [(c["client"], i, e) for c in CAPTURES for i, e in enumerate(c["exchanges"])]


def _requests(client: str, api_key: int) -> list[tuple[int, Any]]:
    capture = next(c for c in CAPTURES if c["client"] == client)
    out = []
    for e in capture["exchanges"]:
        if e["api_key"] == api_key:
            _, body = decode_request_frame(bytes.fromhex(e["request"]))
            out.append((e["api_version"], body))
    return out


def _response(client: str, api_key: int) -> Any:
    capture = next(c for c in CAPTURES if c["client"] == client)
    e = next(e for e in capture["exchanges"] if e["api_key"] == api_key)
    return decode_response_frame(bytes.fromhex(e["response"]), request_class(api_key).Response,
                                 e["api_version"], strict=True)[1]


def test_fixture_has_every_transaction_api_from_each_client() -> None:
    for capture in CAPTURES:
        keys = {e["api_key"] for e in capture["exchanges"]}
        assert {0, 10, 22, 24, 25, 26, 28} <= keys, capture["client"]


@pytest.mark.parametrize("client,index,exchange", EXCHANGES,
                         ids=[f"{c}-{i}-key{e['api_key']}v{e['api_version']}"
                              for c, i, e in EXCHANGES])
def test_frames_decode_strictly_and_encode_back(client: str, index: int,
                                                exchange: dict[str, Any]) -> None:
    frame = bytes.fromhex(exchange["request"])
    header, body = decode_request_frame(frame)
    assert header.api_version == exchange["api_version"]
    again = encode_request_frame(body, header.api_version, header.correlation_id,
                                 header.client_id)
    assert again[4:] == frame
    cls = request_class(exchange["api_key"]).Response
    answer = bytes.fromhex(exchange["response"])
    correlation_id, response = decode_response_frame(answer, cls, header.api_version, strict=True)
    assert correlation_id == header.correlation_id
    assert response.encode(header.api_version) == answer[len(answer) - len(
        response.encode(header.api_version)):]


@pytest.mark.parametrize("client", [c["client"] for c in CAPTURES])
def test_produce_batches_carry_the_producer_state(client: str) -> None:
    init = _response(client, 22)
    assert init.error_code == 0 and init.producer_id >= 0
    produced = _requests(client, 0)
    txn_id = _requests(client, 22)[0][1].transactional_id
    next_sequence: dict[tuple[str, int], int] = {}
    for _version, request in produced:
        assert isinstance(request, ProduceRequest)
        assert request.transactional_id == txn_id
        for topic in request.topic_data:
            for part in topic.partition_data:
                assert part.records is not None
                for batch in decode_batches(part.records):
                    tp = (topic.name, part.index)
                    assert batch.is_transactional
                    assert (batch.producer_id, batch.producer_epoch) == (
                        init.producer_id, init.producer_epoch)
                    assert batch.base_sequence == next_sequence.get(tp, 0)
                    next_sequence[tp] = batch.base_sequence + len(batch.records)
                    # groupkit's writer stamps the same header for the same rows.
                    rows = [(r.key, r.value, r.headers or None, r.timestamp)
                            for r in batch.records]
                    ours = decode_batches(encode_rows(
                        rows, compression=batch.compression, producer_id=batch.producer_id,
                        producer_epoch=batch.producer_epoch,
                        base_sequence=batch.base_sequence, transactional=True))[0]
                    assert (ours.producer_id, ours.producer_epoch, ours.base_sequence,
                            ours.is_transactional) == (batch.producer_id, batch.producer_epoch,
                                                       batch.base_sequence, True)


@pytest.mark.parametrize("client", [c["client"] for c in CAPTURES])
def test_transaction_requests_name_the_producer(client: str) -> None:
    init = _response(client, 22)
    (_, request), = _requests(client, 22)[:1]
    assert isinstance(request, InitProducerIdRequest)
    assert request.transactional_id and request.transaction_timeout_ms > 0
    pid = (init.producer_id, init.producer_epoch)
    adds = [r for _, r in _requests(client, 24)]
    assert adds and all(isinstance(r, AddPartitionsToTxnRequest) for r in adds)
    assert all((r.v3_and_below_producer_id, r.v3_and_below_producer_epoch) == pid
               for r in adds)
    (_, offsets), = _requests(client, 25)
    assert isinstance(offsets, AddOffsetsToTxnRequest)
    assert (offsets.producer_id, offsets.producer_epoch) == pid
    ends = [r for _, r in _requests(client, 26)]
    assert all(isinstance(r, EndTxnRequest) for r in ends)
    assert [r.committed for r in ends] == [True, False]
    (version, commit), = _requests(client, 28)
    assert isinstance(commit, TxnOffsetCommitRequest) and version == 3
    assert commit.group_id == offsets.group_id
    assert (commit.producer_id, commit.producer_epoch) == pid


@pytest.mark.parametrize("client", [c["client"] for c in CAPTURES])
def test_transaction_coordinator_is_found_by_key_type_1(client: str) -> None:
    found = [r for _, r in _requests(client, 10)]
    txn_id = _requests(client, 22)[0][1].transactional_id
    kinds = {(r.key or (r.coordinator_keys or [""])[0], r.key_type) for r in found}
    assert (txn_id, 1) in kinds


def test_our_request_bytes_equal_the_peers() -> None:
    """Requests groupkit builds from the transaction's values are, byte for byte, what
    kafka-python sent for them (field order and widths checked against a real client)."""
    capture = next(c for c in CAPTURES if c["client"] == "kafka-python")
    init = _response("kafka-python", 22)
    pid, epoch = init.producer_id, init.producer_epoch
    txn, group = "cap-kafka-python", "txn-group"
    ours = {
        22: [InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=60000)],
        24: [AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=txn, v3_and_below_producer_id=pid,
                v3_and_below_producer_epoch=epoch,
                v3_and_below_topics=[AddPartitionsToTxnTopic(name="txn-out", partitions=p)])
             for p in ([0, 1], [1])],
        25: [AddOffsetsToTxnRequest(transactional_id=txn, producer_id=pid,
                                    producer_epoch=epoch, group_id=group)],
        26: [EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=epoch,
                           committed=c) for c in (True, False)],
        28: [TxnOffsetCommitRequest(
            transactional_id=txn, group_id=group, producer_id=pid, producer_epoch=epoch,
            generation_id=-1, member_id="", group_instance_id=None,
            topics=[TxnOffsetCommitRequestTopic(name="txn-out", partitions=[
                TxnOffsetCommitRequestPartition(partition_index=1, committed_offset=5,
                                                committed_leader_epoch=-1,
                                                committed_metadata="")])])],
    }
    for api_key, built in ours.items():
        sent = [e for e in capture["exchanges"] if e["api_key"] == api_key]
        assert len(sent) == len(built)
        for e, request in zip(sent, built, strict=True):
            frame = bytes.fromhex(e["request"])
            header, _ = decode_request_frame(frame)
            assert encode_request_frame(request, header.api_version, header.correlation_id,
                                        header.client_id)[4:] == frame, api_key
