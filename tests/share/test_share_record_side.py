"""The record side of share groups, sans-IO: acknowledgement batches, share sessions (epochs,
full and incremental ShareFetch) and the acquired-records ledger."""

from __future__ import annotations

import uuid

import pytest

from groupkit.errors import ErrorCode, IllegalStateError
from groupkit.protocol.messages.share_fetch import (
    ACK_ACCEPT,
    ACK_GAP,
    ACK_REJECT,
    ACK_RELEASE,
    ACK_RENEW,
    AcknowledgementBatch,
    AcquiredRecords,
)
from groupkit.share import (
    AcknowledgeType,
    FetchSettings,
    ShareLedger,
    SharePartition,
    ShareSession,
    ack_batches,
    next_epoch,
)
from groupkit.share.offsets import OffsetRuns

TOPIC = uuid.UUID(int=7)
P0 = SharePartition("orders", 0, TOPIC)
P1 = SharePartition("orders", 1, TOPIC)
P2 = SharePartition("orders", 2, TOPIC)


def _batch(first: int, last: int, *types: int) -> AcknowledgementBatch:
    return AcknowledgementBatch(first_offset=first, last_offset=last,
                                acknowledge_types=list(types))


# --- acknowledgement batches -------------------------------------------------------------------


def test_a_contiguous_run_of_one_type_is_one_batch_with_one_type() -> None:
    assert ack_batches(dict.fromkeys(range(5, 105), ACK_ACCEPT)) == [_batch(5, 104, ACK_ACCEPT)]


def test_offsets_with_a_hole_go_in_two_batches() -> None:
    acks = {1: ACK_ACCEPT, 2: ACK_ACCEPT, 7: ACK_REJECT}
    assert ack_batches(acks) == [_batch(1, 2, ACK_ACCEPT), _batch(7, 7, ACK_REJECT)]


def test_mixed_types_are_spelled_per_offset_and_long_runs_get_their_own_batch() -> None:
    acks = {0: ACK_ACCEPT, 1: ACK_RELEASE, 2: ACK_GAP}
    acks.update(dict.fromkeys(range(3, 20), ACK_ACCEPT))
    acks[20] = ACK_REJECT
    assert ack_batches(acks) == [
        _batch(0, 2, ACK_ACCEPT, ACK_RELEASE, ACK_GAP),
        _batch(3, 19, ACK_ACCEPT),
        _batch(20, 20, ACK_REJECT),
    ]


def test_every_offset_keeps_its_type_whatever_the_split() -> None:
    kinds = [ACK_ACCEPT, ACK_RELEASE, ACK_REJECT, ACK_GAP]
    acks = {o: kinds[(o * 7 // 5) % 4] for o in range(200) if o % 23}
    seen: dict[int, int] = {}
    for b in ack_batches(acks):
        span = range(b.first_offset, b.last_offset + 1)
        types = b.acknowledge_types * len(span) if len(b.acknowledge_types) == 1 \
            else b.acknowledge_types
        assert len(types) == len(span)
        seen.update(zip(span, types, strict=True))
    assert seen == acks


def test_acknowledge_types_are_the_wire_ids() -> None:
    assert [int(t) for t in AcknowledgeType] == [ACK_ACCEPT, ACK_RELEASE, ACK_REJECT, 4]


# --- share sessions ----------------------------------------------------------------------------


def _session() -> ShareSession:
    return ShareSession(group_id="g", member_id="m", node_id=1)


def _named(request) -> set[tuple[int, int]]:
    return {(t.topic_id.int, p.partition_index) for t in request.topics for p in t.partitions}


def test_a_session_opens_at_epoch_zero_with_every_partition_then_names_only_changes() -> None:
    s = _session()
    first = s.fetch([P0, P1], {}, FetchSettings())
    assert first.share_session_epoch == 0 and _named(first) == {(7, 0), (7, 1)}
    assert s.acknowledge({P0: [_batch(1, 1, ACK_ACCEPT)]}) is None  # only a fetch opens one
    assert s.answered(0)
    same = s.fetch([P0, P1], {}, FetchSettings())
    assert same.share_session_epoch == 1 and same.topics == [] \
        and same.forgotten_topics_data == []
    s.answered(0)
    moved = s.fetch([P1, P2], {P0: [_batch(4, 4, ACK_ACCEPT)]}, FetchSettings())
    assert moved.share_session_epoch == 2
    assert _named(moved) == {(7, 0), (7, 2)}  # P2 added; P0 only for its acknowledgement
    assert [(f.topic_id, f.partitions) for f in moved.forgotten_topics_data] == [(TOPIC, [0])]
    acked = next(p for t in moved.topics for p in t.partitions if p.partition_index == 0)
    assert acked.acknowledgement_batches == [_batch(4, 4, ACK_ACCEPT)]
    assert s.partitions == {P1, P2}


def test_acknowledgements_ride_on_a_partition_the_fetch_names() -> None:
    s = _session()
    s.fetch([P0], {}, FetchSettings())
    s.answered(0)
    request = s.fetch([P0], {P0: [_batch(0, 9, ACK_ACCEPT)]}, FetchSettings())
    [topic] = request.topics
    [part] = topic.partitions
    assert part.partition_index == 0 and part.acknowledgement_batches == [
        _batch(0, 9, ACK_ACCEPT)]


def test_a_recreated_topic_is_forgotten_and_added_again() -> None:
    s = _session()
    s.fetch([P0], {}, FetchSettings())
    s.answered(0)
    again = SharePartition("orders", 0, uuid.UUID(int=8))
    request = s.fetch([again], {}, FetchSettings())
    assert _named(request) == {(8, 0)}
    assert [f.topic_id for f in request.forgotten_topics_data] == [TOPIC]


@pytest.mark.parametrize("code", [ErrorCode.SHARE_SESSION_NOT_FOUND,
                                  ErrorCode.INVALID_SHARE_SESSION_EPOCH])
def test_a_lost_session_starts_over_with_the_full_list(code: int) -> None:
    s = _session()
    s.fetch([P0, P1], {}, FetchSettings())
    s.answered(0)
    assert not s.answered(code)
    assert s.epoch == 0
    assert _named(s.fetch([P0, P1], {}, FetchSettings())) == {(7, 0), (7, 1)}


def test_another_error_moves_the_epoch_on_and_a_failure_resets_it() -> None:
    s = _session()
    s.fetch([P0], {}, FetchSettings())
    assert not s.answered(ErrorCode.UNKNOWN_SERVER_ERROR)
    assert s.epoch == 1
    s.failed()
    assert s.epoch == 0


def test_closing_sends_epoch_minus_one_with_the_last_acknowledgements() -> None:
    s = _session()
    s.fetch([P0], {}, FetchSettings())
    s.answered(0)
    s.close()
    request = s.acknowledge({P0: [_batch(3, 3, ACK_RELEASE)]})
    assert request is not None and request.share_session_epoch == -1
    with pytest.raises(IllegalStateError):
        s.fetch([P0], {}, FetchSettings())


def test_a_share_acknowledge_carrying_a_renew_says_so() -> None:
    s = _session()
    s.fetch([P0], {}, FetchSettings())
    s.answered(0)
    plain = s.acknowledge({P0: [_batch(3, 4, ACK_ACCEPT)]})
    renewing = s.acknowledge({P0: [_batch(3, 4, ACK_ACCEPT, ACK_RENEW)]})
    assert plain is not None and not plain.is_renew_ack
    assert renewing is not None and renewing.is_renew_ack


def test_epochs_wrap_to_one_and_the_final_epoch_stays() -> None:
    assert next_epoch(0) == 1 and next_epoch(0x7FFFFFFF) == 1 and next_epoch(-1) == -1


# --- the ledger --------------------------------------------------------------------------------


def _ranges(*spec: tuple[int, int, int]) -> list[AcquiredRecords]:
    return [AcquiredRecords(first_offset=a, last_offset=b, delivery_count=c) for a, b, c in spec]


def test_acquired_offsets_without_a_record_are_gaps_acknowledged_at_once() -> None:
    ledger = ShareLedger()
    got = ledger.acquire(P0, _ranges((10, 14, 1)), present={10, 11, 13}, now=0, lock_s=30)
    assert got.deliver == {10: 1, 11: 1, 13: 1} and got.gaps == [12, 14]
    sent = ledger.take()
    assert sent.acks == {P0: {12: ACK_GAP, 14: ACK_GAP}}


def test_acknowledge_then_take_then_answer() -> None:
    ledger = ShareLedger()
    ledger.acquire(P0, _ranges((0, 2, 1)), present={0, 1, 2}, now=0, lock_s=30)
    ledger.acknowledge(P0, 0, AcknowledgeType.ACCEPT)
    ledger.acknowledge(P0, 1, AcknowledgeType.RELEASE)
    ledger.acknowledge(P0, 1, AcknowledgeType.REJECT)  # changed before it was sent
    assert ledger.held() == {P0: [2]}
    sent = ledger.take([P0])
    assert sent.acks == {P0: {0: ACK_ACCEPT, 1: ACK_REJECT}}
    with pytest.raises(IllegalStateError, match="already sent"):
        ledger.acknowledge(P0, 0, AcknowledgeType.ACCEPT)
    assert ledger.answered(sent.token) == {P0: {0: ACK_ACCEPT, 1: ACK_REJECT}}
    assert ledger.answered(sent.token) == {}
    assert ledger.counts() == {"acquired": 1, "acknowledged": 0, "sent": 0}


def test_a_renewed_offset_is_held_again_under_the_lock_the_answer_names() -> None:
    ledger = ShareLedger()
    ledger.acquire(P0, _ranges((0, 2, 3)), present={0, 1, 2}, now=0, lock_s=30)
    ledger.acknowledge(P0, 0, AcknowledgeType.RENEW, delivery_count=3)
    ledger.acknowledge(P0, 1, AcknowledgeType.ACCEPT)
    assert ledger.renews([P0]) and not ledger.renews([P1])
    sent = ledger.take()
    assert sent.acks == {P0: {0: ACK_RENEW, 1: ACK_ACCEPT}} and not ledger.renews([P0])
    assert ledger.held() == {P0: [2]}
    ledger.answered(sent.token, lock_until=100)
    assert ledger.held() == {P0: [0, 2]}
    assert ledger.expire(30) == {P0: [2]} and ledger.next_expiry() == 100
    assert ledger.expire(100) == {P0: [0]}
    # Held again, it is acknowledged like any record, with its delivery count kept.
    ledger.acknowledge(P0, 0, AcknowledgeType.RELEASE)
    assert ledger.take().acks == {P0: {0: ACK_RELEASE}}


def test_a_renewal_refused_or_unanswered_leaves_nothing_held() -> None:
    ledger = ShareLedger()
    ledger.acquire(P0, _ranges((0, 0, 1)), present={0}, now=0, lock_s=30)
    ledger.acquire(P1, _ranges((5, 5, 1)), present={5}, now=0, lock_s=30)
    ledger.acknowledge(P0, 0, AcknowledgeType.RENEW, delivery_count=1)
    ledger.acknowledge(P1, 5, AcknowledgeType.RENEW, delivery_count=1)
    ledger.answered(ledger.take().token, lock_until=100, refused=[P1])
    assert ledger.held() == {P0: [0]}
    ledger.acknowledge(P0, 0, AcknowledgeType.RENEW, delivery_count=1)
    ledger.answered(ledger.take().token)  # the request failed: no answer, no renewal
    assert ledger.held() == {}


def test_a_renew_changed_before_it_was_sent_is_an_ordinary_acknowledgement() -> None:
    ledger = ShareLedger()
    ledger.acquire(P0, _ranges((0, 0, 1)), present={0}, now=0, lock_s=30)
    with pytest.raises(IllegalStateError, match="delivery count"):
        ledger.acknowledge(P0, 0, AcknowledgeType.RENEW)
    ledger.acknowledge(P0, 0, AcknowledgeType.RENEW, delivery_count=1)
    ledger.acknowledge(P0, 0, AcknowledgeType.ACCEPT)
    assert not ledger.renews([P0])
    ledger.answered(ledger.take().token, lock_until=100)
    assert ledger.held() == {}


def test_a_record_never_delivered_cannot_be_acknowledged() -> None:
    with pytest.raises(IllegalStateError, match="not delivered"):
        ShareLedger().acknowledge(P1, 5, AcknowledgeType.ACCEPT)


def test_an_offset_still_held_is_not_delivered_twice_but_a_redelivery_is() -> None:
    ledger = ShareLedger()
    ledger.acquire(P0, _ranges((0, 1, 1)), present={0, 1}, now=0, lock_s=30)
    again = ledger.acquire(P0, _ranges((0, 1, 1)), present={0, 1}, now=1, lock_s=30)
    assert again.deliver == {} and again.duplicates == 2
    ledger.acknowledge(P0, 0, AcknowledgeType.RELEASE)
    sent = ledger.take()
    still = ledger.acquire(P0, _ranges((0, 0, 2)), present={0}, now=2, lock_s=30)
    assert still.deliver == {} and still.duplicates == 1  # its release is not answered yet
    ledger.answered(sent.token)
    assert ledger.acquire(P0, _ranges((0, 0, 2)), present={0}, now=3, lock_s=30).deliver \
        == {0: 2}


def test_implicit_accept_takes_only_what_is_still_held() -> None:
    ledger = ShareLedger()
    ledger.acquire(P0, _ranges((0, 3, 1)), present={0, 1, 2, 3}, now=0, lock_s=30)
    ledger.acknowledge(P0, 1, AcknowledgeType.REJECT)
    assert ledger.acknowledge_all(P0, [0, 1, 2], AcknowledgeType.ACCEPT) == 2
    assert ledger.take().acks == {P0: {0: ACK_ACCEPT, 1: ACK_REJECT, 2: ACK_ACCEPT}}
    assert ledger.held() == {P0: [3]}


def test_locks_that_run_out_are_reported_once() -> None:
    ledger = ShareLedger()
    ledger.acquire(P0, _ranges((0, 1, 1)), present={0, 1}, now=10, lock_s=30)
    ledger.acquire(P1, _ranges((5, 5, 3)), present={5}, now=20, lock_s=30)
    assert ledger.next_expiry() == 40
    assert ledger.expire(39.9) == {}
    ledger.acknowledge(P0, 1, AcknowledgeType.ACCEPT)
    assert ledger.expire(40) == {P0: [0]}
    assert ledger.expire(45) == {}
    assert ledger.next_expiry() == 50
    assert ledger.expire(50) == {P1: [5]}
    assert ledger.next_expiry() is None


def test_the_next_lock_skips_acknowledged_offsets_and_those_acquired_again() -> None:
    ledger = ShareLedger()
    ledger.acquire(P0, _ranges((0, 9, 1)), present=set(range(10)), now=0, lock_s=30)
    assert ledger.acknowledge_all(P0, range(5), AcknowledgeType.ACCEPT) == 5
    assert ledger.next_expiry() == 30  # offsets 5-9 are still held under the first lock
    ledger.acknowledge_all(P0, range(5, 10), AcknowledgeType.RELEASE)
    ledger.answered(ledger.take().token)
    ledger.acquire(P0, _ranges((7, 7, 2)), present={7}, now=10, lock_s=30)
    # 7 is held again, under the second answer's lock: the first lock no longer counts.
    assert ledger.next_expiry() == 40
    assert ledger.expire(39) == {} and ledger.expire(40) == {P0: [7]}


def test_an_answer_overlapping_offsets_in_flight_delivers_only_the_new_ones() -> None:
    ledger = ShareLedger()
    got = ledger.acquire(P0, _ranges((0, 499, 3)), present=set(range(500)), now=0, lock_s=30)
    assert got.deliver == dict.fromkeys(range(500), 3) and got.gaps == []
    ledger.acknowledge_all(P0, range(500), AcknowledgeType.ACCEPT)
    sent = ledger.take()  # the acceptances are on their way, not answered
    again = ledger.acquire(P0, _ranges((499, 501, 3)), present={499, 500, 501}, now=1,
                           lock_s=30)
    assert again.deliver == {500: 3, 501: 3} and again.duplicates == 1
    ledger.answered(sent.token)


def test_dropped_offsets_are_forgotten_unacknowledged() -> None:
    ledger = ShareLedger()
    ledger.acquire(P2, _ranges((0, 4, 1)), present=set(range(5)), now=0, lock_s=30)
    ledger.drop(P2, [3, 4])
    assert ledger.held() == {P2: [0, 1, 2]} and not ledger.has_pending()


def test_implicit_accept_takes_any_iterable_of_offsets() -> None:
    ledger = ShareLedger()
    ledger.acquire(P0, _ranges((0, 2, 1)), present={0, 1, 2}, now=0, lock_s=30)
    assert ledger.acknowledge_all(P0, iter([2, 0, 7]), AcknowledgeType.RELEASE) == 2
    assert ledger.take().acks == {P0: {2: ACK_RELEASE, 0: ACK_RELEASE}}
    assert ledger.held() == {P0: [1]}


# --- the ledger's runs: an answer's clean acquired range kept whole --------------------------


def test_an_explicit_acknowledgement_inside_a_run_keeps_both_sides_under_its_lock() -> None:
    ledger = ShareLedger()
    got = ledger.acquire(P0, _ranges((10, 19, 1)), present=None, now=0, lock_s=30)
    assert list(got.deliver) == list(range(10, 20)) and 15 in got.deliver and 20 not in got.deliver
    ledger.acknowledge(P0, 15, AcknowledgeType.REJECT)
    assert ledger.is_held(P0, 14) and not ledger.is_held(P0, 15) and ledger.is_held(P0, 16)
    assert ledger.acknowledge_all(P0, range(10, 13), AcknowledgeType.ACCEPT) == 3
    assert ledger.held() == {P0: [13, 14, 16, 17, 18, 19]}
    assert ledger.counts() == {"acquired": 6, "acknowledged": 4, "sent": 0}
    assert ledger.next_expiry() == 30
    assert ledger.expire(30) == {P0: [13, 14, 16, 17, 18, 19]}
    assert ledger.take().acks == {P0: {10: ACK_ACCEPT, 11: ACK_ACCEPT, 12: ACK_ACCEPT,
                                       15: ACK_REJECT}}


def test_a_redelivery_of_an_offset_held_in_a_run_is_delivered_under_its_new_lock() -> None:
    ledger = ShareLedger()
    ledger.acquire(P0, _ranges((0, 4, 1)), present=None, now=0, lock_s=30)
    again = ledger.acquire(P0, _ranges((2, 3, 2), (4, 4, 1)), present={2, 3, 4}, now=10,
                           lock_s=30)
    assert again.deliver == {2: 2, 3: 2} and again.duplicates == 1  # 4: the same delivery
    ledger.acknowledge_all(P0, range(0, 2), AcknowledgeType.ACCEPT)
    ledger.acknowledge(P0, 4, AcknowledgeType.ACCEPT)
    assert ledger.next_expiry() == 40  # only 2 and 3 are left, under the second lock
    assert ledger.expire(40) == {P0: [2, 3]}


def test_an_implicit_accept_across_runs_and_single_offsets() -> None:
    ledger = ShareLedger()
    ledger.acquire(P0, _ranges((0, 2, 1)), present={0, 2}, now=0, lock_s=30)  # 1: a gap
    ledger.acquire(P0, _ranges((3, 5, 1)), present=None, now=0, lock_s=30)
    assert ledger.acknowledge_all(P0, range(0, 5), AcknowledgeType.ACCEPT) == 4
    assert ledger.take().acks == {P0: {1: ACK_GAP, 0: ACK_ACCEPT, 2: ACK_ACCEPT, 3: ACK_ACCEPT,
                                       4: ACK_ACCEPT}}
    assert ledger.held() == {P0: [5]}
    assert ledger.acknowledge_all(P0, [5, 9], AcknowledgeType.RELEASE) == 1
    assert ledger.held() == {}


def test_a_polls_acceptances_go_as_one_batch_and_a_changed_one_splits_it() -> None:
    ledger = ShareLedger()
    ledger.acquire(P0, _ranges((0, 499, 1)), present=None, now=0, lock_s=30)
    ledger.acknowledge_all(P0, range(0, 300), AcknowledgeType.ACCEPT)
    ledger.acknowledge_all(P0, range(300, 500), AcknowledgeType.ACCEPT)
    assert ack_batches(ledger.take().acks[P0]) == [_batch(0, 499, ACK_ACCEPT)]
    ledger.acquire(P0, _ranges((500, 599, 1)), present=None, now=0, lock_s=30)
    ledger.acknowledge_all(P0, range(500, 600), AcknowledgeType.ACCEPT)
    # Acquired again while its acceptance waits unsent: not a new delivery.
    again = ledger.acquire(P0, _ranges((550, 550, 1)), present=None, now=1, lock_s=30)
    assert again.deliver == {} and again.duplicates == 1
    ledger.acknowledge(P0, 550, AcknowledgeType.RELEASE)  # changed before it was sent
    acks = ledger.take().acks[P0]
    assert acks == {**dict.fromkeys(range(500, 600), ACK_ACCEPT), 550: ACK_RELEASE}
    assert ack_batches(acks) == [_batch(500, 549, ACK_ACCEPT),
                                 _batch(550, 550, ACK_RELEASE),
                                 _batch(551, 599, ACK_ACCEPT)]
    assert ledger.counts() == {"acquired": 0, "acknowledged": 0, "sent": 600}


def test_offset_runs_read_as_a_mapping_in_offset_order() -> None:
    runs = OffsetRuns([(5, 7, ACK_ACCEPT), (0, 1, ACK_ACCEPT)], {3: ACK_REJECT})
    assert list(runs) == [0, 1, 3, 5, 6, 7] and len(runs) == 6
    assert runs == {0: 1, 1: 1, 3: 3, 5: 1, 6: 1, 7: 1} and 4 not in runs and 3 in runs
    assert runs.tally() == {ACK_ACCEPT: 5, ACK_REJECT: 1}
    assert runs.distinct() == {ACK_ACCEPT, ACK_REJECT}
    with pytest.raises(KeyError):
        runs[4]


def test_polls_taking_part_of_a_run_and_explicit_acknowledgements_in_order() -> None:
    ledger = ShareLedger()
    ledger.acquire(P0, _ranges((0, 9, 1)), present=None, now=0, lock_s=30)
    assert ledger.acknowledge_all(P0, range(0, 3), AcknowledgeType.ACCEPT) == 3  # trims it
    assert ledger.acknowledge_all(P0, range(5, 7), AcknowledgeType.ACCEPT) == 2  # splits it
    assert ledger.held() == {P0: [3, 4, 7, 8, 9]}
    for offset in (3, 4, 7, 8, 9):
        ledger.acknowledge(P0, offset, AcknowledgeType.RELEASE)
    assert ledger.held() == {} and ledger.next_expiry() is None
    assert ack_batches(ledger.take().acks[P0]) == [
        _batch(0, 9, ACK_ACCEPT, ACK_ACCEPT, ACK_ACCEPT, ACK_RELEASE, ACK_RELEASE, ACK_ACCEPT,
               ACK_ACCEPT, ACK_RELEASE, ACK_RELEASE, ACK_RELEASE)]
