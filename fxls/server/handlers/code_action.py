"""``textDocument/codeAction``: verified quick fixes and "ignore on this line".

Right after a save the request first waits for the analysis in flight (bounded by the
trace timeout), then for the verification of the fixes it asks for, which are re-traced
next (``code_actions.FixCache``)."""

from __future__ import annotations

import asyncio

from lsprotocol import types

from fxls.server.client_traits import position_encoding, versioned_edits
from fxls.server.code_actions import (
    FIX_ALL_KIND,
    FixCache,
    code_actions,
    ignore_on_line,
    relevant,
    wants_fix_all,
    wants_quickfix,
)
from fxls.server.language_server import FxlsServer
from fxls.server.lsp_convert import RangeConverter
from fxls.server.scheduler import REQUEST_WAIT_SLACK_S
from fxls.server.session import open_text

OPTIONS = types.CodeActionOptions(
    code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND],  # type: ignore[list-item]
    resolve_provider=False,
)


async def on_code_action(
    ls: FxlsServer, params: types.CodeActionParams
) -> list[types.CodeAction]:
    uri = params.text_document.uri
    snapshot = await ls.scheduler.answering(uri)
    if snapshot is None:
        return []
    text = open_text(ls.workspace, uri, snapshot.text)
    converter = snapshot.converter(position_encoding(ls))
    actions: list[types.CodeAction] = []
    if snapshot.fixes.matches(text):
        await _verified(ls, snapshot.fixes, params, converter)
        actions = code_actions(snapshot.fixes, uri, text, params, converter)
    # the document's own diagnostics, when they are those of the text in the editor
    shown = ls.session.diagnostics
    own = (shown.own(uri) if text == snapshot.text and shown.version(uri) == snapshot.version
           else None)
    actions += ignore_on_line(uri, text, params, converter, own)
    document = ls.workspace.text_documents.get(uri)
    if (document is not None and document.version is not None
            and versioned_edits(ls.client_capabilities)):
        for action in actions:
            action.edit = _versioned(action.edit, document.version)
    return actions


async def _verified(
    ls: FxlsServer, cache: FixCache, params: types.CodeActionParams, converter: RangeConverter
) -> None:
    """Wait until the fixes ``params`` asks for are verified (a ``source.fixAll`` request:
    the safe ones and their combination), at most the trace timeout and some slack. A
    verification that starts over (a newer analysis of the same text) is waited for too."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ls.session.config.trace_timeout + REQUEST_WAIT_SLACK_S
    fix_all = wants_fix_all(params) and bool(params.context.only)
    while True:
        current = cache.round
        indices = [i for i, _ in relevant(cache, params, converter)] \
            if wants_quickfix(params) else []
        cache.want(indices)

        def ready(current: int = current, indices: list[int] = indices) -> bool:
            if cache.round != current:
                return True
            return cache.fix_all_decided if fix_all else cache.decided(indices)

        await cache.wait(ready, max(0.0, deadline - loop.time()))
        if cache.round == current or loop.time() >= deadline:
            return


def _versioned(edit: types.WorkspaceEdit | None, version: int) -> types.WorkspaceEdit | None:
    """``edit`` as ``documentChanges`` for ``version``: an editor refuses it for other text."""
    if edit is None or not edit.changes:
        return edit
    return types.WorkspaceEdit(document_changes=[
        types.TextDocumentEdit(types.OptionalVersionedTextDocumentIdentifier(uri, version),
                               list(edits))
        for uri, edits in edit.changes.items()
    ])
