"""Length-prefixed JSON frames: an 8-byte big-endian length, then that many bytes of JSON.

A job's frames are objects whose first member is ``"status"`` (``encode_status``): the
worker reads that member without decoding the rest (``peek_status``) and forwards the body
as bytes with its own members added (``splice``).
"""

from __future__ import annotations

import json
import os
import re
import struct
from enum import StrEnum
from typing import Any

HEADER = struct.Struct("!Q")


class JobStatus(StrEnum):
    """How a job ended (the ``status`` of its result)."""

    OK = "ok"
    ERROR = "error"  # the target raised
    MEMORY = "memory"  # out of memory
    TIMEOUT = "timeout"  # wall-clock or CPU time limit
    CRASHED = "crashed"  # the job process (or the worker) died
    LIMIT = "limit"  # ended for a limit of its policy (memory, processes, temporary folder)
    CANCELLED = "cancelled"


#: frames a job sends before its result: part of the result, modules it imported
PARTIAL, IMPORTS = "partial", "imports"

_STATUS = re.compile(rb'\{"status":"([a-z_]{1,20})"[,}]')


def encode(message: Any) -> bytes:
    return frame(json.dumps(message, separators=(",", ":")).encode("utf-8"))


def frame(body: bytes) -> bytes:
    return HEADER.pack(len(body)) + body


def encode_status(status: str, **members: Any) -> bytes:
    """A job's frame: ``{"status": status, **members}``, status first."""
    return frame(status_body(status, **members))


def status_body(status: str, **members: Any) -> bytes:
    """The body of ``encode_status``'s frame."""
    return json.dumps({"status": status, **members}, separators=(",", ":")).encode("utf-8")


def peek_status(body: bytes) -> str | None:
    """The status of a frame body made by ``encode_status``; None for anything else."""
    match = _STATUS.match(body)
    return match.group(1).decode("ascii") if match else None


def splice(body: bytes, members: dict[str, Any]) -> bytes:
    """The frame of ``body`` (a JSON object) with ``members`` added, without decoding it.
    Added members come last, so they win over equal names in ``body``."""
    extra = json.dumps(members, separators=(",", ":")).encode("utf-8")
    body = body.strip()
    if not members:
        return frame(body)
    if body == b"{}":
        return frame(extra)
    return frame(body[:-1] + b"," + extra[1:])


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
    """Accumulates bytes read from a stream and splits them into frames."""

    def __init__(self) -> None:
        self._data = bytearray()

    def bodies(self, data: bytes) -> list[bytes]:
        """The bodies of the frames completed by ``data``, as bytes."""
        self._data += data
        found = []
        while len(self._data) >= HEADER.size:
            (size,) = HEADER.unpack_from(self._data)
            end = HEADER.size + size
            if len(self._data) < end:
                break
            found.append(bytes(self._data[HEADER.size : end]))
            del self._data[:end]
        return found

    def feed(self, data: bytes) -> list[Any]:
        """The messages completed by ``data``, decoded."""
        return [decode(body) for body in self.bodies(data)]
