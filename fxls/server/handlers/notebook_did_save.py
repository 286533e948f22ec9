"""``notebookDocument/didSave``: analyse the notebook (unless its source was analysed as it
is), as a file on save."""

from __future__ import annotations

from lsprotocol import types

from fxls.server.language_server import FxlsServer


def on_notebook_save(ls: FxlsServer, params: types.DidSaveNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    if ls.session.config.trace_on_save and uri in ls.session.documents:
        ls.scheduler.schedule(uri, unless_unchanged=True)
