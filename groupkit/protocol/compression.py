"""The four Kafka compression codecs, with a cap on how much any payload may expand to.

Decoders are total: a payload that does not decompress, or that would grow past
``max_size`` bytes, raises :class:`~groupkit.errors.CorruptRecordError` rather than a codec's
own exception or a memory blow-up.
"""

from __future__ import annotations

import struct
import zlib
from types import ModuleType

from groupkit.errors import ConfigError, CorruptRecordError


# The codec libraries load on first use: a consumer of uncompressed or lz4 topics never pays
# for the others (their import costs about 3 MB of resident memory in all).
def _lz4() -> ModuleType:
    import lz4.frame

    return lz4.frame


def _snappy() -> ModuleType:
    import snappy

    return snappy


def _zstd() -> ModuleType:
    import zstandard

    return zstandard

DEFAULT_MAX_DECOMPRESSED_SIZE = 256 * 1024 * 1024
"""Largest payload (bytes) one compressed batch or message may expand to unless told otherwise."""

CODEC_IDS: dict[str | None, int] = {None: 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
"""Compression name to the id Kafka stores in the low three attribute bits."""

CODEC_NAMES: dict[int, str | None] = {v: k for k, v in CODEC_IDS.items()}

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_XERIAL_BLOCK = 32 * 1024
_I32 = struct.Struct(">i")
_ZSTD_STEP = 1024


def codec_id(name: str | None) -> int:
    """Map a compression name (None, "gzip", "snappy", "lz4", "zstd") to its attribute id."""
    try:
        return CODEC_IDS[name]
    except KeyError:
        raise ConfigError(
            f"unknown compression {name!r}; use None, 'gzip', 'snappy', 'lz4' or 'zstd'"
        ) from None


def _too_big(codec: str, max_size: int) -> CorruptRecordError:
    return CorruptRecordError(
        f"{codec} payload expands past max_decompressed_size={max_size} bytes; "
        "raise the limit if the producer really writes batches this large"
    )


def _broken(codec: str, exc: BaseException) -> CorruptRecordError:
    return CorruptRecordError(f"{codec} payload does not decompress ({exc}); the batch is corrupt")


def compress(codec: int, data: bytes, *, legacy_lz4: bool = False) -> bytes:
    """Compress ``data`` with codec id 1-4; snappy is xerial-framed the way Java writes it.

    ``legacy_lz4`` writes the broken frame-header checksum that magic-0 messages carry (KIP-57).
    """
    if codec == 1:
        return _gzip_compress(data)
    if codec == 2:
        return _xerial_compress(data)
    if codec == 3:
        # Kafka's Java reader decodes each block alone, so blocks must be independent (KIP-57).
        framed = _lz4().compress(data, block_linked=False, store_size=False)
        return _break_lz4_header(framed) if legacy_lz4 else framed
    if codec == 4:
        return _zstd().ZstdCompressor().compress(data)
    raise ConfigError(f"compression id {codec} is not one of 1 (gzip) .. 4 (zstd)")


def decompress(codec: int, data: bytes | memoryview, *,
               max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE, legacy_lz4: bool = False) -> bytes:
    """Decompress a payload written with codec id 1-4, refusing to grow past ``max_size`` bytes.

    ``legacy_lz4`` accepts the magic-0 lz4 framing whose header checksum Kafka got wrong (KIP-57).
    """
    if codec == 1:
        return _gzip_decompress(data, max_size)
    if codec == 2:
        return _snappy_decompress(bytes(data), max_size)
    if codec == 3:
        payload = bytes(data)
        if legacy_lz4:
            payload = _repair_lz4_header(payload)
        return _lz4_decompress(payload, max_size)
    if codec == 4:
        return _zstd_decompress(data, max_size)
    raise CorruptRecordError(f"compression id {codec} is not one Kafka defines (1-4)")


def _gzip_compress(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


def _gzip_decompress(data: bytes | memoryview, max_size: int) -> bytes:
    # Java's GZIPInputStream reads concatenated members, so this does too.
    out = bytearray()
    rest = bytes(data)
    if not rest:
        raise CorruptRecordError("gzip payload is empty")
    try:
        while rest:
            d = zlib.decompressobj(47)
            out += d.decompress(rest, max_size + 1 - len(out))
            if len(out) > max_size or d.unconsumed_tail:
                raise _too_big("gzip", max_size)
            if not d.eof:
                raise CorruptRecordError("gzip payload ends before its stream does")
            rest = d.unused_data
    except zlib.error as exc:
        raise _broken("gzip", exc) from None
    return bytes(out)


def _xerial_compress(data: bytes) -> bytes:
    parts = [_XERIAL_HEADER.pack(XERIAL_MAGIC, 1, 1)]
    snappy = _snappy()
    for start in range(0, len(data), _XERIAL_BLOCK):
        chunk = snappy.compress(data[start:start + _XERIAL_BLOCK])
        parts.append(_I32.pack(len(chunk)))
        parts.append(chunk)
    return b"".join(parts)


def _snappy_raw(block: bytes, budget: int, max_size: int) -> bytes:
    # A raw snappy block starts with its uncompressed length as an unsigned varint.
    claimed = shift = 0
    for i, b in enumerate(block[:5]):
        claimed |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if i == 4:
            raise CorruptRecordError("snappy block length is not a valid varint")
    else:
        raise CorruptRecordError("snappy block is empty or its length is cut short")
    if claimed > budget:
        raise _too_big("snappy", max_size)
    try:
        return _snappy().uncompress(block)
    except Exception as exc:  # python-snappy raises several unrelated types
        raise _broken("snappy", exc) from None


def _snappy_decompress(data: bytes, max_size: int) -> bytes:
    if not data.startswith(XERIAL_MAGIC):
        return _snappy_raw(data, max_size, max_size)
    if len(data) < _XERIAL_HEADER.size:
        raise CorruptRecordError("xerial snappy header is cut short")
    out = bytearray()
    pos, end = _XERIAL_HEADER.size, len(data)
    while pos < end:
        if end - pos < 4:
            raise CorruptRecordError("xerial snappy chunk length is cut short")
        (n,) = _I32.unpack_from(data, pos)
        pos += 4
        if n < 0 or n > end - pos:
            raise CorruptRecordError(
                f"xerial snappy chunk claims {n} bytes but {end - pos} remain")
        out += _snappy_raw(data[pos:pos + n], max_size - len(out), max_size)
        pos += n
    return bytes(out)


def _lz4_decompress(data: bytes, max_size: int) -> bytes:
    d = _lz4().LZ4FrameDecompressor()
    try:
        out = d.decompress(data, max_length=max_size + 1)
    except RuntimeError as exc:
        raise _broken("lz4", exc) from None
    if len(out) > max_size:
        raise _too_big("lz4", max_size)
    if not d.eof:
        raise CorruptRecordError("lz4 payload ends before its frame does")
    return out


def _xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 of a short input (the lz4 frame descriptor, at most 15 bytes)."""
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    mask = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    n = len(data)
    pos = 0
    if n >= 16:
        v = [(seed + p1 + p2) & mask, (seed + p2) & mask, seed & mask, (seed - p1) & mask]
        while pos + 16 <= n:
            for i in range(4):
                lane = int.from_bytes(data[pos:pos + 4], "little")
                v[i] = (rotl((v[i] + lane * p2) & mask, 13) * p1) & mask
                pos += 4
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & mask
    else:
        h = (seed + p5) & mask
    h = (h + n) & mask
    while pos + 4 <= n:
        h = (rotl((h + int.from_bytes(data[pos:pos + 4], "little") * p3) & mask, 17) * p4) & mask
        pos += 4
    while pos < n:
        h = (rotl((h + data[pos] * p5) & mask, 11) * p1) & mask
        pos += 1
    h ^= h >> 15
    h = (h * p2) & mask
    h ^= h >> 13
    h = (h * p3) & mask
    h ^= h >> 16
    return h


def _lz4_descriptor_end(data: bytes) -> int:
    """Index of the header-checksum byte of an lz4 frame (magic, FLG, BD, [size], HC)."""
    if len(data) < 7 or data[:4] != b"\x04\x22\x4d\x18":
        raise CorruptRecordError("lz4 payload does not start with an lz4 frame header")
    return 14 if data[4] & 0x08 else 6


def _break_lz4_header(framed: bytes) -> bytes:
    # Kafka 0.8-0.9 hashed the frame magic together with the descriptor (KIP-57).
    hc = _lz4_descriptor_end(framed)
    wrong = (_xxh32(framed[:hc]) >> 8) & 0xFF
    return framed[:hc] + bytes((wrong,)) + framed[hc + 1:]


def _repair_lz4_header(data: bytes) -> bytes:
    hc = _lz4_descriptor_end(data)
    if len(data) <= hc:
        raise CorruptRecordError("lz4 frame header is cut short")
    right = (_xxh32(data[4:hc]) >> 8) & 0xFF
    return data[:hc] + bytes((right,)) + data[hc + 1:]


def _zstd_decompress(data: bytes | memoryview, max_size: int) -> bytes:
    # Streaming, so frames written without a content size decode too. Input goes in small
    # steps because one step may expand ~128x its size; this bounds the overshoot past max_size.
    view = memoryview(data)
    end = len(view)
    if not end:
        raise CorruptRecordError("zstd payload is empty")
    out = bytearray()
    pos = 0
    zstandard = _zstd()
    d = zstandard.ZstdDecompressor().decompressobj()
    try:
        while pos < end:
            step = bytes(view[pos:pos + _ZSTD_STEP])
            pos += len(step)
            out += d.decompress(step)
            if len(out) > max_size:
                raise _too_big("zstd", max_size)
            if d.eof:
                pos -= len(d.unused_data)
                if pos < end:
                    d = zstandard.ZstdDecompressor().decompressobj()
    except zstandard.ZstdError as exc:
        raise _broken("zstd", exc) from None
    if not d.eof:
        raise CorruptRecordError("zstd payload ends before its frame does")
    return bytes(out)
