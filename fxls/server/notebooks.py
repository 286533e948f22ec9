"""The open notebooks as the server sees them: one document per notebook, its cells' URIs.

An editor that syncs notebooks (LSP 3.17 ``notebookDocument/*``) sends each code cell as a
text document of its own (pygls keeps them in ``workspace.text_documents`` and the notebook
in ``workspace.notebook_documents``). fxls analyses the notebook as one document, as
``fxls check`` does: its notebook URI, the Python source ``fxls.project.notebooks``
makes of its cells' current texts. What is shown goes back to the cells: a
:class:`NotebookText` remembers, for the notebook version an analysis read, which cell URI
holds which lines of that source, so that the diagnostics of that version are published
per cell URI (every cell gets its list, an empty one too), and a request on a cell URI is
asked of the notebook at the matching position (``cell_requests``).

>>> text = NotebookText("file:///nb.ipynb", 3, *_layout(
...     [("cell:1", "code", "x = 1\\n", 1), ("cell:2", "markdown", "# hi", 1),
...      ("cell:3", "code", "y = 2\\n", 4)]))
>>> text.to_source("cell:3", types.Position(0, 4))  # line 0 is the source's prelude
2:4
>>> text.to_cell(types.Position(2, 4))
('cell:3', 0:4)
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from urllib.parse import unquote

import attrs
from lsprotocol import types
from pygls.uris import to_fs_path
from pygls.workspace import Workspace

from fxls.project.notebooks import Cell, NotebookCells, notebook_source
from fxls.project.source_text import Position

#: the notebook versions whose cell layout is kept per notebook (an analysis in flight, the
#: one shown and the one being typed)
KEPT_VERSIONS = 8


@dataclass(frozen=True, slots=True)
class NotebookText:
    """One version of a notebook: the Python source fxls analyses of it and where its cells
    are in that source."""

    uri: str
    version: int
    source: str
    cells: NotebookCells
    #: the URI of each cell, by its index among all cells (``cells`` counts the same way)
    cell_uris: tuple[str, ...]
    #: each cell's text document version
    cell_versions: tuple[int | None, ...]

    @property
    def code_cell_uris(self) -> list[str]:
        return [self.cell_uris[index] for index in self.cells.cells]

    def holds(self, cell_uri: str) -> bool:
        """Whether ``cell_uri`` is a code cell of this version."""
        return self._index(cell_uri) in self.cells.cells

    def _index(self, cell_uri: str) -> int:
        # pygls keys documents by unquoted uri; an editor may quote a cell's fragment
        wanted = unquote(cell_uri)
        return next((i for i, uri in enumerate(self.cell_uris) if unquote(uri) == wanted), -1)

    def to_source(self, cell_uri: str, position: types.Position) -> types.Position:
        """A position in code cell ``cell_uri`` -> the same place in the source."""
        at = self.cells.to_text(self._index(cell_uri), position.line, position.character)
        return types.Position(at.line, at.character)

    def to_cell(self, position: types.Position) -> tuple[str, types.Position]:
        """A position in the source -> its cell's URI and the position in that cell."""
        at = self.cells.to_cell(Position(position.line, position.character))
        return self.cell_uris[at.cell], types.Position(at.line, at.character)

    def range_to_cell(self, at: types.Range) -> tuple[str, types.Range]:
        """A range in the source -> its cell's URI and the range in it (a range running
        into a later cell ends where it starts)."""
        start, end = self.cells.to_cell_range(Position(at.start.line, at.start.character),
                                              Position(at.end.line, at.end.character))
        return self.cell_uris[start.cell], types.Range(
            types.Position(start.line, start.character),
            types.Position(end.line, end.character))

    def range_to_source(self, cell_uri: str, at: types.Range) -> types.Range:
        return types.Range(self.to_source(cell_uri, at.start), self.to_source(cell_uri, at.end))

    def cell_version(self, cell_uri: str) -> int | None:
        return self.cell_versions[self._index(cell_uri)]

    def split(self, diagnostics: Iterable[types.Diagnostic]
              ) -> dict[str, list[types.Diagnostic]]:
        """The notebook's diagnostics by the code cell that shows them (each code cell has
        a list, an empty one when it shows none), in cell coordinates; their related
        information inside the notebook points at cells too."""
        by_cell: dict[str, list[types.Diagnostic]] = {uri: [] for uri in self.code_cell_uris}
        if not by_cell:
            return by_cell  # no code cell: nowhere to show anything
        for diagnostic in diagnostics:
            cell_uri, at = self.range_to_cell(diagnostic.range)
            related = [self._related_in_cell(item)
                       for item in diagnostic.related_information or []] or None
            message = self.cells.relabel(diagnostic.message, file_name(self.uri))
            by_cell.setdefault(cell_uri, []).append(attrs.evolve(
                diagnostic, range=at, message=message, related_information=related))
        return by_cell

    def _related_in_cell(self, item: types.DiagnosticRelatedInformation
                         ) -> types.DiagnosticRelatedInformation:
        if not _same_file(item.location.uri, self.uri):
            return item
        cell_uri, at = self.range_to_cell(item.location.range)
        return types.DiagnosticRelatedInformation(types.Location(cell_uri, at), item.message)


def file_name(uri: str) -> str:
    return os.path.basename(to_fs_path(uri) or uri)


def _same_file(uri: str, notebook_uri: str) -> bool:
    path, notebook = to_fs_path(uri), to_fs_path(notebook_uri)
    if path is None or notebook is None:
        return uri == notebook_uri
    return os.path.realpath(path) == os.path.realpath(notebook)


def _layout(cells: Sequence[tuple[str, str, str, int | None]]
            ) -> tuple[str, NotebookCells, tuple[str, ...], tuple[int | None, ...]]:
    """(uri, kind, text, version) of each cell -> source, cell map, uris, versions."""
    notebook = notebook_source([Cell(kind, text) for _uri, kind, text, _version in cells])
    return (notebook.source, notebook.cells, tuple(uri for uri, *_ in cells),
            tuple(version for *_, version in cells))


def current_text(workspace: Workspace, uri: str) -> NotebookText | None:
    """The notebook ``uri`` as the editor holds it now; None when ``uri`` is no open
    notebook. A code cell in another language than Python (a cell the editor sent
    anyway) is not analysed."""
    notebook = workspace.get_notebook_document(notebook_uri=uri)
    if notebook is None:
        return None
    cells = []
    for cell in notebook.cells:
        document = workspace.text_documents.get(unquote(cell.document))
        text = document.source if document is not None else ""
        python = document is None or (document.language_id or "python") == "python"
        kind = "code" if cell.kind == types.NotebookCellKind.Code and python else "markdown"
        cells.append((cell.document, kind, text, document.version if document else None))
    return NotebookText(uri, notebook.version, *_layout(cells))


@dataclass(slots=True, eq=False)
class Notebooks:
    """The layouts of the open notebooks' versions the analyses read, and the cells each
    notebook's diagnostics were published to."""

    #: notebook uri -> version -> the text of that version
    _read: dict[str, dict[int, NotebookText]] = field(default_factory=dict)
    #: notebook uri -> the cell uris its diagnostics were published to
    _published: dict[str, set[str]] = field(default_factory=dict)

    def read(self, workspace: Workspace, uri: str) -> NotebookText | None:
        """The notebook's current text (None: ``uri`` is no open notebook), remembered for
        its version: what is published for that version is split by its layout."""
        text = current_text(workspace, uri)
        if text is None:
            return None
        versions = self._read.setdefault(uri, {})
        versions[text.version] = text
        for old in sorted(versions)[:-KEPT_VERSIONS]:
            del versions[old]
        return text

    def open(self, uri: str) -> None:
        """Notebook ``uri`` was opened: what is published for it goes to its cells."""
        self._read.setdefault(uri, {})

    def is_notebook(self, uri: str) -> bool:
        return uri in self._read

    def analysed(self, uri: str, version: int | None) -> NotebookText | None:
        """The text of version ``version`` of notebook ``uri`` an analysis read."""
        return self._read.get(uri, {}).get(version) if version is not None else None

    def per_cell(self, uri: str, diagnostics: list[types.Diagnostic], version: int | None
                 ) -> dict[str, tuple[list[types.Diagnostic], int | None]]:
        """What each cell of notebook ``uri`` shows of its ``diagnostics`` (those of
        ``version``) and the cell's version: every code cell of that version, and an empty
        list for a cell published to before that is gone."""
        text = self.analysed(uri, version)
        shown = text.split(diagnostics) if text is not None else {}
        published = self._published.setdefault(uri, set())
        answer = {cell: ([], None) for cell in published - set(shown)}
        for cell, items in shown.items():
            answer[cell] = (items, text.cell_version(cell) if text is not None else None)
        self._published[uri] = set(shown)
        return answer

    def forget(self, uri: str) -> set[str]:
        """Notebook ``uri`` was closed: the cells its diagnostics were published to."""
        self._read.pop(uri, None)
        return self._published.pop(uri, set())

    def cell_notebook(self, workspace: Workspace, cell_uri: str) -> str | None:
        """The open notebook ``cell_uri`` is a cell of (None: not a notebook's cell)."""
        notebook = workspace.get_notebook_document(cell_uri=cell_uri)
        return notebook.uri if notebook is not None and self.is_notebook(notebook.uri) else None
