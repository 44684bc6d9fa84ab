"""Split a byte stream into Kafka frames: a 4-byte big-endian size, then that many bytes."""

from __future__ import annotations

import struct

from groupkit.errors import ConfigError, CorruptFrame, FrameTooLarge, IllegalStateError

#: The largest frame accepted unless configured otherwise (Kafka's socket.request.max.bytes).
DEFAULT_MAX_FRAME_SIZE = 100 * 1024 * 1024

_SIZE = struct.Struct(">i")


class FrameDecoder:
    """Collects bytes as they arrive and hands back each complete frame, without its prefix.

    A size prefix is checked as soon as its four bytes are in, before any of the body is kept,
    so a garbage length (for instance a TLS record read as plaintext) fails at once. Bytes are
    appended to one buffer and consumed by offset, so a large frame fed in small chunks costs
    linear time.
    """

    __slots__ = ("max_frame_size", "_buf", "_need", "_error")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        if max_frame_size < 0:
            raise ConfigError(f"max_frame_size must be >= 0, not {max_frame_size}")
        self.max_frame_size = max_frame_size
        self._buf = bytearray()
        self._need = -1
        self._error: CorruptFrame | None = None

    @property
    def buffered(self) -> int:
        """How many bytes were fed but not yet returned in a frame (size prefix included)."""
        return len(self._buf) + (_SIZE.size if self._need >= 0 else 0)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Add ``data`` and return every frame it completes, in order.

        Raises a CorruptFrame (FrameTooLarge for an oversized prefix) when a size is negative
        or over ``max_frame_size``; the stream is then out of step and the decoder refuses any
        further input.
        """
        if self._error is not None:
            raise IllegalStateError(
                f"this FrameDecoder already failed ({self._error}); close the connection and"
                " start a new decoder") from self._error
        buf = self._buf
        buf += data
        frames: list[bytes] = []
        pos = 0
        end = len(buf)
        with memoryview(buf) as view:
            while True:
                if self._need < 0:
                    if end - pos < _SIZE.size:
                        break
                    size = _SIZE.unpack_from(view, pos)[0]
                    if size < 0 or size > self.max_frame_size:
                        self._error = self._size_error(size)
                        break
                    pos += _SIZE.size
                    self._need = size
                if end - pos < self._need:
                    break
                frames.append(bytes(view[pos:pos + self._need]))
                pos += self._need
                self._need = -1
        if self._error is not None:
            buf.clear()
            raise self._error
        if pos:
            del buf[:pos]
        return frames

    def _size_error(self, size: int) -> CorruptFrame:
        if size < 0:
            return CorruptFrame(
                f"frame size prefix is negative ({size}); the stream is out of step or not"
                " Kafka: close the connection and reconnect")
        return FrameTooLarge(
            f"frame size prefix claims {size} bytes, over max_frame_size {self.max_frame_size};"
            " raise max_frame_size if the broker really sends frames this big, or check that"
            " security_protocol (TLS/SASL) matches the listener")
