"""``textDocument/didClose``: the document's analyses stop; its own diagnostics and what it
found in other files go, what other open documents found in it stays (shown for a file that
is not open)."""

from __future__ import annotations

from lsprotocol import types

from fxls.server.language_server import FxlsServer


def on_close(ls: FxlsServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.scheduler.forget(uri)
    ls.publisher.republish(ls.session.diagnostics.withdraw(uri))
