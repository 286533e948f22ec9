"""``textDocument/didOpen``: analyse the document (its result cache's report of this text
shown until the analysis answers); what other documents found in it for another text of it
is withdrawn, and found again by analysing them."""

from __future__ import annotations

from lsprotocol import types

from fxls.server.language_server import FxlsServer
from fxls.server.scheduler import DEPENDENTS_DELAY_S
from fxls.server.session import DocumentController


def on_open(ls: FxlsServer, params: types.DidOpenTextDocumentParams) -> None:
    uri = params.text_document.uri
    if uri not in ls.session.documents:
        ls.session.documents[uri] = DocumentController.opened(uri)
    ls.publisher.stop_pushing(uri)  # a client that pulls it from now on
    stale = ls.publisher.withdraw_stale(uri)
    # their analyses read the file from disk: analysed again when that is the editor's text
    if stale and ls.publisher.editor_text_on_disk(uri):
        for source in stale:
            if source in ls.session.documents and source != uri:
                ls.scheduler.schedule(source, DEPENDENTS_DELAY_S)
    ls.scheduler.schedule(uri, from_cache=True)
