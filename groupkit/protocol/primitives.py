"""Kafka's primitive wire types: a bounds-checked reader and an append-only writer.

Every read checks the bytes that remain before it trusts a length, so a frame that claims
2 GiB in 100 bytes fails at once with :class:`~groupkit.errors.CorruptFrame`.
"""

from __future__ import annotations

import struct
import uuid as _uuid
from typing import Any

from groupkit.errors import CorruptFrame

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_F64 = struct.Struct(">d")

NULL_UUID = _uuid.UUID(int=0)


class Reader:
    """Reads primitives from a buffer, raising CorruptFrame on any overrun or bad value."""

    __slots__ = ("buf", "pos", "end", "context")

    def __init__(self, data: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None,
                 context: str = "") -> None:
        self.buf = data if isinstance(data, memoryview) else memoryview(data)
        self.pos = pos
        self.end = len(self.buf) if end is None else end
        self.context = context

    def fail(self, what: str) -> CorruptFrame:
        where = f"{self.context}: " if self.context else ""
        return CorruptFrame(f"{where}{what} at byte {self.pos} of {self.end}")

    def remaining(self) -> int:
        return self.end - self.pos

    def _need(self, n: int, what: str) -> int:
        pos = self.pos
        if n < 0 or pos + n > self.end:
            raise self.fail(f"{what} needs {n} bytes but {self.end - pos} remain")
        self.pos = pos + n
        return pos

    def _unpack(self, st: struct.Struct, what: str) -> Any:
        return self.fields(st, what)[0]

    def fields(self, st: struct.Struct, what: str = "fixed-width fields") -> tuple[Any, ...]:
        """The fixed-width fields ``st`` lays out, read at once (a reader made for one
        message reads several with one call)."""
        pos = self._need(st.size, what)
        return st.unpack_from(self.buf, pos)

    # The fixed-width reads check the bounds inline (one call a field, not three): every
    # response's fields go through them.

    def int8(self) -> int:
        pos = self.pos
        if pos + 1 > self.end:
            return self._unpack(_I8, "int8")  # raises
        self.pos = pos + 1
        return _I8.unpack_from(self.buf, pos)[0]

    def int16(self) -> int:
        pos = self.pos
        if pos + 2 > self.end:
            return self._unpack(_I16, "int16")  # raises
        self.pos = pos + 2
        return _I16.unpack_from(self.buf, pos)[0]

    def int32(self) -> int:
        pos = self.pos
        if pos + 4 > self.end:
            return self._unpack(_I32, "int32")  # raises
        self.pos = pos + 4
        return _I32.unpack_from(self.buf, pos)[0]

    def int64(self) -> int:
        pos = self.pos
        if pos + 8 > self.end:
            return self._unpack(_I64, "int64")  # raises
        self.pos = pos + 8
        return _I64.unpack_from(self.buf, pos)[0]

    def uint16(self) -> int:
        return self._unpack(_U16, "uint16")

    def uint32(self) -> int:
        return self._unpack(_U32, "uint32")

    def float64(self) -> float:
        return self._unpack(_F64, "float64")

    def boolean(self) -> bool:
        return self._unpack(_I8, "boolean") != 0

    def uuid(self) -> _uuid.UUID:
        pos = self._need(16, "uuid")
        return _uuid.UUID(bytes=bytes(self.buf[pos:pos + 16]))

    def uvarint(self) -> int:
        buf, pos, end = self.buf, self.pos, self.end
        if pos < end and buf[pos] < 0x80:  # one byte: every count and length below 128
            self.pos = pos + 1
            return buf[pos]
        result = shift = 0
        while True:
            if pos >= end:
                self.pos = pos
                raise self.fail("unsigned varint runs past the end")
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift > 63:
                self.pos = pos
                raise self.fail("unsigned varint longer than 10 bytes")
        self.pos = pos
        return result

    def varint(self) -> int:
        v = self.uvarint()
        if v > 0xFFFFFFFF:
            raise self.fail("varint does not fit 32 bits")
        return (v >> 1) ^ -(v & 1)

    def varlong(self) -> int:
        v = self.uvarint()
        return (v >> 1) ^ -(v & 1)

    def raw(self, n: int, what: str = "bytes") -> bytes:
        pos = self._need(n, what)
        return bytes(self.buf[pos:pos + n])

    def view(self, n: int, what: str = "bytes") -> memoryview:
        pos = self._need(n, what)
        return self.buf[pos:pos + n]

    def _text(self, n: int) -> str:
        pos = self._need(n, "string")
        try:
            return str(self.buf[pos:pos + n], "utf-8")
        except UnicodeDecodeError as exc:
            self.pos = pos
            raise self.fail(f"string is not valid UTF-8 ({exc.reason})") from None

    def string(self) -> str:
        n = self.int16()
        if n < 0:
            raise self.fail(f"non-nullable string has length {n}")
        return self._text(n)

    def nullable_string(self) -> str | None:
        n = self.int16()
        if n == -1:
            return None
        if n < 0:
            raise self.fail(f"string has length {n}")
        return self._text(n)

    def compact_string(self) -> str:
        n = self.uvarint() - 1
        if n < 0:
            raise self.fail("non-nullable compact string is null")
        return self._text(n)

    def compact_nullable_string(self) -> str | None:
        n = self.uvarint() - 1
        return None if n < 0 else self._text(n)

    def bytes_(self) -> bytes:
        n = self.int32()
        if n < 0:
            raise self.fail(f"non-nullable bytes has length {n}")
        return self.raw(n)

    def _nullable_bytes_length(self) -> int:
        """An int32 byte-string length: -1 is null, any other negative one corrupt."""
        n = self.int32()
        if n < -1:
            raise self.fail(f"bytes has length {n}")
        return n

    def nullable_bytes(self) -> bytes | None:
        n = self._nullable_bytes_length()
        return None if n == -1 else self.raw(n)

    def compact_bytes(self) -> bytes:
        n = self.uvarint() - 1
        if n < 0:
            raise self.fail("non-nullable compact bytes is null")
        return self.raw(n)

    def compact_nullable_bytes(self) -> bytes | None:
        n = self.uvarint() - 1
        return None if n < 0 else self.raw(n)

    def nullable_view(self) -> memoryview | None:
        """``nullable_bytes`` as a read-only view of the buffer, not a copy."""
        n = self._nullable_bytes_length()
        return None if n == -1 else self.view(n).toreadonly()

    def compact_nullable_view(self) -> memoryview | None:
        """``compact_nullable_bytes`` as a read-only view of the buffer, not a copy."""
        n = self.uvarint() - 1
        return None if n < 0 else self.view(n).toreadonly()

    def array_length(self, compact: bool, nullable: bool = False) -> int:
        """Read an array's count, checked against the bytes left (every element takes >= 1 byte)."""
        n = self.uvarint() - 1 if compact else self.int32()
        if n < 0:
            if nullable and n == -1:
                return -1
            raise self.fail(f"array has length {n}")
        if n > self.end - self.pos:
            raise self.fail(f"array claims {n} elements but {self.end - self.pos} bytes remain")
        return n


class Writer:
    """Appends primitives to a bytearray."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def getvalue(self) -> bytes:
        return bytes(self.buf)

    def int8(self, v: int) -> None:
        self.buf += _I8.pack(v)

    def int16(self, v: int) -> None:
        self.buf += _I16.pack(v)

    def int32(self, v: int) -> None:
        self.buf += _I32.pack(v)

    def int64(self, v: int) -> None:
        self.buf += _I64.pack(v)

    def uint16(self, v: int) -> None:
        self.buf += _U16.pack(v)

    def uint32(self, v: int) -> None:
        self.buf += _U32.pack(v)

    def float64(self, v: float) -> None:
        self.buf += _F64.pack(v)

    def boolean(self, v: bool) -> None:
        self.buf.append(1 if v else 0)

    def uuid(self, v: _uuid.UUID | None) -> None:
        self.buf += (v or NULL_UUID).bytes

    def uvarint(self, v: int) -> None:
        if v < 0:
            raise ValueError(f"unsigned varint cannot hold {v}")
        buf = self.buf
        while v > 0x7F:
            buf.append((v & 0x7F) | 0x80)
            v >>= 7
        buf.append(v)

    def varint(self, v: int) -> None:
        self.uvarint(((v << 1) ^ (v >> 31)) & 0xFFFFFFFF)

    def varlong(self, v: int) -> None:
        self.uvarint(((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF)

    def raw(self, data: bytes | bytearray | memoryview) -> None:
        self.buf += data

    def string(self, v: str) -> None:
        data = v.encode()
        self.int16(len(data))
        self.buf += data

    def nullable_string(self, v: str | None) -> None:
        if v is None:
            self.int16(-1)
        else:
            self.string(v)

    def compact_string(self, v: str) -> None:
        data = v.encode()
        self.uvarint(len(data) + 1)
        self.buf += data

    def compact_nullable_string(self, v: str | None) -> None:
        if v is None:
            self.uvarint(0)
        else:
            self.compact_string(v)

    def bytes_(self, v: bytes) -> None:
        self.int32(len(v))
        self.buf += v

    def nullable_bytes(self, v: bytes | None) -> None:
        if v is None:
            self.int32(-1)
        else:
            self.bytes_(v)

    def compact_bytes(self, v: bytes) -> None:
        self.uvarint(len(v) + 1)
        self.buf += v

    def compact_nullable_bytes(self, v: bytes | None) -> None:
        if v is None:
            self.uvarint(0)
        else:
            self.compact_bytes(v)

    def array_length(self, n: int | None, compact: bool) -> None:
        if compact:
            self.uvarint(0 if n is None else n + 1)
        else:
            self.int32(-1 if n is None else n)
