"""What the server knows, as data: the editor's settings, the open documents, what each URI
shows. The roles that act on it (``scheduler``, ``publisher``, ``project_check``) and the
handlers (``handlers/``) hold the behaviour, as ruff's server keeps its ``Session`` apart
from the handlers that read it.

A document's analysed state is one frozen :class:`DocumentSnapshot`, swapped in one
assignment when an analysis completes (ruff's ``DocumentSnapshot``); its
:class:`DocumentController` keeps the bookkeeping of the analyses in flight. Handlers answer
from a snapshot: its report, text and version belong together while they await.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from pygls.uris import to_fs_path
from pygls.workspace import Workspace

from fxls.report import FileReport
from fxls.server.code_actions import FixCache
from fxls.server.config import ServerConfig
from fxls.server.diagnostics_by_uri import DiagnosticsByUri
from fxls.server.lsp_convert import RangeConverter
from fxls.server.notebooks import Notebooks, current_text


@dataclass(frozen=True, slots=True)
class DocumentSnapshot:
    """A document's analysed state: the report of one text of it."""

    uri: str
    path: str
    report: FileReport
    #: the text the report was computed from (the report's positions refer to it)
    text: str
    version: int | None
    #: the document's quick fixes, verified in the background for its newest report
    fixes: FixCache

    def converter(self, encoding: str) -> RangeConverter:
        """Converts the report's spans in ``text`` to the client's positions."""
        return RangeConverter(self.path, self.text, encoding)


def _settled() -> asyncio.Event:
    event = asyncio.Event()
    event.set()
    return event


@dataclass(slots=True, eq=False)
class DocumentController:
    """One open document: its latest snapshot and the analyses started for it."""

    uri: str
    path: str
    snapshot: DocumentSnapshot | None = None
    #: bumps for every analysis started; only the newest may publish
    generation: int = 0
    #: set while no analysis of the document is scheduled or running
    settled: asyncio.Event = field(default_factory=_settled)
    #: one cache for every report: a request waiting on it sees a newer analysis' round
    fixes: FixCache = field(default_factory=FixCache)
    #: the verification of the latest snapshot's fixes
    verification: asyncio.Task[None] | None = None

    @classmethod
    def opened(cls, uri: str) -> DocumentController:
        return cls(uri, to_fs_path(uri) or uri)

    @property
    def analysed_text(self) -> str:
        return self.snapshot.text if self.snapshot is not None else ""

    def begin_analysis(self) -> int:
        """A new analysis starts: its generation. The fixes of the text before stop being
        verified: their jobs would take cores from this analysis, and their verdicts are
        replaced when it ends."""
        self.generation += 1
        if self.verification is not None:
            self.verification.cancel()
        return self.generation

    def close(self) -> None:
        self.generation += 1  # an analysis still running may no longer publish
        if self.verification is not None:
            self.verification.cancel()
        self.settled.set()


@dataclass(slots=True, eq=False)
class Session:
    config: ServerConfig = field(default_factory=ServerConfig)
    #: the open documents by URI
    documents: dict[str, DocumentController] = field(default_factory=dict)
    #: what each URI shows: its own diagnostics and those other documents found in it
    diagnostics: DiagnosticsByUri = field(default_factory=DiagnosticsByUri)
    #: the client pulls diagnostics (textDocument/diagnostic) for its open documents
    pull_diagnostics: bool = False
    #: the open notebooks' cell layouts (a notebook is one document; its cells show it)
    notebooks: Notebooks = field(default_factory=Notebooks)


def open_text(workspace: Workspace, uri: str, analysed_text: str) -> str:
    """The document's text in the editor (``analysed_text`` if the editor's is gone); a
    notebook's is the Python source of its cells."""
    document = workspace.text_documents.get(uri)
    if document is not None:
        return document.source
    notebook = current_text(workspace, uri)
    return notebook.source if notebook is not None else analysed_text


def editor_text(session: Session, workspace: Workspace, uri: str) -> tuple[str, int | None]:
    """The text of the open document ``uri`` to analyse, and its version; a notebook's
    layout is remembered with its version (its diagnostics are published per cell)."""
    notebook = session.notebooks.read(workspace, uri)
    if notebook is not None:
        return notebook.source, notebook.version
    document = workspace.get_text_document(uri)
    return document.source, document.version


def workspace_roots(workspace: Workspace) -> list[str]:
    """The workspace folders' paths and the root path (empty strings for those missing)."""
    folders = [to_fs_path(folder.uri) or "" for folder in workspace.folders.values()]
    return [*folders, workspace.root_path or ""]
