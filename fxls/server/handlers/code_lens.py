"""``textDocument/codeLens``: each module's trace verdict and each pass's changes, opening
the graph (or the pass's before/after view)."""

from __future__ import annotations

import os

from lsprotocol import types

from fxls.graph_view.pass_view import PASS_FORMAT, lens_title
from fxls.server.client_traits import position_encoding
from fxls.server.handlers.show_graph import SHOW_GRAPH
from fxls.server.language_server import FxlsServer


async def on_code_lens(ls: FxlsServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    uri = params.text_document.uri
    snapshot = await ls.scheduler.answering(uri)
    if snapshot is None:
        return []
    converter = snapshot.converter(position_encoding(ls))
    lenses = []
    for module in snapshot.report.modules:
        if module.span is None:
            continue
        title = f"fxls: {module.verdict()}"
        if module.node_count:
            title += f" · {module.node_count} nodes"
        command = types.Command(title=title, command=SHOW_GRAPH,
                                arguments=[uri, module.name, "code"])
        lenses.append(types.CodeLens(range=converter.range(module.span), command=command))
    for found in snapshot.report.passes:
        if found.span is None or os.path.realpath(found.span.file) != converter.path:
            continue
        command = types.Command(title=lens_title(found), command=SHOW_GRAPH,
                                arguments=[uri, found.name, PASS_FORMAT])
        lenses.append(types.CodeLens(range=converter.range(found.span), command=command))
    return lenses
