"""SourceText: lines as Python and LSP break them, exact round-trips of every conversion."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fxls.project.source_text import UTF8, UTF16, UTF32, Position, SourceText
from fxls.report import Span

ENCODINGS = (UTF8, UTF16, UTF32)
#: every separator Python or str.splitlines knows; only the first three break lines
SEPARATORS = ["\n", "\r\n", "\r", "\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028",
              "\u2029"]
PIECES = st.one_of(
    st.sampled_from(SEPARATORS),
    st.sampled_from(["é", "€", "😀", "\U0001d518", "a", " ", "x = 1", "\t"]),
    st.text(max_size=5),
)
TEXTS = st.lists(PIECES, max_size=30).map("".join)
BOUNDED = settings(max_examples=300, deadline=None)


def _expected_lines(text: str) -> list[str]:
    """Lines as the Python tokenizer and LSP see them (independent of the implementation)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def test_lines_break_only_at_newline_carriage_return():
    text = "a\x0cb\u2028c\r\nd\re\nf\x85g"
    assert SourceText(text).lines() == ["a\x0cb\u2028c", "d", "e", "f\x85g"]
    assert SourceText("").lines() == [""]
    assert SourceText("x\n").lines() == ["x", ""]


def test_byte_columns_convert_to_each_encoding():
    text = SourceText("é = '😀' + x\n")
    x_col = 14  # bytes before x: é and 😀 take 2 and 4
    assert text.to_position(1, x_col, UTF16) == Position(0, 11)
    assert text.to_position(1, x_col, UTF32) == Position(0, 10)
    assert text.to_position(1, x_col, UTF8) == Position(0, 14)
    assert text.to_byte_col(0, 11, UTF16) == x_col
    assert text.to_byte_col(0, 10, UTF32) == x_col
    assert text.text_at(Span("f", 1, 1, x_col, x_col + 1)) == "x"


def test_positions_outside_the_text_are_clamped_inside_it():
    text = SourceText("ab\ncd")
    assert text.to_position(0, 5) == Position(0, 0)
    assert text.to_position(9, 0) == Position(1, 2)
    assert text.to_position(1, 99) == Position(0, 2)
    assert text.to_range(Span("f", 2, 1, 1, 0)) == (Position(1, 1), Position(1, 1))
    assert text.to_byte_col(7, 3) == 0
    assert text.text_at(Span("f", 1, 2, 1, 99)) == "b\ncd"


@BOUNDED
@given(TEXTS)
def test_lines_match_python_and_lsp(text: str):
    source = SourceText(text)
    assert source.lines() == _expected_lines(text)
    for index, start in enumerate(source.line_starts):
        assert text[start:].startswith(source.line_text(index))


@BOUNDED
@given(TEXTS, st.data())
def test_every_character_boundary_round_trips(text: str, data: st.DataObject):
    source = SourceText(text)
    line0 = data.draw(st.integers(0, source.line_count - 1))
    line = source.line_text(line0)
    char_col = data.draw(st.integers(0, len(line)))
    byte_col = len(line[:char_col].encode("utf-8", "surrogatepass"))
    assert source.char_to_byte_col(line0 + 1, char_col) == byte_col
    assert source.offset(line0 + 1, byte_col) == source.line_starts[line0] + char_col
    for encoding in ENCODINGS:
        position = source.to_position(line0 + 1, byte_col, encoding)
        expected = {UTF8: byte_col, UTF32: char_col,
                    UTF16: len(line[:char_col].encode("utf-16-le", "surrogatepass")) // 2}
        assert position == Position(line0, expected[encoding])
        assert source.to_byte_col(position.line, position.character, encoding) == byte_col


@BOUNDED
@given(TEXTS, st.integers(-3, 40), st.integers(-3, 200), st.integers(-3, 40),
       st.integers(-3, 200))
def test_any_span_gives_a_range_inside_the_document(
    text: str, line: int, col: int, end_line: int, end_col: int
):
    source = SourceText(text)
    span = Span("f", line, end_line, col, end_col)
    for encoding in ENCODINGS:
        start, end = source.to_range(span, encoding)
        assert (start.line, start.character) <= (end.line, end.character)
        for position in (start, end):
            assert 0 <= position.line < source.line_count
            line_text = source.line_text(position.line)
            limit = {UTF8: len(line_text.encode("utf-8", "surrogatepass")),
                     UTF32: len(line_text),
                     UTF16: len(line_text.encode("utf-16-le", "surrogatepass")) // 2}
            assert 0 <= position.character <= limit[encoding]
    assert source.text_at(span) in text
