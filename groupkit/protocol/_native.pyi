from collections.abc import Sequence
from typing import Any

def read_records(buf: bytes | bytearray | memoryview, pos: int, end: int, count: int,
                 base_offset: int, base_ts: int, ts_type: int, max_ts: int, out: list[Any],
                 cls: type, topic: str | None, partition: int | None, sourced: bool, /) -> int: ...

def write_records(rows: Sequence[tuple[Any, ...]], deltas: Sequence[int] | None, base_ts: int,
                  /) -> tuple[bytes, int]: ...
