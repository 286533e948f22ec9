"""The worker protocol: length-prefixed JSON frames (an 8-byte big-endian length, then that
many bytes of JSON), the operations (``Op``; what each one carries is its record in
``messages``), and the version both sides check at start (``PROTOCOL_VERSION``).

Two kinds of bytes cross it. The client's requests and the worker's own messages (its
*envelopes*) are trusted. A ``run`` request's params (the whole source text of a file) are
the frame after its envelope: the worker forwards them to the job process undecoded. A job's
frames are not trusted: a job runs hostile code in its own process, which can write anything
to its result pipe. They are objects whose first member
is ``"status"`` (``encode_status``): the worker reads that member without decoding the
rest (``peek_status``), never buffers more than ``JOB_FRAME_LIMIT`` of one
(``FrameBuffer(limit=...)``), and forwards the body untouched right after an envelope that
says how long it is (``attach``); the client decodes and checks it as untrusted input.
"""

from __future__ import annotations

import json
import os
import re
import struct
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeAlias

#: what JSON decodes to: a message member's value before it is checked
JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"

HEADER = struct.Struct("!Q")

#: bumped whenever a message changes shape; the worker and the client refuse each other on a
#: mismatch (``check_version``)
PROTOCOL_VERSION = 4
#: the largest job frame (a partial or final result) the worker reads; larger ones end the
#: job (``JobStatus.INVALID``) without being buffered
JOB_FRAME_LIMIT = 64 * 1024 * 1024
#: the largest request the worker reads (a job's params hold a source file)
REQUEST_LIMIT = 256 * 1024 * 1024
#: the largest envelope the client reads (the worker's own messages: small, output tails)
ENVELOPE_LIMIT = 8 * 1024 * 1024
#: partial results of one job forwarded as they come; the rest are coalesced into the newest
#: one, which comes with the result (``JobResult.last_partial``) and is never published
FORWARDED_PARTIALS = 4


class Op(StrEnum):
    """The operations: requests the client sends, then the messages the worker sends."""

    RUN = "run"  # run a job: id, target, timeout, policy, sources, body (its params' frame)
    WARM = "warm"  # modules jobs will import (libraries to learn)
    CANCEL = "cancel"  # id
    PING = "ping"
    SHUTDOWN = "shutdown"

    READY = "ready"  # the worker started: pid, protocol, python, import_errors, sandbox...
    STARTED = "started"  # a job process runs the job: id
    PARTIAL = "partial"  # part of a job's result ahead of it: id, body
    RESULT = "result"  # a job ended: id, status, own (the body is the job's), output,
    # duration_ms, body
    PONG = "pong"  # the answer to a ping
    BUSY = "busy"  # the worker is about to block its loop for seconds
    ERROR = "error"  # a request refused (unknown operation, bad fields, version): id, error


class ProtocolError(ValueError):
    """A message that does not fit the protocol."""


def check_version(theirs: object, who: str) -> None:
    """ProtocolError unless ``theirs`` is this side's ``PROTOCOL_VERSION``."""
    if theirs != PROTOCOL_VERSION:
        raise ProtocolError(
            f"{who} speaks fxls worker protocol {short(theirs)}, this fxls speaks "
            f"{PROTOCOL_VERSION}: the worker's interpreter runs another fxls than the caller "
            f"(check `fxls.python` and its PYTHONPATH)")


def short(value: object, limit: int = 60) -> str:
    """``value`` for an error message: its repr, cut at ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: what a job's own final frame may say (the others are the worker's to say)
JOB_OWN_STATUSES = frozenset({"ok", "error", "memory"})


class JobStatus(StrEnum):
    """How a job ended (the ``status`` of its result)."""

    OK = "ok"
    ERROR = "error"  # the target raised
    MEMORY = "memory"  # out of memory
    TIMEOUT = "timeout"  # wall-clock or CPU time limit
    CRASHED = "crashed"  # the job process (or the worker) died
    LIMIT = "limit"  # ended for a limit of its policy (memory, processes, temporary folder)
    CANCELLED = "cancelled"
    INVALID = "invalid"  # the job's result broke the protocol (too large, not JSON...)


#: frames a job sends before its result: part of the result, modules it imported, what
#: the next job processes may warm up from (``api.send_warmth``; forwarded to them as is)
PARTIAL, IMPORTS, WARMTH = "partial", "imports", "warmth"
#: a warmth frame's size at most (a larger one is neither sent nor kept)
WARMTH_BYTES = 2 * 1024 * 1024

_STATUS = re.compile(rb'\{"status":"([a-z_]{1,20})"[,}]')


def encode(message: object) -> bytes:
    return frame(dumps(message))


def dumps(value: object) -> bytes:
    """``value`` as compact JSON bytes (raises for what is not JSON data)."""
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def frame(body: bytes) -> bytes:
    return HEADER.pack(len(body)) + body


def encode_status(status: str, **members: object) -> bytes:
    """A job's frame: ``{"status": status, **members}``, status first."""
    return frame(status_body(status, **members))


def status_body(status: str, **members: object) -> bytes:
    """The body of ``encode_status``'s frame."""
    return json.dumps({"status": status, **members}, separators=(",", ":")).encode("utf-8")


def peek_status(body: bytes) -> str | None:
    """The status of a frame body made by ``encode_status``; None for anything else."""
    match = _STATUS.match(body)
    return match.group(1).decode("ascii") if match else None


def attach(envelope: dict[str, JsonValue], body: bytes) -> bytes:
    """The worker's ``envelope`` (its own, trusted message) followed by a job's ``body``
    (untrusted bytes, forwarded undecoded): the envelope's ``body`` member is their length."""
    return encode({**envelope, "body": len(body)}) + body


def with_body(envelope: dict[str, JsonValue], body: bytes) -> bytes:
    """A request (``envelope``) and its ``body`` (bytes the worker forwards undecoded) in the
    frame right after it: the envelope's ``body`` member is their length."""
    return encode({**envelope, "body": len(body)}) + frame(body)


def decode(body: bytes) -> JsonValue:
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


@dataclass(frozen=True, slots=True)
class Oversized:
    """A frame announcing more than the reader's limit: its bytes are skipped, never kept."""

    size: int


class FrameBuffer:
    """Accumulates bytes read from a stream and splits them into frames; with ``limit``, a
    frame announcing more is reported as ``Oversized`` and skipped as its bytes arrive (the
    buffer never holds more than one frame of at most ``limit`` bytes)."""

    def __init__(self, limit: int | None = None) -> None:
        self._data = bytearray()
        self.limit = limit
        self._skip = 0  # bytes of an oversized frame still to come

    def bodies(self, data: bytes) -> list[bytes | Oversized]:
        """The bodies of the frames completed by ``data``, as bytes (``Oversized`` for a
        frame over the limit, once, when its header arrives)."""
        if self._skip:
            dropped = min(self._skip, len(data))
            self._skip -= dropped
            data = data[dropped:]
        self._data += data
        found: list[bytes | Oversized] = []
        while len(self._data) >= HEADER.size:
            (size,) = HEADER.unpack_from(self._data)
            if self.limit is not None and size > self.limit:
                found.append(Oversized(size))
                dropped = min(size, len(self._data) - HEADER.size)
                del self._data[: HEADER.size + dropped]
                self._skip = size - dropped
                continue
            end = HEADER.size + size
            if len(self._data) < end:
                break
            found.append(bytes(self._data[HEADER.size : end]))
            del self._data[:end]
        return found

    def feed(self, data: bytes) -> list[JsonValue]:
        """The messages completed by ``data``, decoded (trusted streams only)."""
        return [decode(body) for body in self.bodies(data) if isinstance(body, bytes)]
