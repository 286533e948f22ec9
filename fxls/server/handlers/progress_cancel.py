"""``window/workDoneProgress/cancel``: stop the traces in flight, or a project check."""

from __future__ import annotations

from lsprotocol import types

from fxls.server.language_server import FxlsServer


def on_progress_cancel(ls: FxlsServer, params: types.WorkDoneProgressCancelParams) -> None:
    if not ls.progress.cancelled(params.token):
        ls.project_check.cancel(params.token)
