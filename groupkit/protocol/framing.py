"""Split a byte stream into Kafka frames: a 4-byte big-endian size, then that many bytes."""

from __future__ import annotations

import struct

from groupkit.errors import ConfigError, CorruptFrame, FrameTooLarge, IllegalStateError

#: The largest frame accepted unless configured otherwise (Kafka's socket.request.max.bytes).
DEFAULT_MAX_FRAME_SIZE = 100 * 1024 * 1024

_SIZE = struct.Struct(">i")


#: A frame body at least this big is collected in a buffer of its own size, which a socket
#: can receive into directly (``room``/``received``): a large Fetch answer is then copied once,
#: by the kernel, instead of into a growing buffer and out again.
DIRECT_FRAME_BYTES = 64 * 1024

Frame = bytes | bytearray
"""A frame body: bytes, or for a large one the bytearray it was received into."""


class FrameDecoder:
    """Collects bytes as they arrive and hands back each complete frame, without its prefix.

    A size prefix is checked as soon as its four bytes are in, before any of the body is kept,
    so a garbage length (for instance a TLS record read as plaintext) fails at once. Small
    frames are appended to one buffer and consumed by offset, so a frame fed in small chunks
    costs linear time; a body of ``DIRECT_FRAME_BYTES`` or more goes into a bytearray of its
    size, filled by ``feed`` or straight from a socket through ``room`` and ``received``.
    """

    __slots__ = ("max_frame_size", "_buf", "_need", "_error", "_body", "_filled")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        if max_frame_size < 0:
            raise ConfigError(f"max_frame_size must be >= 0, not {max_frame_size}")
        self.max_frame_size = max_frame_size
        self._buf = bytearray()
        self._need = -1
        self._error: CorruptFrame | None = None
        self._body: bytearray | None = None
        self._filled = 0

    @property
    def buffered(self) -> int:
        """How many bytes were fed but not yet returned in a frame (size prefix included)."""
        return len(self._buf) + (_SIZE.size if self._need >= 0 else 0) + self._filled

    def room(self) -> memoryview | None:
        """The rest of a large frame's body, for a socket to ``recv_into`` (then call
        ``received``); None when the next bytes must go through ``feed``."""
        if self._body is None:
            return None
        return memoryview(self._body)[self._filled:]

    def received(self, n: int) -> list[Frame]:
        """Count ``n`` bytes written into ``room()``; returns the frame if they complete it."""
        body = self._body
        if body is None or n < 0 or self._filled + n > len(body):
            raise IllegalStateError("received() counts bytes written into room(), and no more")
        self._filled += n
        if self._filled < len(body):
            return []
        self._body, self._filled, self._need = None, 0, -1
        return [body]

    def feed(self, data: bytes | bytearray | memoryview) -> list[Frame]:
        """Add ``data`` and return every frame it completes, in order.

        Raises a CorruptFrame (FrameTooLarge for an oversized prefix) when a size is negative
        or over ``max_frame_size``; the stream is then out of step and the decoder refuses any
        further input.
        """
        buf = self._buf
        if not buf and self._need < 0 and self._body is None and self._error is None:
            # The common case, one read that holds exactly one whole frame (and nothing is
            # half read), is answered first and without copying it through the buffer.
            size = len(data) - _SIZE.size
            if size >= 0 and _SIZE.unpack_from(data)[0] == size <= self.max_frame_size:
                return [bytes(data[_SIZE.size:])]
        if self._error is not None:
            raise IllegalStateError(
                f"this FrameDecoder already failed ({self._error}); close the connection and"
                " start a new decoder") from self._error
        frames: list[Frame] = []
        body = self._body
        if body is not None:
            room = len(body) - self._filled
            with memoryview(data) as incoming:
                body[self._filled:self._filled + min(room, len(incoming))] = incoming[:room]
                frames += self.received(min(room, len(incoming)))
                if len(incoming) <= room:
                    return frames
                data = bytes(incoming[room:])
        buf += data
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
                    if self._need >= DIRECT_FRAME_BYTES:
                        self._body = bytearray(self._need)
                        self._body[:end - pos] = view[pos:end]
                        self._filled = end - pos
                        pos = end
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
