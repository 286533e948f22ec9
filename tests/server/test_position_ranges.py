"""Server-side span -> range conversion (RangeConverter, quick-fix edits) over texts with
characters that str.splitlines would break at: Python and LSP break only at \\n, \\r\\n, \\r."""

from __future__ import annotations

from lsprotocol import types

from fxls.fixes.base import TextEdit
from fxls.report import Span
from fxls.server.code_actions import _workspace_edit
from fxls.server.lsp_convert import RangeConverter

TEXT = "a = '\u2028'\x0c\nb = '😀'\r\nc = 1\rd = 2\n"


def _tuple(r: types.Range) -> tuple[int, int, int, int]:
    return r.start.line, r.start.character, r.end.line, r.end.character


def test_ranges_follow_python_lines_in_each_encoding(tmp_path):
    path = str(tmp_path / "m.py")
    d_value = Span(path, 4, 4, 4, 5)  # the `2` of `d = 2`
    after_emoji = Span(path, 2, 2, 9, 10)  # the closing quote after 😀 (4 bytes)
    utf16 = RangeConverter(path, TEXT, "utf-16")
    assert _tuple(utf16.range(d_value)) == (3, 4, 3, 5)
    assert _tuple(utf16.range(after_emoji)) == (1, 7, 1, 8)
    assert _tuple(RangeConverter(path, TEXT, "utf-8").range(after_emoji)) == (1, 9, 1, 10)
    assert _tuple(RangeConverter(path, TEXT, "utf-32").range(after_emoji)) == (1, 6, 1, 7)
    assert utf16.to_python(types.Position(1, 7)) == (2, 9)
    beyond = Span(path, 9, 9, 0, 3)
    assert _tuple(utf16.range(beyond)) == (4, 0, 4, 0)  # clamped to the document's end


def test_quick_fix_edits_land_on_the_python_line(tmp_path):
    path = str(tmp_path / "m.py")
    converter = RangeConverter(path, TEXT, "utf-16")
    edit = _workspace_edit("file:///m.py", [TextEdit(3, 0, 4, 0, "")], converter)
    (text_edit,) = edit.changes["file:///m.py"]
    assert _tuple(text_edit.range) == (2, 0, 3, 0)  # deletes the line `c = 1`
