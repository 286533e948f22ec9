"""Reading a Python file's text as Python does: a UTF-8 BOM, a PEP 263 coding declaration.

Line breaks are kept as they are in the file (positions count them as Python does, see
:mod:`fxls.project.source_text`).
"""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

from fxls.project.files import read_regular_file
from fxls.project.source_text import source_text


class UndecodableSource(Exception):
    """The file's bytes are not text in the encoding Python would read it with.

    ``text`` is the file decoded with replacement characters (to show positions in), and
    (``line``, ``col``)-(``end_line``, ``end_col``) the span of the problem in it (1-based
    line, UTF-8 byte columns).
    """

    def __init__(self, message: str, text: str, line: int, col: int, end_col: int) -> None:
        super().__init__(message)
        self.message, self.text = message, text
        self.line, self.col, self.end_col = line, col, end_col


def read_python_source(path: str | Path) -> str:
    """The text of the regular file at ``path``, read with a bounded read that cannot block
    (:func:`fxls.project.files.read_regular_file`); raises OSError (``SkippedFile``,
    ``FileTooLarge`` among them) or :class:`UndecodableSource`."""
    return decode_python_source(read_regular_file(path))


def read_python_source_or_replace(path: str | Path) -> str:
    """The text of ``path`` for showing positions: undecodable bytes replaced, "" when the
    file cannot be read (not a regular file, too large, unreadable)."""
    try:
        return read_python_source(path)
    except UndecodableSource as error:
        return error.text
    except OSError:
        return ""


def decode_python_source(data: bytes) -> str:
    """``data`` decoded as Python decodes a source file (a BOM is dropped)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:  # an unknown encoding, or a BOM with another declaration
        text = data.decode("utf-8", "replace")
        line = _declaration_line(text)
        raise UndecodableSource(f"SyntaxError: {error}", text, line, 0,
                                source_text(text).byte_length(line)) from error
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as error:
        text = data.decode(encoding, "replace")
        before = source_text(data[: error.start].decode(encoding))
        line = before.line_count
        col = before.byte_length(line)
        declared = "declared" if encoding not in ("utf-8", "utf-8-sig") else "default"
        message = (f"SyntaxError: byte 0x{data[error.start]:02x} on line {line} is not "
                   f"{encoding} (the file's {declared} encoding): Python cannot read the file; "
                   "save it as UTF-8 or declare its encoding (PEP 263)")
        raise UndecodableSource(message, text, line, col, col + len("\ufffd".encode())) \
            from error


def _declaration_line(text: str) -> int:
    lines = source_text(text).lines()[:2]
    return next((number for number, line in enumerate(lines, 1) if "coding" in line), 1)
