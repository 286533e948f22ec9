"""A closed notebook's diagnostics, as the project check publishes them.

VS Code shows a diagnostic inside a notebook cell only on that cell's URI
(``vscode-notebook-cell:...#...``), and a cell has a URI only while its notebook is open.
ruff's server lints open documents only, so it shows nothing for a closed notebook; the
closest useful thing is the Problems panel: a closed notebook's diagnostics are published
on the notebook's own file URI, at its start, each message naming its cell as ``fxls
check`` does (``cell 3:2: ...``). When the notebook is opened its analysis publishes per
cell and what was on the file URI is cleared (``Publisher._push_cells``).
"""

from __future__ import annotations

import attrs
from lsprotocol import types

from fxls.project.notebooks import NotebookCells
from fxls.project.source_text import Position

_FILE_START = types.Range(types.Position(0, 0), types.Position(0, 0))


def on_notebook_file(diagnostics: list[types.Diagnostic], cells: NotebookCells,
                     file_name: str) -> list[types.Diagnostic]:
    """``diagnostics`` of the notebook's source as its file shows them: at the file's start,
    the message led by the cell and line (``cell 3:2:5``) and its lines named in cells."""
    shown = []
    for diagnostic in diagnostics:
        start = diagnostic.range.start
        where = cells.to_cell(Position(start.line, start.character))
        label = f"cell {where.cell + 1}:{where.line + 1}:{where.character + 1}"
        message = f"{label}: {cells.relabel(diagnostic.message, file_name)}"
        shown.append(attrs.evolve(diagnostic, range=_FILE_START, message=message,
                                  related_information=None))
    return shown
