"""A Jupyter notebook as one Python source, and positions in that source mapped to its cells.

fxls analyses a notebook as ruff lints one: its code cells in order, joined into one Python
text (IPython's own lines neutralised line for line: :mod:`fxls.project.ipython_syntax`),
so that a module defined in one cell and used in a later one is analysed as Jupyter runs
it. :class:`NotebookCells` says where each code cell starts in that text; a position maps
to (cell, line, character) in the cell and back, the character unchanged (a cell starts
at column 0 of its line), whatever the encoding the position counts in.

>>> notebook = notebook_source([Cell("markdown", "# Title"), Cell("code", "x = 1\\ny = 2")])
>>> notebook.cells.to_cell(Position(2, 4))
CellPosition(cell=1, line=1, character=4)
>>> notebook.cells.to_text(1, 1, 4)
Position(line=2, character=4)
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fxls.project.files import MAX_SOURCE_BYTES, FileTooLarge, SkippedFile, read_regular_file
from fxls.project.ipython_syntax import neutralise_cell
from fxls.project.source_text import Position, SourceText

NOTEBOOK_SUFFIX = ".ipynb"
#: a notebook's file holds its outputs (images) too: read more of it than of a ``.py``
MAX_NOTEBOOK_BYTES = 64 << 20
#: the most code of a notebook fxls analyses (a ``.py`` file's bound)
MAX_NOTEBOOK_CODE = MAX_SOURCE_BYTES
#: the first line of every notebook's source: IPython's ``display`` is a builtin in
#: notebooks, a NameError in plain Python
PRELUDE = "display = print  # IPython's display(), a builtin in notebooks\n"


def is_notebook(path: str | Path) -> bool:
    return str(path).endswith(NOTEBOOK_SUFFIX)


@dataclass(frozen=True, slots=True)
class Cell:
    """A notebook cell as Jupyter and LSP's ``notebookDocument`` hold it."""

    kind: str  # "code", "markdown", "raw"
    source: str


@dataclass(frozen=True, slots=True)
class CellPosition:
    cell: int  # 0-based, among all the notebook's cells (markdown ones too)
    line: int  # 0-based, in the cell
    character: int  # in the units of the position it was mapped from


@dataclass(frozen=True, slots=True)
class NotebookCells:
    """Where each code cell starts in the notebook's source: ``cells[i]`` (its index among
    all cells) begins at 0-based line ``first_lines[i]``."""

    cells: tuple[int, ...]
    first_lines: tuple[int, ...]

    def to_cell(self, position: Position) -> CellPosition:
        """A position in the source -> the same place in its cell (a position before the
        first code cell, in the prelude, is the first cell's start)."""
        if not self.cells:
            return CellPosition(0, position.line, position.character)
        which = bisect.bisect_right(self.first_lines, position.line) - 1
        if which < 0:
            return CellPosition(self.cells[0], 0, 0)
        return CellPosition(self.cells[which], position.line - self.first_lines[which],
                            position.character)

    def to_text(self, cell: int, line: int, character: int) -> Position:
        """A place in code cell ``cell`` -> the position in the source (ValueError for a
        cell that is not a code cell of the notebook)."""
        return Position(self.first_lines[self.cells.index(cell)] + line, character)

    def label(self, line1: int) -> str:
        """``cell 3:12``: the 1-based line ``line1`` of the source as ruff names it (the cell
        1-based among all cells, the line in it)."""
        where = self.to_cell(Position(line1 - 1, 0))
        return f"cell {where.cell + 1}:{where.line + 1}"

    def relabel(self, text: str, file_name: str | None = None) -> str:
        """``text`` (a message) with the lines of the notebook's source it names in their
        cells: ``(line 25)`` as ``(cell 4:4)``, ``<file_name>:25`` as
        ``<file_name>:cell 4:4``."""
        def cell_label(match: re.Match[str]) -> str:
            return f"{match.group(1)}{self.label(int(match.group(2)))}{match.group(3)}"

        if file_name:
            text = re.sub(rf"(?<![\w.-])({re.escape(file_name)}:)(\d+)(\b)", cell_label,
                          text)
        return re.sub(r"(\()line (\d+)(\))", cell_label, text)

    def to_cell_range(self, start: Position, end: Position
                      ) -> tuple[CellPosition, CellPosition]:
        """A range in the source -> its start and end in the start's cell (a range that
        runs into a later cell ends where it starts: an edit never spans cells)."""
        first, last = self.to_cell(start), self.to_cell(end)
        return first, last if last.cell == first.cell else first


@dataclass(frozen=True, slots=True)
class Notebook:
    """What fxls analyses of a notebook (``source``) and where its cells are in it."""

    source: str
    cells: NotebookCells


class MalformedNotebook(Exception):
    """The file is not a notebook fxls can read: ``message`` says why, at 1-based ``line``
    and UTF-8 byte columns ``col``-``end_col`` of the file's text (``text``)."""

    def __init__(self, message: str, text: str, line: int = 1, col: int = 0,
                 end_col: int = 0) -> None:
        super().__init__(message)
        self.message, self.text = message, text
        self.line, self.col, self.end_col = line, col, end_col


def notebook_source(cells: Sequence[Cell]) -> Notebook:
    """The code cells of ``cells`` joined into one Python source, after :data:`PRELUDE`;
    each code cell starts on a line of its own."""
    parts, indexes, first_lines = [PRELUDE], [], []
    line = 1
    for index, cell in enumerate(cells):
        if cell.kind != "code":
            continue
        text = neutralise_cell(cell.source)
        if not text.endswith(("\n", "\r")):
            text += "\n"
        indexes.append(index)
        first_lines.append(line)
        parts.append(text)
        line += SourceText(text).line_count - 1
    return Notebook("".join(parts), NotebookCells(tuple(indexes), tuple(first_lines)))


def read_notebook(path: str | Path) -> Notebook:
    """The notebook at ``path``, read with fxls's one bounded reader; raises
    :class:`MalformedNotebook`, ``SkippedFile`` (a notebook in another language than
    Python), ``FileTooLarge`` or OSError."""
    data = read_regular_file(path, MAX_NOTEBOOK_BYTES)
    notebook = notebook_source(parse_cells(data, str(path)))
    size = len(notebook.source.encode("utf-8", "surrogatepass"))
    if size > MAX_NOTEBOOK_CODE:
        raise FileTooLarge(str(path), size, MAX_NOTEBOOK_CODE)
    return notebook


def parse_cells(data: bytes, path: str = "") -> list[Cell]:
    """The cells of a notebook file's bytes (nbformat 4; the ``cells`` of nbformat 3's first
    worksheet too); raises :class:`MalformedNotebook`."""
    text = data.decode("utf-8", "replace")
    try:
        document = json.loads(data)
    except UnicodeDecodeError as error:
        raise MalformedNotebook(f"the notebook is not UTF-8 text: {error.reason}", text) \
            from error
    except json.JSONDecodeError as error:
        line_text = SourceText(error.doc).line(error.lineno)
        col = len(line_text[: error.colno - 1].encode("utf-8", "surrogatepass"))
        raise MalformedNotebook(f"the notebook is not valid JSON: {error.msg}", text,
                                error.lineno, col, col + 1) from error
    if not isinstance(document, dict):
        raise MalformedNotebook("the notebook is not a JSON object", text)
    language = _language(document)
    if language is not None and not language.lower().startswith(("python", "ipython")):
        raise SkippedFile(path, f"a notebook in {language}, not Python")
    return [_cell(raw, number, text) for number, raw in enumerate(_raw_cells(document, text))]


def _raw_cells(document: dict[str, object], text: str) -> list[object]:
    cells = document.get("cells")
    worksheets = document.get("worksheets")
    if cells is None and isinstance(worksheets, list) and worksheets:
        first = worksheets[0]
        cells = first.get("cells") if isinstance(first, dict) else None
    if not isinstance(cells, list):
        raise MalformedNotebook("the notebook has no list of `cells`", text)
    return cells


def _cell(raw: object, number: int, text: str) -> Cell:
    if not isinstance(raw, dict) or not isinstance(raw.get("cell_type"), str):
        raise MalformedNotebook(f"cell {number + 1} of the notebook has no `cell_type`", text)
    source = raw.get("source", raw.get("input", ""))
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        source = "".join(source)
    if not isinstance(source, str):
        raise MalformedNotebook(
            f"cell {number + 1} of the notebook has a `source` that is not text", text)
    return Cell(raw["cell_type"], source)


def _language(document: dict[str, object]) -> str | None:
    """The notebook's language when its metadata says it (None: assume Python)."""
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        return None
    for key in ("language_info", "kernelspec"):
        section = metadata.get(key)
        name = section.get("name" if key == "language_info" else "language") \
            if isinstance(section, dict) else None
        if isinstance(name, str) and name:
            return name
    return None
