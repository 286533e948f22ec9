"""One source text and every conversion of positions in it.

Lines break at ``\\n``, ``\\r\\n`` and ``\\r`` only, as Python's tokenizer and LSP break them
(``str.splitlines`` also breaks at form feeds, ``\\x1c-\\x1e``, ``\\x85``, ``\\u2028`` and
``\\u2029``: never use it on source text). Python reports columns as UTF-8 byte offsets into a
line, lines 1-based; LSP clients count in the negotiated encoding (UTF-16 code units by
default, UTF-8 for Neovim 0.11, or code points), lines 0-based. Every conversion clamps to
the document, so a range made here always lies inside it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

UTF8 = "utf-8"
UTF16 = "utf-16"
UTF32 = "utf-32"

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class Position:
    line: int  # 0-based
    character: int  # in the encoding's units


class SpanLike(Protocol):
    """A Python span (``fxcore.source.SourceSpan``, ``fxls.report.Span``)."""

    line: int
    end_line: int
    col: int
    end_col: int


class SourceText:
    """A text and the character offset of each line's start; built once per text
    (:func:`source_text` shares them)."""

    __slots__ = ("line_starts", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.line_starts = [0, *(match.end() for match in _LINE_BREAK.finditer(text))]

    @property
    def line_count(self) -> int:
        return len(self.line_starts)

    def line_text(self, line0: int) -> str:
        """The 0-based line without its line break ("" outside the text)."""
        if not 0 <= line0 < len(self.line_starts):
            return ""
        return self.text[self.line_starts[line0] : self._content_end(line0)]

    def line(self, line1: int) -> str:
        """The 1-based line without its line break ("" outside the text)."""
        return self.line_text(line1 - 1)

    def lines(self) -> list[str]:
        return [self.line_text(index) for index in range(len(self.line_starts))]

    def _content_end(self, line0: int) -> int:
        if line0 + 1 >= len(self.line_starts):
            return len(self.text)
        end = self.line_starts[line0 + 1]
        return end - 2 if self.text.startswith("\r\n", end - 2) else end - 1

    # -- Python units: 1-based lines, UTF-8 byte columns --------------------------------

    def byte_length(self, line1: int) -> int:
        return _utf8_length(self.line(line1))

    def indent_bytes(self, line1: int) -> int:
        text = self.line(line1)
        return _utf8_length(text[: len(text) - len(text.lstrip())])

    def char_to_byte_col(self, line1: int, char_col: int) -> int:
        return _utf8_length(self.line(line1)[: max(char_col, 0)])

    def offset(self, line1: int, byte_col: int) -> int:
        """The character offset in the text of (1-based line, UTF-8 byte column), clamped to
        the text; a column inside a character counts as that character's start."""
        if line1 < 1:
            return 0
        if line1 > len(self.line_starts):
            return len(self.text)
        line0 = line1 - 1
        return self.line_starts[line0] + _byte_to_char(self.line_text(line0), byte_col)

    def text_at(self, span: SpanLike) -> str:
        """The text ``span`` covers."""
        start = self.offset(span.line, span.col)
        return self.text[start : max(start, self.offset(span.end_line, span.end_col))]

    # -- editor units -------------------------------------------------------------------

    def to_position(self, line1: int, byte_col: int, encoding: str = UTF16) -> Position:
        """(1-based line, UTF-8 byte column) -> a position inside the document."""
        if line1 < 1:
            return Position(0, 0)
        if line1 > len(self.line_starts):
            last = len(self.line_starts) - 1
            return Position(last, _units(self.line_text(last), encoding))
        text = self.line_text(line1 - 1)
        return Position(line1 - 1, _units(text[: _byte_to_char(text, byte_col)], encoding))

    def to_range(self, span: SpanLike, encoding: str = UTF16) -> tuple[Position, Position]:
        start = self.to_position(span.line, span.col, encoding)
        end = self.to_position(span.end_line, span.end_col, encoding)
        if (end.line, end.character) < (start.line, start.character):
            end = start
        return start, end

    def to_byte_col(self, line0: int, units: int, encoding: str = UTF16) -> int:
        """A client's column (``encoding`` units) on the 0-based line -> UTF-8 byte column,
        clamped to the line; a column inside a character counts as that character's start."""
        text = self.line_text(line0)
        if encoding == UTF8:
            return _utf8_length(text[: _byte_to_char(text, units)])
        if encoding == UTF32 or text.isascii():
            return _utf8_length(text[: max(units, 0)])
        count = 0
        for index, char in enumerate(text):
            count += 2 if ord(char) > 0xFFFF else 1
            if count > units:
                return _utf8_length(text[:index])
        return _utf8_length(text)


@lru_cache(maxsize=32)
def source_text(text: str) -> SourceText:
    """The :class:`SourceText` of ``text``, shared by everyone converting in the same text."""
    return SourceText(text)


def _utf8_length(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _byte_to_char(text: str, byte_col: int) -> int:
    if byte_col <= 0:
        return 0
    if text.isascii():
        return min(byte_col, len(text))
    total = 0
    for index, char in enumerate(text):
        code = ord(char)
        total += 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
        if total > byte_col:
            return index
    return len(text)


def _units(prefix: str, encoding: str) -> int:
    if encoding == UTF32 or prefix.isascii():
        return len(prefix)
    if encoding == UTF8:
        return _utf8_length(prefix)
    return len(prefix) + sum(1 for char in prefix if ord(char) > 0xFFFF)
