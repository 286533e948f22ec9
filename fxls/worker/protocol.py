"""Length-prefixed JSON frames: an 8-byte big-endian length, then that many bytes of JSON."""

from __future__ import annotations

import json
import os
import struct
from typing import Any

HEADER = struct.Struct("!Q")


def encode(message: Any) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode("utf-8")
    return HEADER.pack(len(body)) + body


def decode(body: bytes) -> Any:
    return json.loads(body.decode("utf-8"))


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to a blocking fd."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def read_all(fd: int) -> bytes:
    """Read a blocking fd until EOF."""
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


class FrameBuffer:
    """Accumulates bytes read from a stream and splits them into decoded messages."""

    def __init__(self) -> None:
        self._data = bytearray()

    def feed(self, data: bytes) -> list[Any]:
        self._data += data
        messages = []
        while len(self._data) >= HEADER.size:
            (size,) = HEADER.unpack_from(self._data)
            end = HEADER.size + size
            if len(self._data) < end:
                break
            messages.append(decode(bytes(self._data[HEADER.size : end])))
            del self._data[:end]
        return messages
