"""A notebook as the Python source fxls analyses: IPython's lines neutralised line for line,
code cells joined in order, positions mapped to their cell and back (no analysis runs)."""

from __future__ import annotations

import doctest
import json

import pytest

from fxls.project import ipython_syntax, notebooks
from fxls.project.files import SkippedFile
from fxls.project.ipython_syntax import neutralise_cell
from fxls.project.notebooks import (
    PRELUDE,
    Cell,
    CellPosition,
    MalformedNotebook,
    notebook_source,
    parse_cells,
)
from fxls.project.source_text import Position


@pytest.mark.parametrize(("cell", "python"), [
    ("%matplotlib inline\nimport torch\n", "pass\nimport torch\n"),
    ("!pip install timm\n", "pass\n"),
    ("files = !ls -la\nout = %sx ls\n", "files = None\nout = None\n"),
    ("model?\n??model.forward\n", "pass\npass\n"),
    ("for _ in range(2):\n    %time f()\n", "for _ in range(2):\n    pass\n"),
    ("%%time\nx = f()\n", "pass\nx = f()\n"),
    ("%%bash\necho $((1 + 2))\n", "\n\n"),
    ("\n%%writefile a.py\nprint(1)", "\n\n"),
    ("x = 5 % 2\ny = x != 1\n", "x = 5 % 2\ny = x != 1\n"),
])
def test_ipython_lines_become_python_that_does_nothing(cell: str, python: str):
    assert neutralise_cell(cell) == python


@pytest.mark.parametrize("cell", [
    'TEMPLATE = """\n%d items\n!done\n"""\n',  # inside a string
    "SIZES = [\n    1,\n%2,\n]\n",  # inside brackets (Python's own error if any)
    "x = 1 + \\\n!2\n",  # after a backslash
    "# %time f()\n",  # a comment
])
def test_a_line_that_continues_a_statement_is_python(cell: str):
    assert neutralise_cell(cell) == cell


def test_a_string_or_bracket_closed_on_its_line_ends_there():
    cell = "s = 'it\\'s'  # ( \\\n%x\nt = (1,\n     2)\n!ls\n"
    assert neutralise_cell(cell) == "s = 'it\\'s'  # ( \\\npass\nt = (1,\n     2)\npass\n"


def test_line_breaks_and_line_count_are_kept():
    assert neutralise_cell("!ls\r\nx = 1\r%time y\n") == "pass\r\nx = 1\rpass\n"


CELLS = [
    Cell("markdown", "# Title\n\ntext"),
    Cell("code", "import torch\nx = 1"),
    Cell("raw", "raw"),
    Cell("code", "!pip install timm\ny = 2\n"),
    Cell("code", ""),
    Cell("code", "z = 3"),
]


def test_code_cells_join_in_order_each_on_lines_of_its_own():
    notebook = notebook_source(CELLS)
    assert notebook.source == PRELUDE + "import torch\nx = 1\npass\ny = 2\n\nz = 3\n"
    assert notebook.cells.cells == (1, 3, 4, 5)
    assert notebook.cells.first_lines == (1, 3, 5, 6)


def test_positions_map_to_their_cell_and_back():
    cells = notebook_source(CELLS).cells
    source = notebook_source(CELLS).source.split("\n")
    for cell, line, text in [(1, 1, "x = 1"), (3, 1, "y = 2"), (5, 0, "z = 3")]:
        position = cells.to_text(cell, line, 4)
        assert source[position.line] == text
        assert cells.to_cell(position) == CellPosition(cell, line, 4)
    assert cells.to_cell(Position(0, 7)) == CellPosition(1, 0, 0)  # the prelude
    with pytest.raises(ValueError):
        cells.to_text(2, 0, 0)  # a raw cell is not analysed


def test_a_range_never_spans_cells():
    cells = notebook_source(CELLS).cells
    start, end = cells.to_cell_range(Position(2, 0), Position(4, 3))
    assert (start, end) == (CellPosition(1, 1, 0), CellPosition(1, 1, 0))


def test_lines_named_in_messages_are_named_in_their_cells():
    cells = notebook_source(CELLS).cells
    assert cells.relabel("raised at nb.ipynb:5 (`y = 2`), see mynb.ipynb:5", "nb.ipynb") == \
        "raised at nb.ipynb:cell 4:2 (`y = 2`), see mynb.ipynb:5"
    assert cells.relabel("Block(8) (line 7)") == "Block(8) (cell 6:1)"


def _json(document: object) -> bytes:
    return json.dumps(document).encode()


def test_nbformat_sources_as_lists_or_text_and_nbformat_3():
    v4 = {"cells": [{"cell_type": "code", "source": ["a = 1\n", "b = 2"]}]}
    v3 = {"worksheets": [{"cells": [{"cell_type": "code", "input": "c = 3"}]}]}
    assert parse_cells(_json(v4)) == [Cell("code", "a = 1\nb = 2")]
    assert parse_cells(_json(v3)) == [Cell("code", "c = 3")]


MISSING_COMMA = b'{"cells": [\n  {"cell_type": "code" "source": []}]}'
AT_SOURCE = MISSING_COMMA.split(b"\n")[1].index(b'"source"')


@pytest.mark.parametrize(("data", "message", "where"), [
    (MISSING_COMMA, "the notebook is not valid JSON: Expecting ',' delimiter",
     (2, AT_SOURCE, AT_SOURCE + 1)),
    (b"[1]", "the notebook is not a JSON object", (1, 0, 0)),
    (b'{"cells": {}}', "the notebook has no list of `cells`", (1, 0, 0)),
    (b'{"cells": [{"source": ""}]}', "cell 1 of the notebook has no `cell_type`", (1, 0, 0)),
    (b'{"cells": [{"cell_type": "code", "source": [1]}]}',
     "cell 1 of the notebook has a `source` that is not text", (1, 0, 0)),
    (b'{"cells": [\xff]}', "the notebook is not UTF-8 text: invalid start byte", (1, 0, 0)),
])
def test_a_malformed_notebook_says_what_and_where(data: bytes, message: str, where: tuple):
    with pytest.raises(MalformedNotebook) as raised:
        parse_cells(data)
    assert raised.value.message == message
    assert (raised.value.line, raised.value.col, raised.value.end_col) == where


def test_a_notebook_in_another_language_is_skipped():
    document = {"metadata": {"kernelspec": {"language": "R"}}, "cells": []}
    with pytest.raises(SkippedFile, match="a notebook in R, not Python"):
        parse_cells(_json(document), "r.ipynb")
    python = {"metadata": {"language_info": {"name": "python"}}, "cells": []}
    assert parse_cells(_json(python)) == []


@pytest.mark.parametrize("module", [ipython_syntax, notebooks])
def test_the_docstrings_examples_hold(module):
    assert doctest.testmod(module).failed == 0
