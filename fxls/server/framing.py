"""Reading LSP frames (``Content-Length`` headers + JSON body) from any byte stream.

pygls' own stdio loop dies or goes deaf on a bad frame (a huge length, a lower-case header,
bare ``\\n`` line ends, a length off by one). This reader never raises on input: it bounds the
length, accepts header names in any case with or without the space after the colon and lines
ended by ``\\n`` or ``\\r\\n``, and after a bad frame resynchronises on the next
``Content-Length`` header in the stream.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

#: the largest body accepted; a real LSP message (a whole document) is far below it
MAX_CONTENT_LENGTH = 64 * 1024 * 1024
#: a header block longer than this is garbage, not headers
MAX_HEADER_BYTES = 8 * 1024

_HEADER_NAME = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
_HEADER_LINE = re.compile(rb"([A-Za-z0-9_-]+)[ \t]*:[ \t]*(.*?)[ \t]*", re.DOTALL)
_DIGITS = re.compile(rb"[0-9]+")


@dataclass(frozen=True, slots=True)
class BadFrame:
    """A frame whose body is not JSON: the caller answers it with a parse error."""

    reason: str


ReadChunk = Callable[[], Awaitable[bytes]]


class FrameReader:
    """Turns a byte stream into decoded JSON messages (or :class:`BadFrame`)."""

    def __init__(self, read_chunk: ReadChunk, max_length: int = MAX_CONTENT_LENGTH) -> None:
        self._read_chunk = read_chunk
        self._max_length = max_length
        self._buffer = bytearray()

    async def next_message(self) -> Any | BadFrame:
        """The next decoded message (any JSON value) or a :class:`BadFrame`.

        Raises EOFError at the end of the stream.
        """
        while True:
            header = self._parse_header()
            if header is None:
                await self._fill()
                continue
            header_end, length = header
            if length is None:
                self._resync(1)
                continue
            if length > self._max_length:
                log.error(
                    "ignored a frame announcing Content-Length %d (limit %d bytes); "
                    "resynchronising on the next header", length, self._max_length,
                )
                self._resync(header_end)
                continue
            while len(self._buffer) < header_end + length:
                await self._fill()
            body = bytes(self._buffer[header_end : header_end + length])
            del self._buffer[: header_end + length]
            return self._decode(body)

    async def _fill(self) -> None:
        chunk = await self._read_chunk()
        if not chunk:
            raise EOFError
        self._buffer += chunk

    def _parse_header(self) -> tuple[int, int | None] | None:
        """(end of the header block, its Content-Length or None if the block is bad), or None
        when more bytes are needed. Leading bytes before any header name are dropped."""
        start = _HEADER_NAME.search(self._buffer)
        if start is None:
            keep = len(b"content-length") + 8
            if len(self._buffer) > keep:
                if self._buffer.strip():
                    log.warning("dropped %d bytes that are not an LSP header",
                                len(self._buffer) - keep)
                del self._buffer[: len(self._buffer) - keep]
            return None
        if start.start() > 0:
            if self._buffer[: start.start()].strip():
                log.warning("dropped %d bytes before a Content-Length header", start.start())
            del self._buffer[: start.start()]
        length: int | None = None
        position = 0
        while True:
            newline = self._buffer.find(b"\n", position)
            if newline < 0:
                if len(self._buffer) > MAX_HEADER_BYTES:
                    return (0, None)
                return None
            line = bytes(self._buffer[position:newline]).rstrip(b"\r")
            position = newline + 1
            if not line:
                return (position, length)
            match = _HEADER_LINE.fullmatch(line)
            if match is None:
                log.warning("bad header line %r; resynchronising", line[:80])
                return (position, None)
            if match.group(1).lower() == b"content-length":
                if not _DIGITS.fullmatch(match.group(2)):
                    log.warning("bad Content-Length %r; resynchronising", match.group(2)[:40])
                    return (position, None)
                length = int(match.group(2))

    def _resync(self, skip: int) -> None:
        """Drop the start of a bad frame; the next ``Content-Length`` header starts over."""
        del self._buffer[: max(1, skip)]

    def _decode(self, body: bytes) -> Any | BadFrame:
        try:
            return json.loads(body)
        except (ValueError, RecursionError):
            pass
        # A length one or two short leaves the end of the JSON before the next header; one
        # too long swallows the start of the next header. Recover the message in both cases.
        following = _HEADER_NAME.search(self._buffer)
        tail = bytes(self._buffer[: following.start() if following else len(self._buffer)])
        try:
            message = json.loads(body + tail)
        except (ValueError, RecursionError):
            pass
        else:
            del self._buffer[: len(tail)]
            log.warning("a frame's Content-Length was %d bytes short", len(tail))
            return message
        try:
            text = body.decode("utf-8")
            message, end = json.JSONDecoder().raw_decode(text.lstrip())
        except (ValueError, RecursionError):
            message, end = None, -1
        if end >= 0:
            rest = text.lstrip()[end:].encode("utf-8")
            self._buffer[:0] = rest
            log.warning("a frame's Content-Length was %d bytes long", len(rest))
            return message
        inner = _HEADER_NAME.search(body, 1)
        if inner is not None:
            self._buffer[:0] = body[inner.start() :]
        log.warning("a frame's body is not JSON (%d bytes); resynchronising", len(body))
        return BadFrame("the body is not JSON")
