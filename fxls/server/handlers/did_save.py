"""``textDocument/didSave``: analyse the document (unless its text was analysed as it is)
and, after a short debounce, the open documents that depend on it."""

from __future__ import annotations

from lsprotocol import types

from fxls.server.language_server import FxlsServer
from fxls.server.scheduler import DEPENDENTS_DELAY_S


def on_save(ls: FxlsServer, params: types.DidSaveTextDocumentParams) -> None:
    if not ls.session.config.trace_on_save:
        return
    uri = params.text_document.uri
    # a file that is not open is never run (only its dependents are)
    if uri in ls.session.documents:
        ls.scheduler.schedule(uri, unless_unchanged=True)
    for dependent in ls.scheduler.dependents_of(uri):
        ls.scheduler.schedule(dependent, DEPENDENTS_DELAY_S)
