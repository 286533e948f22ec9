"""The pygls server of fxls: the LSP connection and the roles that serve it. Its behaviour is
in the handlers (``handlers/``, routed in ``routes``), which read the session's data and
call the roles."""

from __future__ import annotations

import logging
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from fxls import __version__
from fxls.server.analysis_service import AnalysisService
from fxls.server.background import BackgroundTasks
from fxls.server.folders import FolderInterpreters
from fxls.server.jsonrpc import FxlsProtocol
from fxls.server.progress import TraceProgress
from fxls.server.project_check import ProjectCheck
from fxls.server.publisher import Publisher
from fxls.server.reporting import tell
from fxls.server.scheduler import AnalysisScheduler
from fxls.server.session import Session

log = logging.getLogger("fxls.server")

#: Jupyter notebooks are synced, each analysed as one document of its Python cells; its
#: markdown and raw cells too, though never analysed: a client syncs only the cells the
#: selector names, and cells are numbered among them all (``cell 3`` as Jupyter counts)
NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithNotebook(
        notebook="jupyter-notebook",
        cells=[types.NotebookCellLanguage(name) for name in ("python", "markdown", "raw")])],
    save=True,
)


class FxlsServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "fxls", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=NOTEBOOK_SYNC, protocol_cls=FxlsProtocol,
        )
        self.session = Session()
        #: the window's worker and those of the workspace folders with an interpreter of
        #: their own
        self.interpreters = FolderInterpreters(AnalysisService(self.session.config.python))
        self.background = BackgroundTasks()
        #: one work-done progress for every trace in flight
        self.progress = TraceProgress(self)
        self.publisher = Publisher(self, self.session)
        self.scheduler = AnalysisScheduler(self, self.session, self.publisher,
                                           self.interpreters, self.progress, self.background)
        self.project_check = ProjectCheck(self, self.session, self.publisher, self.scheduler,
                                          self.interpreters)

    def report_server_error(self, error: Exception, source: Any) -> None:
        """pygls' own errors (a failed send, a command that raised: the handlers of methods
        are guarded, ``handler_guard``): logged, never a pop-up."""
        log.error("%s: %s", getattr(source, "__name__", source), error)
        tell(self, f"fxls: internal error: {error}")
