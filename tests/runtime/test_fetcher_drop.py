"""Seek, pause and revoke while a partition holds a raw answer that take() has only partly
decoded (issue 15): the raw bytes and the decoded window go, the byte budget is given back, and
the next Fetch asks from the new position. Scripted connection of test_fetcher, no broker."""

from __future__ import annotations

from typing import Any

import pytest

from groupkit.protocol.records import encode_batch
from tests.runtime.test_fetcher import TP, answer, fetched, start


def batches(first: int, count: int, per: int = 10) -> bytes:
    """``count`` batches of ``per`` records each, offsets from ``first`` on."""
    return b"".join(
        encode_batch([(None, b"%d" % (first + b * per + i)) for i in range(per)],
                     base_offset=first + b * per)
        for b in range(count))


def held(fetcher: Any) -> tuple[int, int, int]:
    """(decoded records not yet taken, raw bytes buffered) of TP, and the fetcher's total."""
    part = fetcher._parts[TP]
    return (sum(len(c.records) - c.index for c in part.chunks), part.buffered,
            fetcher._buffered)


@pytest.mark.parametrize("how", ["seek", "pause", "revoke"])
def test_a_partly_decoded_raw_answer_is_dropped_by(how: str) -> None:
    fetcher, cluster, woken = start("read_uncommitted")
    try:
        data = batches(0, 10)
        _, future = cluster.conn.next_request(1)
        future.set_result(answer(data, high_watermark=100))
        assert woken.wait(10)
        assert [r.offset for r in fetcher.take(5)] == [0, 1, 2, 3, 4]
        decoded, raw, total = held(fetcher)
        assert decoded == 5 and raw > 0 and total == raw
        if how == "revoke":
            fetcher.assign([])
            assert fetcher._buffered == 0
            assert fetcher.take(5) == []
            return
        if how == "seek":
            fetcher.seek(TP, 42)
        else:
            fetcher.pause([TP])
        assert held(fetcher) == (0, 0, 0)
        assert fetcher.take(5) == []
        woken.clear()
        # The Fetch sent ahead (at 100) left before the drop: its answer is thrown away.
        ahead, late = cluster.conn.next_request(2)
        assert fetched(ahead) == {0: 100}
        late.set_result(answer(batches(100, 1), high_watermark=110))
        if how == "pause":
            fetcher.resume([TP])
        request, again = cluster.conn.next_request(3)
        want = 42 if how == "seek" else 5
        assert fetched(request) == {0: want}
        assert held(fetcher) == (0, 0, 0)
        # From the batch holding ``want`` on: the records before it in that batch are skipped.
        again.set_result(answer(batches(want // 10 * 10, 6 - want // 10), high_watermark=100))
        assert woken.wait(10)
        assert [r.offset for r in fetcher.take(100)] == list(range(want, 60))
    finally:
        fetcher.close(5)
