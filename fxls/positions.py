"""The one bridge between Python code positions and editor positions.

Python reports columns as UTF-8 byte offsets into a line; LSP clients count in the
negotiated encoding (UTF-16 code units by default, UTF-8 for Neovim 0.11, or code points).
Lines: Python is 1-based, LSP 0-based.
"""

from __future__ import annotations

from dataclasses import dataclass

UTF8 = "utf-8"
UTF16 = "utf-16"
UTF32 = "utf-32"


@dataclass(frozen=True, slots=True)
class Position:
    line: int  # 0-based
    character: int


def byte_col_to_units(line_text: str, byte_col: int, encoding: str = UTF16) -> int:
    """Convert a UTF-8 byte offset in ``line_text`` to a column in ``encoding`` units.

    >>> byte_col_to_units("é = x", 3)
    2
    """
    if encoding == UTF8:
        return byte_col
    prefix = line_text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore")
    if encoding == UTF32:
        return len(prefix)
    return len(prefix.encode("utf-16-le")) // 2


def units_to_byte_col(line_text: str, units: int, encoding: str = UTF16) -> int:
    """Inverse of :func:`byte_col_to_units` (clamped to the line)."""
    if encoding == UTF8:
        return min(units, len(line_text.encode("utf-8")))
    if encoding == UTF32:
        return len(line_text[:units].encode("utf-8"))
    count = 0
    for index, char in enumerate(line_text):
        if count >= units:
            return len(line_text[:index].encode("utf-8"))
        count += 2 if ord(char) > 0xFFFF else 1
    return len(line_text.encode("utf-8"))


class LineIndex:
    """Converts spans of one source text; lines are split once."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()

    def line_text(self, line0: int) -> str:
        return self.lines[line0] if 0 <= line0 < len(self.lines) else ""

    def to_position(self, line1: int, byte_col: int, encoding: str = UTF16) -> Position:
        line0 = max(line1 - 1, 0)
        return Position(line0, byte_col_to_units(self.line_text(line0), byte_col, encoding))

    def to_byte_col(self, line0: int, units: int, encoding: str = UTF16) -> int:
        return units_to_byte_col(self.line_text(line0), units, encoding)
