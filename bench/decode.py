"""Record-batch decoding speed: groupkit against kafka-python and aiokafka on the same bytes.

Builds N records (100-byte values, null keys, no headers) in v2 batches of 1,000, uncompressed
and under each codec, then times each library turning the bytes into a list of record objects:
groupkit with its C record loop (``groupkit``) and with the pure-Python one (``groupkit-py``),
kafka-python's pure-Python reader and aiokafka's C (Cython) reader.

    .venv/bin/python bench/decode.py [--records N] [--repeat R] [--codecs none,snappy,...]
        [--no-gc] [--no-kafka-python]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path

from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
from kafka.record.memory_records import MemoryRecords as KafkaMemoryRecords

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.table import Row, print_rows  # noqa: E402
from groupkit.protocol import native  # noqa: E402
from groupkit.protocol.records import batch_read, decode_records, encode_batch  # noqa: E402

BATCH = 1000
VALUE = bytes(range(100))
BASE_TS = 1_700_000_000_000
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


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


def with_groupkit_python(data: bytes) -> list:
    saved, batch_read._reader = batch_read._reader, batch_read._read_records
    try:
        return decode_records(data)
    finally:
        batch_read._reader = saved


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
        # Settle the young generation so a collection put off is paid inside the timing, for
        # every library alike.
        if collector:
            gc.collect(0)
        elapsed = time.perf_counter() - start
    finally:
        gc.enable()
    if len(got) != n or got[-1].value != VALUE:
        raise SystemExit(f"{fn.__name__} decoded {len(got)} records, expected {n}")
    return elapsed


def rates(data: bytes, n: int, repeat: int, collector: bool,
          decoders: dict[str, Callable[[bytes], list]]) -> dict[str, float]:
    """Best records/s per library over ``repeat`` rounds; rounds interleave the libraries so
    a load change on a shared machine hits them alike."""
    best = dict.fromkeys(decoders, float("inf"))
    for _ in range(repeat):
        for name, fn in decoders.items():
            best[name] = min(best[name], timed(fn, data, n, collector))
    return {name: n / seconds for name, seconds in best.items()}


def measure(n: int = 1_000_000, repeat: int = 3, codecs: tuple[str, ...] = CODECS,
            collector: bool = True, kafka_python: bool = True) -> list[Row]:
    """One row per codec: records/s of groupkit and of each peer."""
    decoders: dict[str, Callable[[bytes], list]] = {"groupkit": with_groupkit}
    if native.available:
        decoders["groupkit-py"] = with_groupkit_python
    decoders["aiokafka"] = with_aiokafka
    if kafka_python:
        decoders["kafka-python"] = with_kafka_python
    rows = []
    for codec in codecs:
        data = build(n, None if codec == "none" else codec)
        got = rates(data, n, repeat, collector, decoders)
        rows.append(Row(f"decode {codec}", "rec/s", got.pop("groupkit"), got, True))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="records per run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per decoder; best is kept")
    parser.add_argument("--codecs", default=",".join(CODECS),
                        help=f"comma-separated, from {', '.join(CODECS)}")
    parser.add_argument("--no-gc", action="store_true",
                        help="time with the garbage collector off (pure decoding cost)")
    parser.add_argument("--no-kafka-python", action="store_true",
                        help="leave out kafka-python (the slowest, so the longest to wait for)")
    args = parser.parse_args()
    codecs = tuple(c.strip() for c in args.codecs.split(",") if c.strip())
    print(f"decode: {args.records:,} records of 100 B in batches of {BATCH:,}, best of "
          f"{args.repeat}, gc {'off' if args.no_gc else 'on'}, C reader "
          f"{'built' if native.available else 'NOT built'}")
    print_rows(measure(args.records, args.repeat, codecs, not args.no_gc,
                       not args.no_kafka_python))


if __name__ == "__main__":
    main()
