"""What the client is shown: each URI's diagnostics, pushed or (to a client that pulls) asked
to be pulled again, bad settings on pyproject.toml, messages said once, and the views that
follow a new report (inlay hints, code lenses)."""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from fxls.project.python_source import read_python_source_or_replace
from fxls.project.settings import Settings
from fxls.report import FileReport
from fxls.server.client_traits import (
    position_encoding,
    refreshes_code_lenses,
    refreshes_inlay_hints,
)
from fxls.server.dependencies import is_project_file
from fxls.server.lsp_convert import RangeConverter, place_diagnostics
from fxls.server.reporting import tell
from fxls.server.session import Session, open_text, workspace_roots
from fxls.server.settings_diagnostics import (
    SOURCE_PREFIX,
    pyproject_uri,
    settings_diagnostics,
)

log = logging.getLogger("fxls.server")


def text_digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class Publisher:
    """Everything the server shows the client, from the session's data."""

    def __init__(self, server: LanguageServer, session: Session) -> None:
        self._server = server
        self._session = session
        #: uri -> revision of what it shows (the result id of a pull)
        self._revisions: dict[str, int] = {}
        #: uris whose last push was not empty
        self._pushed: set[str] = set()
        #: messages already shown (a bad setting or a broken interpreter is said once)
        self._said: set[str] = set()
        #: pyproject.toml uri -> the settings diagnostics it shows
        self._settings_shown: dict[str, list[types.Diagnostic]] = {}

    def publish_report(
        self,
        uri: str,
        path: str,
        report: FileReport,
        text: str,
        version: int | None,
        project_root: str,
        reshape: Callable[[list[types.Diagnostic]], list[types.Diagnostic]] | None = None,
    ) -> None:
        """Publish ``report`` of ``text`` (the document ``uri`` at ``path``): to the document
        (its diagnostics passed through ``reshape`` first when given), and each problem
        located in another project file to that file (replacing what this document put there
        before)."""
        workspace = self._server.workspace
        other_texts = {
            os.path.realpath(other.path): (
                other.snapshot.text if other.snapshot is not None
                else open_text(workspace, key, other.analysed_text)
            )
            for key, other in self._session.documents.items()
            if key != uri
        }
        converter = RangeConverter(path, text, position_encoding(self._server), other_texts)
        roots = [*workspace_roots(workspace), project_root]
        placed = place_diagnostics(report, converter, lambda file: is_project_file(file, roots))
        own = placed.pop(converter.path, [])
        if reshape is not None:
            own = reshape(own)
        by_target: dict[str, list[types.Diagnostic]] = {}
        seen: dict[str, str] = {}
        for file, diagnostics in placed.items():
            target = self.uri_of(file)
            # the analysis read the file from disk: its positions are those of that text,
            # wrong in an editor that holds other (unsaved) text of it
            on_disk = text_digest(read_python_source_or_replace(file))
            in_editor = self.editor_digest(target)
            if in_editor is not None and in_editor != on_disk:
                continue
            by_target[target], seen[target] = diagnostics, on_disk
        shown = self._session.diagnostics
        affected = shown.set_own(uri, own, version)
        affected |= shown.set_contributions(uri, by_target, seen)
        self.republish(affected)

    def uri_of(self, path: str) -> str:
        """The URI the client knows an open document by, else the file's own URI."""
        for uri, document in self._session.documents.items():
            if os.path.realpath(document.path) == path:
                return uri
        return Path(path).as_uri()

    def editor_digest(self, uri: str) -> str | None:
        """A digest of the text the editor holds for ``uri``; None when it is not open."""
        document = self._server.workspace.text_documents.get(uri)
        return text_digest(document.source) if document is not None else None

    def withdraw_stale(self, uri: str) -> list[str]:
        """What other documents found in ``uri`` for another text of it than the editor's
        is withdrawn; those documents are returned."""
        shown = self._session.diagnostics
        if not shown.contributors(uri):
            return []
        digest = self.editor_digest(uri)
        if digest is None:
            return []
        stale = shown.stale_sources(uri, digest)
        affected: set[str] = set()
        for source in stale:
            affected |= shown.drop(source, uri)
        self.republish(affected)
        return stale

    def editor_text_on_disk(self, uri: str) -> bool:
        """Whether the editor holds the text of ``uri`` that is on disk (what the analyses
        of other documents read)."""
        digest = self.editor_digest(uri)
        path = to_fs_path(uri) or uri
        return digest is not None and digest == text_digest(read_python_source_or_replace(path))

    def republish(self, uris: set[str]) -> None:
        """Publish what each of ``uris`` shows now (an empty list clears it). A client that
        pulls diagnostics is asked to pull again for its open documents instead."""
        refresh = False
        shown = self._session.diagnostics
        for uri in sorted(uris):
            self._revisions[uri] = self._revisions.get(uri, 0) + 1
            if self._session.notebooks.is_notebook(uri):
                self._push_cells(uri)
                continue
            if self._session.pull_diagnostics and uri in self._server.workspace.text_documents:
                refresh = True
                continue
            self._push(uri, shown.shown(uri), shown.version(uri))
        if refresh:
            try:
                self._server.workspace_diagnostic_refresh(None)
            except Exception:
                log.warning("could not ask the client to pull diagnostics", exc_info=True)

    def _push_cells(self, notebook_uri: str) -> None:
        """A notebook's diagnostics, pushed to each of its cells (also to a client that
        pulls: editors pull a document's, never a cell's), none to the notebook itself (what
        the project check put on it while it was closed is cleared)."""
        if notebook_uri in self._pushed:
            self._push(notebook_uri, [], None)
        shown = self._session.diagnostics
        cells = self._session.notebooks.per_cell(
            notebook_uri, shown.shown(notebook_uri), shown.version(notebook_uri))
        for cell_uri, (diagnostics, version) in cells.items():
            self._push(cell_uri, diagnostics, version)

    def clear_cells(self, cell_uris: set[str]) -> None:
        """Cells of a closed notebook, or removed from one, show nothing any more."""
        for cell_uri in sorted(cell_uris):
            self._push(cell_uri, [], None)

    def stop_pushing(self, uri: str) -> None:
        """``uri`` was opened in a client that pulls: what was pushed to it while it was
        closed is cleared, the client pulls it from now on."""
        if self._session.pull_diagnostics and uri in self._pushed:
            self._push(uri, [], None)

    def _push(self, uri: str, diagnostics: list[types.Diagnostic], version: int | None) -> None:
        if diagnostics:
            self._pushed.add(uri)
        else:
            self._pushed.discard(uri)
        self._server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=diagnostics, version=version))

    def pulled(self, uri: str, previous: str | None) -> types.DocumentDiagnosticReport:
        """What ``uri`` shows, as the answer to a pull (unchanged since ``previous``?)."""
        result_id = str(self._revisions.get(uri, 0))
        if previous == result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
        return types.RelatedFullDocumentDiagnosticReport(
            items=self._session.diagnostics.shown(uri), result_id=result_id)

    def publish_settings(self, settings: Settings) -> None:
        """Each bad or refused setting is said once, and shown on the project's
        pyproject.toml at its line (replaced on every load: gone once fixed)."""
        for problem in settings.problems:
            self.say_once(f"fxls: [tool.fxls] in {settings.project.root}: {problem}")
        uri = pyproject_uri(settings.project.root)
        diagnostics = settings_diagnostics(settings.problems, settings.project.root)
        if diagnostics == self._settings_shown.get(uri, []):
            return
        self._settings_shown[uri] = diagnostics
        self.republish(self._session.diagnostics.set_contributions(
            SOURCE_PREFIX + uri, {uri: diagnostics}))

    def say_once(self, message: str, kind: types.MessageType = types.MessageType.Warning
                 ) -> None:
        """Show ``message`` to the user, unless it was shown before."""
        if message not in self._said:
            self._said.add(message)
            tell(self._server, message, show=True, kind=kind)

    def refresh_views(self) -> None:
        """Ask the client to ask again for inlay hints and code lenses (a new report)."""
        capabilities = self._server.client_capabilities
        if refreshes_inlay_hints(capabilities):
            self._server.workspace_inlay_hint_refresh(None)
        if refreshes_code_lenses(capabilities):
            self._server.workspace_code_lens_refresh(None)
