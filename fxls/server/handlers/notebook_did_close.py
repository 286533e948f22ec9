"""``notebookDocument/didClose``: the notebook's analyses stop, its cells show nothing, what
it found in other files goes."""

from __future__ import annotations

from lsprotocol import types

from fxls.server.language_server import FxlsServer


def on_notebook_close(ls: FxlsServer, params: types.DidCloseNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    ls.scheduler.forget(uri)
    cells = ls.session.notebooks.forget(uri)
    ls.publisher.clear_cells(cells | {cell.uri for cell in params.cell_text_documents})
    ls.publisher.republish(ls.session.diagnostics.withdraw(uri) - {uri})
