"""``textDocument/hover``: the graph nodes an expression produced, from the report (no
tracing on hover)."""

from __future__ import annotations

from lsprotocol import types

from fxls.server.client_traits import position_encoding
from fxls.server.hover import hover_text
from fxls.server.language_server import FxlsServer


async def on_hover(ls: FxlsServer, params: types.HoverParams) -> types.Hover | None:
    uri = params.text_document.uri
    snapshot = await ls.scheduler.answering(uri)
    if snapshot is None:
        return None
    line, col = snapshot.converter(position_encoding(ls)).to_python(params.position)
    text = hover_text(snapshot.report, snapshot.path, line, col, uri)
    if text is None:
        return None
    return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, text))
