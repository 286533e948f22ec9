"""``textDocument/inlayHint``: the tensor shape of each assignment in the range."""

from __future__ import annotations

from lsprotocol import types

from fxls.server.client_traits import position_encoding
from fxls.server.inlay import shape_hints
from fxls.server.language_server import FxlsServer


async def on_inlay_hint(ls: FxlsServer, params: types.InlayHintParams) -> list[types.InlayHint]:
    if not ls.session.config.inlay_hints_shapes:
        return []
    snapshot = await ls.scheduler.answering(params.text_document.uri)
    if snapshot is None:
        return []
    converter = snapshot.converter(position_encoding(ls))
    first, last = params.range.start.line + 1, params.range.end.line + 1
    return [
        types.InlayHint(position=converter.position(line, col), label=label,
                        kind=types.InlayHintKind.Type, padding_left=False)
        for line, col, label in shape_hints(snapshot.report, snapshot.path, snapshot.text)
        if first <= line <= last
    ]
