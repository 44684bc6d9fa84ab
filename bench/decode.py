"""Record-batch decoding speed: groupkit against kafka-python and aiokafka on the same bytes.

Builds N records (100-byte values, null keys, no headers) in v2 batches of 1,000, uncompressed
and snappy, then times each library turning the bytes into a list of record objects.

    .venv/bin/python bench/decode.py [--records N] [--repeat R] [--no-gc]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable

from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
from kafka.record.memory_records import MemoryRecords as KafkaMemoryRecords

from groupkit.protocol.records import decode_records, encode_batch

BATCH = 1000
VALUE = bytes(range(100))
BASE_TS = 1_700_000_000_000


def build(n: int, compression: str | None) -> bytes:
    """``n`` records in v2 batches of ``BATCH``, as a Fetch response's record set carries them."""
    parts = []
    for start in range(0, n, BATCH):
        count = min(BATCH, n - start)
        rows = [(None, VALUE, None, BASE_TS + start + i) for i in range(count)]
        parts.append(encode_batch(rows, compression=compression, base_offset=start))
    return b"".join(parts)


def with_groupkit(data: bytes) -> list:
    return decode_records(data)


def _with_memory_records(cls: type, data: bytes) -> list:
    out: list = []
    records = cls(data)
    while records.has_next():
        batch = records.next_batch()
        out.extend(batch)
    return out


def with_kafka_python(data: bytes) -> list:
    return _with_memory_records(KafkaMemoryRecords, data)


def with_aiokafka(data: bytes) -> list:
    return _with_memory_records(AioMemoryRecords, data)


def timed(fn: Callable[[bytes], list], data: bytes, n: int, collector: bool) -> float:
    """Seconds ``fn`` takes to decode ``data``, with the garbage collector on or off."""
    gc.collect()
    if not collector:
        gc.disable()
    try:
        start = time.perf_counter()
        got = fn(data)
        # groupkit pauses the collector while it decodes; settle the young generation so the
        # collection it put off is paid inside the timing, for every library alike.
        if collector:
            gc.collect(0)
        elapsed = time.perf_counter() - start
    finally:
        gc.enable()
    if len(got) != n or got[-1].value != VALUE:
        raise SystemExit(f"{fn.__name__} decoded {len(got)} records, expected {n}")
    return elapsed


def rates(data: bytes, n: int, repeat: int, collector: bool) -> dict[str, float]:
    """Best records/s per library over ``repeat`` rounds; rounds interleave the libraries so
    a load change on a shared machine hits them alike."""
    decoders = {"groupkit": with_groupkit, "kafka-python": with_kafka_python,
                "aiokafka": with_aiokafka}
    best = dict.fromkeys(decoders, float("inf"))
    for _ in range(repeat):
        for name, fn in decoders.items():
            best[name] = min(best[name], timed(fn, data, n, collector))
    return {name: n / seconds for name, seconds in best.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="records per run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per decoder; best is kept")
    parser.add_argument("--no-gc", action="store_true",
                        help="time with the garbage collector off (pure decoding cost)")
    args = parser.parse_args()
    n = args.records
    for compression in (None, "snappy"):
        data = build(n, compression)
        label = compression or "uncompressed"
        gc_state = "off" if args.no_gc else "on"
        print(f"{label}: {n:,} records, {-(-n // BATCH):,} batches, {len(data):,} bytes, "
              f"gc {gc_state}")
        result = rates(data, n, args.repeat, collector=not args.no_gc)
        for name, value in result.items():
            print(f"  {name:<13} {value:>13,.0f} records/s")
        g = result["groupkit"]
        print(f"  groupkit/kafka-python = {g / result['kafka-python']:.2f}x, "
              f"groupkit/aiokafka = {g / result['aiokafka']:.2f}x")


if __name__ == "__main__":
    main()
