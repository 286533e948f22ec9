"""The source lines a graph document carries (``sources``): each node's line with two lines
around it, and each problem's lines, so that the page shows the code in a browser without
an editor. Only the lines used are kept, each file read once."""

from __future__ import annotations

from collections.abc import Iterable

from fxls.project.notebooks import MalformedNotebook, NotebookCells, is_notebook, read_notebook
from fxls.project.python_source import read_python_source_or_replace
from fxls.project.source_text import SourceText

#: lines kept before and after a node's or a problem's own lines
AROUND = 2

#: ``(file, first line, last line)``, 1-based and inclusive
Place = tuple[str, int, int]


class SourceFiles:
    """The texts of the files a document names, each read once. Only Python files and
    notebooks are read: a report names files by what its spans say, and the page must not
    carry the lines of any other file (a key, a configuration) that a hostile report could
    name."""

    def __init__(self) -> None:
        self._texts: dict[str, SourceText | None] = {}
        self._cells: dict[str, NotebookCells] = {}

    def text(self, file: str) -> SourceText | None:
        """``file``'s text; None when it is not a Python file or cannot be read."""
        if file not in self._texts:
            self._texts[file] = self._read(file)
        return self._texts[file]

    def cells(self, file: str) -> NotebookCells | None:
        """Where the code cells of notebook ``file`` are in its text (None: not a
        notebook, or one that cannot be read)."""
        self.text(file)
        return self._cells.get(file)

    def label(self, file: str, line: int) -> str:
        """How ``fxls check`` names 1-based ``line`` of ``file``: ``12``, or in a notebook
        ``cell 4:2``."""
        cells = self.cells(file)
        return cells.label(line) if cells is not None else str(line)

    def _read(self, file: str) -> SourceText | None:
        if is_notebook(file):  # spans count lines of the code its cells join into
            try:
                notebook = read_notebook(file)
            except (MalformedNotebook, OSError):
                return None
            self._cells[file] = notebook.cells
            text = notebook.source
        elif file.endswith(".py"):
            text = read_python_source_or_replace(file)
        else:
            return None
        return SourceText(text) if text else None


def notebook_cells(files: SourceFiles, names: Iterable[str]) -> dict[str, list[list[int]]]:
    """``{notebook: [[cell, first line], ...]}`` for each notebook among ``names``: each code
    cell's number (1-based among all cells, as ruff names it) and the 1-based line of the
    notebook's text it starts at, so that the page names lines by cell and shows only the
    lines of a node's own cell."""
    found = {}
    for name in dict.fromkeys(names):
        cells = files.cells(name)
        if cells is not None:
            found[name] = [[cell + 1, first + 1]
                           for cell, first in zip(cells.cells, cells.first_lines, strict=True)]
    return found


def source_lines(files: SourceFiles, places: Iterable[Place]) -> dict[str, dict[str, str]]:
    """``{file: {"<line>": text}}``: the lines of each place and :data:`AROUND` lines on
    each side, in line order; files that cannot be read are left out."""
    wanted: dict[str, set[int]] = {}
    for file, first, last in places:
        wanted.setdefault(file, set()).update(range(first - AROUND, last + AROUND + 1))
    found: dict[str, dict[str, str]] = {}
    for file, numbers in wanted.items():
        text = files.text(file)
        if text is None:
            continue
        last = _last_line(text)
        lines = {str(n): text.line(n) for n in sorted(numbers) if 1 <= n <= last}
        if lines:
            found[file] = lines
    return found


def _last_line(text: SourceText) -> int:
    """The last line with content: a final line break ends the last line, it starts none."""
    ends_with_break = text.text.endswith(("\n", "\r"))
    return text.line_count - 1 if ends_with_break else text.line_count
