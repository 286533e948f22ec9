"""``notebookDocument/didOpen``: the notebook is one document (its cells, in order, one
Python source: ``server/notebooks``), analysed as a file is on open (the result cache's report
shown first); its diagnostics are published to its cells."""

from __future__ import annotations

from lsprotocol import types

from fxls.server.language_server import FxlsServer
from fxls.server.session import DocumentController


def on_notebook_open(ls: FxlsServer, params: types.DidOpenNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    ls.session.notebooks.open(uri)
    if uri not in ls.session.documents:
        ls.session.documents[uri] = DocumentController.opened(uri)
    ls.scheduler.schedule(uri, from_cache=True)
