"""Every LSP method and command fxls answers, routed to its handler module (as ruff's
``api.rs`` routes each method to ``api/requests/*.rs`` and ``api/notifications/*.rs``).

Each method's handler is registered behind one guard (``handler_guard.guarded``): a handler
that raises is logged with the method's name and answers the route's ``empty`` result, so a
failure never ends the session nor leaves a request unanswered. Commands are not guarded:
a command that cannot do what it was asked raises, and the error that says why is its answer
(pygls sends it and reports it through ``FxlsServer.report_server_error``).

``textDocument/diagnostic`` is not here: ``initialize`` registers it (behind the same
guard) for a client that pulls diagnostics only (``handlers/pull_diagnostics.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lsprotocol import types

from fxls.server.cell_requests import CODE_ACTIONS, CODE_LENSES, HOVER, INLAY_HINTS, in_cells
from fxls.server.handler_guard import guarded
from fxls.server.handlers import (
    check_project,
    code_action,
    code_lens,
    did_change,
    did_change_configuration,
    did_change_watched_files,
    did_change_workspace_folders,
    did_close,
    did_open,
    did_save,
    hover,
    initialize,
    initialized,
    inlay_hint,
    notebook_did_change,
    notebook_did_close,
    notebook_did_open,
    notebook_did_save,
    progress_cancel,
    restart_worker,
    show_graph,
    shutdown,
)
from fxls.server.language_server import FxlsServer


@dataclass(frozen=True, slots=True)
class Route:
    #: an LSP method, or a command's name
    method: str
    handler: Callable[..., Any]
    #: the options advertised in the server's capabilities for it
    options: Any = None
    #: the answer when the handler fails: None, or [] for a method that answers a list
    empty: list[Any] | None = None
    #: a failure the user must see (a message shown), not only a log line
    user_facing: bool = False


FEATURES = (
    Route(types.INITIALIZE, initialize.on_initialize, user_facing=True),
    Route(types.INITIALIZED, initialized.on_initialized),
    Route(types.WORKSPACE_DID_CHANGE_WATCHED_FILES, did_change_watched_files.on_watched_files),
    Route(types.WINDOW_WORK_DONE_PROGRESS_CANCEL, progress_cancel.on_progress_cancel),
    Route(types.WORKSPACE_DID_CHANGE_CONFIGURATION, did_change_configuration.on_configuration,
          user_facing=True),
    Route(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS,
          did_change_workspace_folders.on_workspace_folders),
    Route(types.TEXT_DOCUMENT_DID_OPEN, did_open.on_open, user_facing=True),
    Route(types.TEXT_DOCUMENT_DID_CHANGE, did_change.on_change),
    # pygls advertises `save` only with a didSave handler
    Route(types.TEXT_DOCUMENT_DID_SAVE, did_save.on_save, types.SaveOptions(include_text=False),
          user_facing=True),
    Route(types.TEXT_DOCUMENT_DID_CLOSE, did_close.on_close),
    # a notebook is one document, its cells' texts one source (server/notebooks.py)
    Route(types.NOTEBOOK_DOCUMENT_DID_OPEN, notebook_did_open.on_notebook_open,
          user_facing=True),
    Route(types.NOTEBOOK_DOCUMENT_DID_CHANGE, notebook_did_change.on_notebook_change),
    Route(types.NOTEBOOK_DOCUMENT_DID_SAVE, notebook_did_save.on_notebook_save,
          user_facing=True),
    Route(types.NOTEBOOK_DOCUMENT_DID_CLOSE, notebook_did_close.on_notebook_close),
    # requests on a notebook's cell are asked of the notebook (cell_requests.py)
    Route(types.TEXT_DOCUMENT_HOVER, in_cells(hover.on_hover, HOVER)),
    Route(types.TEXT_DOCUMENT_INLAY_HINT, in_cells(inlay_hint.on_inlay_hint, INLAY_HINTS),
          types.InlayHintOptions(), empty=[]),
    Route(types.TEXT_DOCUMENT_CODE_LENS, in_cells(code_lens.on_code_lens, CODE_LENSES),
          types.CodeLensOptions(resolve_provider=False), empty=[]),
    Route(types.TEXT_DOCUMENT_CODE_ACTION, in_cells(code_action.on_code_action, CODE_ACTIONS),
          code_action.OPTIONS, empty=[]),
    Route(types.SHUTDOWN, shutdown.on_shutdown),
)

COMMANDS = (
    Route(show_graph.SHOW_GRAPH, show_graph.show_graph),
    Route(check_project.CHECK_PROJECT, check_project.check_project),
    Route(restart_worker.RESTART_WORKER, restart_worker.restart_worker),
)


def routed(server: FxlsServer) -> FxlsServer:
    """``server`` with every route registered, each method behind the guard."""
    for route in FEATURES:
        handler = guarded(route.method, route.handler, route.empty,
                          user_facing=route.user_facing)
        server.feature(route.method, route.options)(handler)
    for route in COMMANDS:
        server.command(route.method)(route.handler)
    return server
