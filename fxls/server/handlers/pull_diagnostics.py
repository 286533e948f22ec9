"""``textDocument/diagnostic``: what a document shows, for a client that pulls (registered
at ``initialize`` for such a client only)."""

from __future__ import annotations

from lsprotocol import types

from fxls.server.language_server import FxlsServer


async def on_pull_diagnostics(
    ls: FxlsServer, params: types.DocumentDiagnosticParams
) -> types.DocumentDiagnosticReport:
    return ls.publisher.pulled(params.text_document.uri, params.previous_result_id)
