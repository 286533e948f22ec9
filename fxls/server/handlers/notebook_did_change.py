"""``notebookDocument/didChange``: pygls has applied it to its cells; a cell removed from the
notebook shows nothing any more, and with ``trace.onChange`` the notebook is analysed after a
pause in typing (else on save, as a file)."""

from __future__ import annotations

from lsprotocol import types

from fxls.server.language_server import FxlsServer


def on_notebook_change(ls: FxlsServer, params: types.DidChangeNotebookDocumentParams) -> None:
    cells = params.change.cells
    structure = cells.structure if cells is not None else None
    if structure is not None and structure.did_close:
        ls.publisher.clear_cells({cell.uri for cell in structure.did_close})
    config = ls.session.config
    # a cell's outputs or execution count changing (metadata) changes no source
    if config.trace_on_change and cells is not None and (cells.text_content or structure):
        ls.scheduler.schedule(params.notebook_document.uri,
                              config.trace_on_change_delay_ms / 1000)
