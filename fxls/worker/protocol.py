"""The worker protocol: length-prefixed JSON frames (an 8-byte big-endian length, then that
many bytes of JSON), the operations (``Op``) and what each one carries (``REQUESTS``,
``EVENTS``), and the version both sides check at start (``PROTOCOL_VERSION``).

Two kinds of bytes cross it. The client's requests and the worker's own messages (its
*envelopes*) are trusted. A job's frames are not: a job runs hostile code in its own
process, which can write anything to its result pipe. They are objects whose first member
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
from typing import Any

HEADER = struct.Struct("!Q")

#: bumped whenever a message changes shape; the worker and the client refuse each other on a
#: mismatch (``check_version``)
PROTOCOL_VERSION = 3
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

    RUN = "run"  # run a job: id, target, params, timeout, policy, sources (its own code)
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


_NUMBER = (int, float)
_OPTIONAL_NUMBER = (int, float, type(None))
_ID = (int,)
#: the members each request must carry, and their types
REQUESTS: dict[Op, dict[str, tuple[type, ...]]] = {
    Op.RUN: {"id": _ID, "target": (str,), "timeout": _OPTIONAL_NUMBER,
             "policy": (dict, type(None))},
    Op.CANCEL: {"id": _ID},
    Op.WARM: {"modules": (list,)},
    Op.PING: {},
    Op.SHUTDOWN: {},
}
#: the members each of the worker's messages must carry, and their types
EVENTS: dict[Op, dict[str, tuple[type, ...]]] = {
    Op.READY: {"pid": _ID, "protocol": (int,)},
    Op.STARTED: {"id": _ID},
    Op.PARTIAL: {"id": _ID, "body": (int,)},
    Op.RESULT: {"id": _ID, "status": (str,), "own": (bool,), "output": (str,),
                "duration_ms": _NUMBER, "body": (int,)},
    Op.PONG: {},
    Op.BUSY: {},
    Op.ERROR: {"error": (str,)},
}


class ProtocolError(ValueError):
    """A message that does not fit the protocol."""


def check_message(message: Any, table: dict[Op, dict[str, tuple[type, ...]]]) -> Op:
    """The operation of ``message`` once its members fit ``table``; else ProtocolError (one
    line saying what is wrong)."""
    if not isinstance(message, dict):
        raise ProtocolError(f"not an object: {_short(message)}")
    try:
        op = Op(message.get("op"))
    except ValueError:
        raise ProtocolError(f"unknown operation {_short(message.get('op'))}") from None
    members = table.get(op)
    if members is None:
        raise ProtocolError(f"operation {op.value!r} is not expected here")
    for name, types in members.items():
        value = message.get(name)
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise ProtocolError(f"{op.value}: {name!r} is {_short(value)}, expected "
                                f"{' or '.join(t.__name__ for t in types)}")
    return op


def check_version(theirs: Any, who: str) -> None:
    """ProtocolError unless ``theirs`` is this side's ``PROTOCOL_VERSION``."""
    if theirs != PROTOCOL_VERSION:
        raise ProtocolError(
            f"{who} speaks fxls worker protocol {_short(theirs)}, this fxls speaks "
            f"{PROTOCOL_VERSION}: the worker's interpreter runs another fxls than the caller "
            f"(check `fxls.python` and its PYTHONPATH)")


def _short(value: Any, limit: int = 60) -> str:
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


def attach(envelope: dict[str, Any], body: bytes) -> bytes:
    """The worker's ``envelope`` (its own, trusted message) followed by a job's ``body``
    (untrusted bytes, forwarded undecoded): the envelope's ``body`` member is their length."""
    return encode({**envelope, "body": len(body)}) + body


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

    def feed(self, data: bytes) -> list[Any]:
        """The messages completed by ``data``, decoded (trusted streams only)."""
        return [decode(body) for body in self.bodies(data) if isinstance(body, bytes)]
