"""Requests asked on a notebook's cell, answered from the notebook's analysis: the one
translation between a cell and its notebook, at the boundary of the request handlers.

A hover, inlay hints, code lenses or code actions asked on a cell URI are asked of the
notebook's document instead (its URI, the position in its source, by the layout of the
version its snapshot analysed); the answer comes back in the cell: only what lies in that
cell, at its position there, and a quick fix's edit on the cell's URI. The handlers
(``handlers/hover.py``...) never see a cell. ``routes`` puts :func:`in_cells` on each.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import attrs
from lsprotocol import types

from fxls.server.client_traits import versioned_edits
from fxls.server.language_server import FxlsServer
from fxls.server.notebooks import NotebookText, file_name

Handler = Callable[[FxlsServer, Any], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class InCell:
    """A request on ``cell_uri``, a code cell of ``notebook`` (the text its answer is of)."""

    ls: FxlsServer
    notebook: NotebookText
    cell_uri: str

    def in_this_cell(self, position: types.Position) -> types.Position | None:
        """A position of the notebook's source -> in this cell (None: another cell's)."""
        cell_uri, at = self.notebook.to_cell(position)
        return at if unquote(cell_uri) == unquote(self.cell_uri) else None

    def range_here(self, at: types.Range) -> types.Range | None:
        cell_uri, moved = self.notebook.range_to_cell(at)
        return moved if unquote(cell_uri) == unquote(self.cell_uri) else None

    def to_notebook(self) -> types.TextDocumentIdentifier:
        return types.TextDocumentIdentifier(self.notebook.uri)

    def relabel(self, text: str) -> str:
        """``text`` with the lines of the notebook's source it names (``(line 22)``) named
        in their cells (``(cell 4:4)``), as ``fxls check`` names them."""
        return self.notebook.cells.relabel(text, file_name(self.notebook.uri))


@dataclass(frozen=True, slots=True)
class Translation:
    """How one method's params go to the notebook and its answer comes back."""

    params: Callable[[InCell, Any], Any]
    answer: Callable[[InCell, Any], Any]
    #: the answer when the cell is not in the notebook's analysed version
    empty: Callable[[], Any]


def in_cells(handler: Handler, translation: Translation) -> Handler:
    """``handler``, also answering for a notebook's cells (any other URI goes through as
    it is)."""

    @functools.wraps(handler)
    async def answer(ls: FxlsServer, params: Any) -> Any:
        notebook_uri = ls.session.notebooks.cell_notebook(ls.workspace,
                                                          params.text_document.uri)
        if notebook_uri is None:
            return await handler(ls, params)
        snapshot = await ls.scheduler.answering(notebook_uri)
        notebook = ls.session.notebooks.analysed(
            notebook_uri, snapshot.version if snapshot is not None else None)
        if notebook is None or not notebook.holds(params.text_document.uri):
            return translation.empty()
        cell = InCell(ls, notebook, params.text_document.uri)
        return translation.answer(cell, await handler(ls, translation.params(cell, params)))

    return answer


# -- hover ------------------------------------------------------------------------------------

def _hover_params(cell: InCell, params: types.HoverParams) -> types.HoverParams:
    return attrs.evolve(params, text_document=cell.to_notebook(),
                        position=cell.notebook.to_source(cell.cell_uri, params.position))


def _hover_answer(cell: InCell, hover: types.Hover | None) -> types.Hover | None:
    if hover is None:
        return None
    if isinstance(hover.contents, types.MarkupContent):
        hover = attrs.evolve(hover, contents=attrs.evolve(
            hover.contents, value=cell.relabel(hover.contents.value)))
    if hover.range is None:
        return hover
    at = cell.range_here(hover.range)
    return attrs.evolve(hover, range=at) if at is not None else None


HOVER = Translation(_hover_params, _hover_answer, lambda: None)


# -- inlay hints ------------------------------------------------------------------------------

def _inlay_params(cell: InCell, params: types.InlayHintParams) -> types.InlayHintParams:
    return attrs.evolve(params, text_document=cell.to_notebook(),
                        range=cell.notebook.range_to_source(cell.cell_uri, params.range))


def _inlay_answer(cell: InCell, hints: list[types.InlayHint]) -> list[types.InlayHint]:
    kept = []
    for hint in hints:
        at = cell.in_this_cell(hint.position)
        if at is not None:
            kept.append(attrs.evolve(hint, position=at))
    return kept


INLAY_HINTS = Translation(_inlay_params, _inlay_answer, list)


# -- code lenses ------------------------------------------------------------------------------

def _lens_params(cell: InCell, params: types.CodeLensParams) -> types.CodeLensParams:
    return attrs.evolve(params, text_document=cell.to_notebook())


def _lens_answer(cell: InCell, lenses: list[types.CodeLens]) -> list[types.CodeLens]:
    kept = []
    for lens in lenses:
        at = cell.range_here(lens.range)
        if at is None:
            continue
        command = lens.command
        if command is not None:
            command = attrs.evolve(command, title=cell.relabel(command.title))
        kept.append(attrs.evolve(lens, range=at, command=command))
    return kept


CODE_LENSES = Translation(_lens_params, _lens_answer, list)


# -- code actions -----------------------------------------------------------------------------

def _action_params(cell: InCell, params: types.CodeActionParams) -> types.CodeActionParams:
    to_source = functools.partial(cell.notebook.range_to_source, cell.cell_uri)
    diagnostics = [attrs.evolve(d, range=to_source(d.range))
                   for d in params.context.diagnostics]
    return attrs.evolve(params, text_document=cell.to_notebook(), range=to_source(params.range),
                        context=attrs.evolve(params.context, diagnostics=diagnostics))


def _action_answer(cell: InCell, actions: list[types.CodeAction]) -> list[types.CodeAction]:
    moved = []
    for action in actions:
        diagnostics = [attrs.evolve(d, range=cell.notebook.range_to_cell(d.range)[1])
                       for d in action.diagnostics or []] or None
        moved.append(attrs.evolve(action, diagnostics=diagnostics,
                                  edit=_edit_in_cells(cell, action.edit)))
    return moved


def _edit_in_cells(cell: InCell, edit: types.WorkspaceEdit | None
                   ) -> types.WorkspaceEdit | None:
    """``edit`` of the notebook's source as edits of its cells, each on its cell's URI
    (``documentChanges`` for the cell's current version where the client takes them)."""
    if edit is None:
        return None
    by_uri: dict[str, list[types.TextEdit]] = {}
    changes = list((edit.changes or {}).items()) + [
        (change.text_document.uri, change.edits) for change in edit.document_changes or []
        if isinstance(change, types.TextDocumentEdit)]
    for uri, edits in changes:
        for text_edit in edits:
            if uri != cell.notebook.uri:
                by_uri.setdefault(uri, []).append(text_edit)
                continue
            cell_uri, at = cell.notebook.range_to_cell(text_edit.range)
            by_uri.setdefault(cell_uri, []).append(types.TextEdit(at, text_edit.new_text))
    if not versioned_edits(cell.ls.client_capabilities):
        return types.WorkspaceEdit(changes=by_uri)
    return types.WorkspaceEdit(document_changes=[
        types.TextDocumentEdit(types.OptionalVersionedTextDocumentIdentifier(
            uri, _open_version(cell.ls, uri)), list(edits))
        for uri, edits in by_uri.items()
    ])


def _open_version(ls: FxlsServer, uri: str) -> int | None:
    document = ls.workspace.text_documents.get(unquote(uri))
    return document.version if document is not None else None


CODE_ACTIONS = Translation(_action_params, _action_answer, list)
