"""Server-side span -> range conversion (RangeConverter, quick-fix edits) over texts with
characters that str.splitlines would break at: Python and LSP break only at \\n, \\r\\n, \\r."""

from __future__ import annotations

import os

from lsprotocol import types

from fxls.fixes.base import TextEdit
from fxls.report import Span
from fxls.server.code_actions import _workspace_edit
from fxls.server.lsp_convert import RangeConverter, on_disk

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


def test_a_file_on_disk_is_read_once_until_it_changes(tmp_path):
    library = tmp_path / "library.py"
    library.write_text("x = 1\né = 2\n", encoding="utf-8")
    span = Span(str(library), 2, 2, 0, 2)  # `é` is two bytes

    def converted() -> tuple[int, int, int, int]:
        document = tmp_path / "model.py"
        return _tuple(RangeConverter(str(document), "", "utf-16").range(span))

    assert converted() == (1, 0, 1, 1)
    first = on_disk(str(library.resolve()))
    assert on_disk(str(library.resolve())) is first  # kept between publishes
    library.write_text("x = 1\nab = 2\n", encoding="utf-8")  # same size, new contents
    os.utime(library, ns=(1, 1))
    assert converted() == (1, 0, 1, 2)  # read again: the change is seen
    assert on_disk(str(library.resolve())) is not first
