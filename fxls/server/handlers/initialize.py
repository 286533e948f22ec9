"""``initialize``: the window's settings, and pull diagnostics for a client that pulls."""

from __future__ import annotations

from lsprotocol import types

from fxls.server.client_traits import pulls_diagnostics
from fxls.server.editor_settings import apply_settings
from fxls.server.handler_guard import guarded
from fxls.server.handlers.pull_diagnostics import on_pull_diagnostics
from fxls.server.language_server import FxlsServer


def on_initialize(ls: FxlsServer, params: types.InitializeParams) -> None:
    apply_settings(ls, params.initialization_options)
    window = ls.interpreters.default
    window.python = ls.session.config.python
    window.learn_libraries = ls.session.config.learn_libraries
    ls.session.pull_diagnostics = pulls_diagnostics(params.capabilities)
    if (ls.session.pull_diagnostics
            and types.TEXT_DOCUMENT_DIAGNOSTIC not in ls.protocol.fm.features):
        # advertised to this client only: one that pulls and is told when to pull again
        # gets its open documents' diagnostics by pull and no push for them (both at once
        # would show each diagnostic twice in VS Code); any other client gets pushes
        ls.feature(types.TEXT_DOCUMENT_DIAGNOSTIC, types.DiagnosticOptions(
            identifier="fxls", inter_file_dependencies=True, workspace_diagnostics=False,
        ))(guarded(types.TEXT_DOCUMENT_DIAGNOSTIC, on_pull_diagnostics))
