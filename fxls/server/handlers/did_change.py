"""``textDocument/didChange``: what other documents found in it points into the text before
this edit and is withdrawn; with ``trace.onChange``, an analysis after a pause in typing."""

from __future__ import annotations

from lsprotocol import types

from fxls.server.language_server import FxlsServer


def on_change(ls: FxlsServer, params: types.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.publisher.withdraw_stale(uri)
    config = ls.session.config
    if config.trace_on_change:
        ls.scheduler.schedule(uri, config.trace_on_change_delay_ms / 1000)
