"""The fxls language server: wiring of LSP features to the analysis service and the report.

Handlers are thin: they convert positions once (``lsp_convert.RangeConverter``), look
things up in the cached report (``documents``), and render (``hover``, ``inlay``). Tracing
happens only on open/save (and, opt-in, after a pause in typing), never on hover.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from fxls import __version__
from fxls.codes import CODES
from fxls.files import Skipped, SkippedFile, walk_python_files
from fxls.graph_render import RENDERERS, render_module
from fxls.output.pass_graph import graphs_of
from fxls.output.pass_page import pass_document, render_pass_page
from fxls.pass_view import PASS_FORMAT, find_pass, lens_title, pass_view
from fxls.python_source import (
    UndecodableSource,
    read_python_source,
    read_python_source_or_replace,
)
from fxls.report import Diagnostic, FileReport, Span
from fxls.runner import AnalysisRequest, failure_report
from fxls.server import one_line_logs
from fxls.server.analysis_service import AnalysisService, WorkerStartError
from fxls.server.code_actions import (
    FIX_ALL_KIND,
    FixCache,
    code_actions,
    ignore_on_line,
    relevant,
    wants_fix_all,
    wants_quickfix,
)
from fxls.server.config import ServerConfig
from fxls.server.dependencies import depends_on, is_project_file
from fxls.server.diagnostics_by_uri import DiagnosticsByUri
from fxls.server.documents import (
    DocumentState,
    innermost_at,
    module_at,
    pass_at,
    pass_nodes_at,
)
from fxls.server.folders import FolderInterpreters, folder_python
from fxls.server.hover import (
    calls_markdown,
    module_markdown,
    nodes_markdown,
    pass_markdown,
    pass_nodes_markdown,
)
from fxls.server.inlay import shape_hints
from fxls.server.jsonrpc import FxlsProtocol, serve_stdio
from fxls.server.lsp_convert import RangeConverter, place_diagnostics
from fxls.server.progress import TaskProgress, TraceProgress
from fxls.server.reporting import reported, tell
from fxls.server.settings_diagnostics import (
    SOURCE_PREFIX,
    pyproject_uri,
    settings_diagnostics,
)
from fxls.settings import Settings, load_settings

log = logging.getLogger("fxls.server")

SHOW_GRAPH = "fxls.showGraph"
RESTART_WORKER = "fxls.restartWorker"
#: analyse every Python file of the workspace (cancellable progress with percentages)
CHECK_PROJECT = "fxls.checkProject"
#: sent after the complete report of a version is in place (hover, inlay hints, code lens
#: and code actions answer from it); diagnostics may have been published before it
ANALYSIS_DONE = "fxls/analysisDone"
#: quick fixes are verified once a document's analyses have paused this long (or at once
#: when a request asks for them): saves in a row never share the cores with verifications
VERIFY_QUIET_S = 1.0
#: debounce before re-analysing the open documents that depend on a saved file
DEPENDENTS_DELAY_S = 0.3
#: how much longer than the trace timeout a request waits for an analysis in flight
REQUEST_WAIT_SLACK_S = 5.0
#: files a project check analyses at most
MAX_PROJECT_FILES = 500
#: folders a project check never enters (besides hidden ones and virtual environments)
SKIPPED_FOLDERS = frozenset({"__pycache__", "node_modules", "site-packages", "dist-packages",
                             "build", "dist"})
WATCH_REGISTRATION_ID = "fxls-watch-python"


class FxlsServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "fxls", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=FxlsProtocol,
        )
        self.config = ServerConfig()
        self.analysis = AnalysisService(self.config.python)
        #: the workers of the workspace folders with an interpreter of their own
        self.interpreters = FolderInterpreters(self.analysis)
        self.states: dict[str, DocumentState] = {}
        #: what each URI shows: its own diagnostics and those other documents found in it
        self.board = DiagnosticsByUri()
        self._debounce: dict[str, asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        #: one work-done progress for every trace in flight
        self.progress = TraceProgress(self)
        #: progress token -> the project check it reports on (cancellable)
        self.task_progress: dict[str, tuple[TaskProgress, asyncio.Task[Any]]] = {}
        #: the client pulls diagnostics (textDocument/diagnostic) for its open documents
        self.pull_diagnostics = False
        #: uri -> revision of what it shows (the result id of a pull)
        self._revisions: dict[str, int] = {}
        #: uris whose last push was not empty
        self._pushed: set[str] = set()
        #: messages already shown (a bad setting or a broken interpreter is said once)
        self._said: set[str] = set()
        #: pyproject.toml uri -> the settings diagnostics it shows
        self._settings_shown: dict[str, list[types.Diagnostic]] = {}

    def supports_configuration(self) -> bool:
        workspace = self.client_capabilities.workspace
        return bool(workspace is not None and workspace.configuration)

    async def load_folder_interpreters(self) -> None:
        """Ask the client for each workspace folder's ``fxls`` settings: a folder's
        ``python`` runs the code of its files (multi-root windows)."""
        folders = {to_fs_path(f.uri) or "": f.uri for f in self.workspace.folders.values()}
        folders.pop("", None)
        if not folders or not self.supports_configuration():
            await self.interpreters.update({})
            return
        self.interpreters.loading()
        try:
            answers = await self.workspace_configuration_async(types.ConfigurationParams(
                items=[types.ConfigurationItem(scope_uri=uri, section="fxls")
                       for uri in folders.values()]))
        except Exception as error:  # a client that cannot answer: the window's interpreter
            log.warning("workspace/configuration failed: %s", error)
            self.interpreters.failed()
            return
        pythons = {path: python for path, answer in zip(folders, answers or [], strict=False)
                   if (python := folder_python(answer)) is not None}
        await self.interpreters.update(pythons)

    def report_server_error(self, error: Exception, source: Any) -> None:
        """pygls' own errors (a failed send, a handler outside :func:`reported`): logged,
        never a pop-up."""
        log.error("%s: %s", getattr(source, "__name__", source), error)
        tell(self, f"fxls: internal error: {error}")

    # -- helpers -------------------------------------------------------------------------

    @property
    def encoding(self) -> str:
        encoding = self.server_capabilities.position_encoding
        return str(encoding.value if hasattr(encoding, "value") else encoding or "utf-16")

    def state_for(self, uri: str) -> DocumentState:
        state = self.states.get(uri)
        if state is None:
            state = self.states[uri] = DocumentState(uri, to_fs_path(uri) or uri)
            state.settled = asyncio.Event()
            state.settled.set()
        return state

    async def answering_state(self, uri: str) -> DocumentState | None:
        """The document's state to answer a request from, once it has a report.

        While an analysis of the document is scheduled or running, and there is no report
        yet or the editor's text is not the analysed one, wait for it (bounded by the trace
        timeout): a client that asks right after a save gets the new report, not nothing.
        """
        state = self.states.get(uri)
        if state is None:
            return None
        if not state.settled.is_set() and (
            state.report is None or self.open_text(uri, state) != state.analysed_text
        ):
            try:
                await asyncio.wait_for(state.settled.wait(),
                                       self.config.trace_timeout + REQUEST_WAIT_SLACK_S)
            except TimeoutError:
                log.warning("answering %s from its last report: the analysis is late", uri)
        if self.states.get(uri) is not state or state.report is None:
            return None
        return state

    def say_once(self, message: str, kind: types.MessageType = types.MessageType.Warning
                 ) -> None:
        """Show ``message`` to the user, unless it was shown before."""
        if message not in self._said:
            self._said.add(message)
            tell(self, message, show=True, kind=kind)

    def publish_settings(self, settings: Settings) -> None:
        """Each bad or refused setting is said once, and shown on the project's
        pyproject.toml at its line (replaced on every load: gone once fixed)."""
        for problem in settings.problems:
            self.say_once(f"fxls: [tool.fxls] in {settings.root}: {problem}")
        uri = pyproject_uri(settings.root)
        diagnostics = settings_diagnostics(settings.problems, settings.root)
        if diagnostics == self._settings_shown.get(uri, []):
            return
        self._settings_shown[uri] = diagnostics
        self.republish(self.board.set_contributions(SOURCE_PREFIX + uri, {uri: diagnostics}))

    def converter(self, state: DocumentState) -> RangeConverter:
        return RangeConverter(state.path, state.analysed_text, self.encoding)

    def open_text(self, uri: str, state: DocumentState) -> str:
        """The document's text in the editor (its analysed text if the editor's is gone)."""
        document = self.workspace.text_documents.get(uri)
        return document.source if document is not None else state.analysed_text

    def spawn(self, coroutine: Any) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- analysis ------------------------------------------------------------------------

    def schedule(self, uri: str, delay_s: float = 0.0) -> None:
        pending = self._debounce.pop(uri, None)
        if pending is not None:
            pending.cancel()
        state = self.states.get(uri)
        if state is not None:
            state.settled.clear()
        if delay_s <= 0:
            self._start(uri)
            return
        loop = asyncio.get_running_loop()
        self._debounce[uri] = loop.call_later(
            delay_s, lambda: (self._debounce.pop(uri, None), self._start(uri))
        )

    def _start(self, uri: str) -> None:
        task = self.spawn(self.analyze(uri))
        state = self.states.get(uri)
        if state is not None:
            state.task = task

    async def analyze(self, uri: str, *, track: bool = True) -> None:
        """Analyse the open document ``uri`` and publish; ``track``: in the trace progress."""
        state = self.states.get(uri)
        if state is None:
            return  # closed (or never opened) since it was scheduled
        state.generation += 1
        generation = state.generation
        if state.verify_task is not None:
            # the fixes of the text analysed before: their jobs would take cores from this
            # analysis, and their verdicts are replaced when it ends
            state.verify_task.cancel()
        try:
            await self._analyze(uri, state, generation, track)
        except Exception as error:
            log.exception("analysis of %s failed", uri)
            tell(self, f"fxls: the analysis of {uri} failed: {error}")
        finally:
            if generation == state.generation and uri not in self._debounce:
                state.settled.set()

    async def _analyze(
        self, uri: str, state: DocumentState, generation: int, track: bool = True
    ) -> None:
        document = self.workspace.get_text_document(uri)
        text, version = document.source, document.version
        settings = load_settings(state.path, self.config.overrides())
        self.publish_settings(settings)
        request = AnalysisRequest(state.path, text, settings)

        def current() -> bool:
            return generation == state.generation and self.states.get(uri) is state

        key = f"{uri}#{generation}"

        def publish_early(report: FileReport) -> None:
            # tracing's diagnostics now; the complete report (FX014, shapes for hover)
            # publishes again when the job ends, and is what code actions use
            self.progress.advance(key, 0.5)
            if current():
                self.publish_report(uri, state, report, text, version, settings.root)

        worker_started = True
        if track:
            task = asyncio.current_task()
            self.progress.start(key, Path(state.path).name,
                                cancel=task.cancel if task is not None else lambda: None)
        try:
            service = await self.interpreters.for_path(state.path)
            if not current():
                # a newer analysis started while this one waited for the folders' settings:
                # it must be the newest request the worker sees (the worker keeps the last)
                return
            report = await service.analyze(uri, request, publish_early)
        except WorkerStartError as error:
            worker_started = False
            self.say_once(str(error), types.MessageType.Error)
            report = failure_report(request, "worker-start", str(error))
        finally:
            self.progress.finish(key)
        if report is None or not current():
            return  # superseded by a newer save (its result will publish) or closed
        state.report, state.analysed_text, state.analysed_version = report, text, version
        self.publish_report(uri, state, report, text, version, settings.root)
        self.protocol.notify(ANALYSIS_DONE, {"uri": uri, "version": version})
        self._refresh_views()
        if worker_started:
            self._start_fix_verification(state, request)

    def publish_report(
        self,
        uri: str,
        state: DocumentState,
        report: FileReport,
        text: str,
        version: int | None,
        project_root: str,
    ) -> None:
        """Publish ``report`` of ``text``: to the document, and each problem located in
        another project file to that file (replacing what this document put there before)."""
        other_texts = {
            os.path.realpath(other.path): (
                other.analysed_text if other.report is not None else self.open_text(key, other)
            )
            for key, other in self.states.items()
            if key != uri
        }
        converter = RangeConverter(state.path, text, self.encoding, other_texts)
        roots = [*self._workspace_roots(), project_root]
        placed = place_diagnostics(report, converter, lambda file: is_project_file(file, roots))
        own = placed.pop(converter.path, [])
        by_target: dict[str, list[types.Diagnostic]] = {}
        seen: dict[str, str] = {}
        for path, diagnostics in placed.items():
            target = self._uri_of(path)
            # the analysis read the file from disk: its positions are those of that text,
            # wrong in an editor that holds other (unsaved) text of it
            on_disk = _digest(read_python_source_or_replace(path))
            in_editor = self.editor_digest(target)
            if in_editor is not None and in_editor != on_disk:
                continue
            by_target[target], seen[target] = diagnostics, on_disk
        affected = self.board.set_own(uri, own, version)
        affected |= self.board.set_contributions(uri, by_target, seen)
        self.republish(affected)

    def editor_digest(self, uri: str) -> str | None:
        """A digest of the text the editor holds for ``uri``; None when it is not open."""
        document = self.workspace.text_documents.get(uri)
        return _digest(document.source) if document is not None else None

    def withdraw_stale(self, uri: str, *, reanalyse: bool) -> None:
        """What other documents found in ``uri`` for another text of it than the editor's
        is withdrawn; with ``reanalyse``, those documents are analysed again (when the
        editor's text is the file's on disk, which is what they read)."""
        if not self.board.contributors(uri):
            return
        digest = self.editor_digest(uri)
        if digest is None:
            return
        stale = self.board.stale_sources(uri, digest)
        affected: set[str] = set()
        for source in stale:
            affected |= self.board.drop(source, uri)
        self.republish(affected)
        path = to_fs_path(uri) or uri
        if reanalyse and stale and digest == _digest(read_python_source_or_replace(path)):
            for source in stale:
                if source in self.states and source != uri:
                    self.schedule(source, DEPENDENTS_DELAY_S)

    def republish(self, uris: set[str]) -> None:
        """Publish what each of ``uris`` shows now (an empty list clears it). A client that
        pulls diagnostics is asked to pull again for its open documents instead."""
        refresh = False
        for uri in sorted(uris):
            self._revisions[uri] = self._revisions.get(uri, 0) + 1
            if self.pull_diagnostics and uri in self.workspace.text_documents:
                refresh = True
                continue
            self.push(uri, self.board.shown(uri), self.board.version(uri))
        if refresh:
            try:
                self.workspace_diagnostic_refresh(None)
            except Exception:
                log.warning("could not ask the client to pull diagnostics", exc_info=True)

    def push(self, uri: str, diagnostics: list[types.Diagnostic], version: int | None) -> None:
        if diagnostics:
            self._pushed.add(uri)
        else:
            self._pushed.discard(uri)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=diagnostics, version=version))

    def pulled(self, uri: str, previous: str | None) -> types.DocumentDiagnosticReport:
        """What ``uri`` shows, as the answer to a pull (unchanged since ``previous``?)."""
        result_id = str(self._revisions.get(uri, 0))
        if previous == result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
        return types.RelatedFullDocumentDiagnosticReport(
            items=self.board.shown(uri), result_id=result_id)

    def dependents_of(self, uri: str) -> list[str]:
        """The other open documents whose analysis depends on the file ``uri``."""
        path = to_fs_path(uri) or uri
        return [
            other for other, state in self.states.items()
            if other != uri and depends_on(state.report, self.open_text(other, state), path)
        ]

    def _uri_of(self, path: str) -> str:
        """The URI the client knows an open document by, else the file's own URI."""
        for uri, state in self.states.items():
            if os.path.realpath(state.path) == path:
                return uri
        return Path(path).as_uri()

    def _workspace_roots(self) -> list[str]:
        folders = [to_fs_path(folder.uri) or "" for folder in self.workspace.folders.values()]
        return [*folders, self.workspace.root_path or ""]

    def _start_fix_verification(self, state: DocumentState, request: AnalysisRequest) -> None:
        # the verification of the text before was cancelled when this analysis started
        if state.fixes is None:
            state.fixes = FixCache()
        report, text = state.report, state.analysed_text
        assert report is not None
        # proposed now, so that a request from this moment on waits for their verification
        state.fixes.reset(text, report)

        async def analyze_variant(variant: str, lane: int) -> Any:
            variant_request = AnalysisRequest(request.path, variant, request.settings)
            service = await self.interpreters.for_path(request.path)
            return await service.analyze(f"verify:{state.uri}:{lane}", variant_request)

        state.verify_task = asyncio.ensure_future(
            state.fixes.verify_all(text, report, analyze_variant, VERIFY_QUIET_S)
        )

    def _refresh_views(self) -> None:
        workspace = self.client_capabilities.workspace
        if workspace is None:
            return
        if workspace.inlay_hint and workspace.inlay_hint.refresh_support:
            self.workspace_inlay_hint_refresh(None)
        if workspace.code_lens and workspace.code_lens.refresh_support:
            self.workspace_code_lens_refresh(None)

    # -- watched files and the project check ---------------------------------------------

    async def watch_files(self) -> None:
        """Ask the client to tell us about changes to the project's Python files."""
        watchers = [types.FileSystemWatcher(glob_pattern="**/*.py"),
                    types.FileSystemWatcher(glob_pattern="**/pyproject.toml")]
        registration = types.Registration(
            id=WATCH_REGISTRATION_ID, method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers))
        try:
            await self.client_register_capability_async(types.RegistrationParams([registration]))
        except Exception as error:
            log.warning("the client refused to watch files: %s", error)

    def files_changed(self, changes: list[types.FileEvent]) -> None:
        """Files changed on disk (not through this editor's buffers): re-analyse the open
        documents that depend on them; a changed pyproject.toml re-analyses them all."""
        open_paths = {os.path.realpath(state.path) for state in self.states.values()}
        dependents: set[str] = set()
        for change in changes:
            path = to_fs_path(change.uri) or change.uri
            if Path(path).name == "pyproject.toml":
                dependents.update(self.states)
                continue
            if os.path.realpath(path) in open_paths:
                continue  # the editor's text is what counts; its save re-analyses
            dependents.update(self.dependents_of(change.uri))
        for uri in sorted(dependents):
            self.schedule(uri, DEPENDENTS_DELAY_S)

    async def check_project(self) -> dict[str, Any]:
        """Analyse every Python file of the workspace and publish what each shows; names
        that are not regular files (a FIFO, a link to a device, a link loop) are skipped and
        listed in the answer's ``skipped``."""
        skipped: list[Skipped] = []
        roots = [root for root in self._workspace_roots() if root]
        files = await asyncio.to_thread(project_files, roots, skipped)
        for item in skipped:
            tell(self, f"fxls: {item.path}: skipped: {item.reason}",
                 kind=types.MessageType.Info)
        truncated = len(files) > MAX_PROJECT_FILES
        files = files[:MAX_PROJECT_FILES]
        checked = problems = 0
        async with TaskProgress(self, "fxls: checking the project") as progress:
            try:
                for index, path in enumerate(files):
                    if progress.cancelled.is_set():
                        break
                    progress.report(f"{path.name} ({index + 1}/{len(files)})", index, len(files))
                    uri = self._uri_of(str(path))
                    one = asyncio.ensure_future(self._check_file(uri, path, skipped))
                    self.task_progress[progress.token] = (progress, one)
                    try:
                        await one
                    except asyncio.CancelledError:
                        if not progress.cancelled.is_set():
                            raise
                        break
                    checked += 1
                    problems += len(self.board.shown(uri))
            finally:
                self.task_progress.pop(progress.token, None)
        return {"files": len(files), "checked": checked, "diagnostics": problems,
                "cancelled": progress.cancelled.is_set(), "truncated": truncated,
                "skipped": [{"path": item.path, "reason": item.reason} for item in skipped]}

    async def _check_file(self, uri: str, path: Path, skipped: list[Skipped]) -> None:
        if uri in self.states:
            await self.analyze(uri, track=False)
            return
        unread = None
        try:
            # off the event loop: bounded and non-blocking, but up to 8 MB to decode
            text = await asyncio.to_thread(read_python_source, path)
        except UndecodableSource as error:
            text = error.text  # the analysis reports it
        except SkippedFile as error:  # it became one since the walk
            skipped.append(Skipped(str(path), error.reason))
            return
        except OSError as error:
            text = ""
            unread = getattr(error, "reason", None) or f"cannot read the file: {error.strerror}"
        settings = load_settings(str(path), self.config.overrides())
        self.publish_settings(settings)
        request = AnalysisRequest(str(path), text, settings)
        if unread is not None:
            span = Span(str(path), 1, 1, 0, 0)
            report = FileReport(str(path), [], [
                Diagnostic("FX100", CODES["FX100"].severity, unread, span)])
            self.publish_report(uri, DocumentState(uri, str(path)), report, text, None,
                                settings.root)
            return
        try:
            service = await self.interpreters.for_path(str(path))
            report = await service.analyze(f"check:{path}", request)
        except WorkerStartError as error:
            self.say_once(str(error), types.MessageType.Error)
            raise asyncio.CancelledError from error
        if report is None or uri in self.states:
            return  # opened meanwhile: its own analysis publishes
        self.publish_report(uri, DocumentState(uri, str(path)), report, text, None, settings.root)

    def cancel_progress(self, token: object) -> None:
        if self.progress.cancelled(token):
            return
        entry = self.task_progress.get(str(token))
        if entry is not None:
            progress, task = entry
            progress.cancelled.set()
            task.cancel()


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def project_files(roots: list[str], skipped: list[Skipped] | None = None) -> list[Path]:
    """The regular Python files under ``roots``, resolved and sorted, outside hidden
    folders, virtual environments and installed libraries; names that are not regular files
    are appended to ``skipped``."""
    found: dict[str, Path] = {}
    for root in roots:
        for name in walk_python_files(root, SKIPPED_FOLDERS, skipped):
            path = os.path.realpath(name)
            found.setdefault(path, Path(path))
    return sorted(found.values())


server = FxlsServer()


def _apply_settings(ls: FxlsServer, raw: Any) -> None:
    ls.config = ls.config.updated(raw or {})
    for problem in ls.config.problems:
        tell(ls, problem, show=True, kind=types.MessageType.Warning)


@server.feature(types.INITIALIZE)
@reported(user_facing=True)
def on_initialize(ls: FxlsServer, params: types.InitializeParams) -> None:
    _apply_settings(ls, params.initialization_options)
    ls.analysis.python = ls.config.python
    ls.analysis.learn_libraries = ls.config.learn_libraries
    ls.pull_diagnostics = pulls_diagnostics(params.capabilities)
    if ls.pull_diagnostics and types.TEXT_DOCUMENT_DIAGNOSTIC not in ls.protocol.fm.features:
        # advertised to this client only: one that pulls and is told when to pull again
        # gets its open documents' diagnostics by pull and no push for them (both at once
        # would show each diagnostic twice in VS Code); any other client gets pushes
        ls.feature(types.TEXT_DOCUMENT_DIAGNOSTIC, types.DiagnosticOptions(
            identifier="fxls", inter_file_dependencies=True, workspace_diagnostics=False,
        ))(on_pull_diagnostics)


def pulls_diagnostics(capabilities: types.ClientCapabilities) -> bool:
    """Whether the client pulls diagnostics and re-pulls when the server asks: Neovim 0.11
    pulls only on open and change and cannot be told that a save's trace is done."""
    text_document, workspace = capabilities.text_document, capabilities.workspace
    return bool(
        text_document is not None and text_document.diagnostic is not None
        and workspace is not None and workspace.diagnostics is not None
        and workspace.diagnostics.refresh_support
    )


@reported()
async def on_pull_diagnostics(
    ls: FxlsServer, params: types.DocumentDiagnosticParams
) -> types.DocumentDiagnosticReport:
    return ls.pulled(params.text_document.uri, params.previous_result_id)


@server.feature(types.INITIALIZED)
@reported()
def on_initialized(ls: FxlsServer, params: types.InitializedParams) -> None:
    if ls.supports_configuration() and ls.workspace.folders:
        ls.interpreters.loading()  # analyses of the files opened next wait for the answer
        ls.spawn(ls.load_folder_interpreters())
    workspace = ls.client_capabilities.workspace
    watched = workspace.did_change_watched_files if workspace is not None else None
    if watched is not None and watched.dynamic_registration:
        ls.spawn(ls.watch_files())
    ls.spawn(ls.interpreters.warm(ls._workspace_roots()))


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
@reported()
def on_watched_files(ls: FxlsServer, params: types.DidChangeWatchedFilesParams) -> None:
    ls.files_changed(list(params.changes))


@server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
@reported()
def on_progress_cancel(ls: FxlsServer, params: types.WorkDoneProgressCancelParams) -> None:
    ls.cancel_progress(params.token)


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
@reported(user_facing=True)
async def on_configuration(ls: FxlsServer, params: types.DidChangeConfigurationParams) -> None:
    _apply_settings(ls, params.settings)
    await ls.analysis.set_python(ls.config.python, ls.config.learn_libraries)
    await ls.interpreters.set_learn_libraries(ls.config.learn_libraries)
    await ls.load_folder_interpreters()
    for uri in list(ls.states):
        ls.schedule(uri)


@server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
@reported()
def on_workspace_folders(ls: FxlsServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    # pygls has added and removed them; each folder's interpreter is asked for again, and
    # analyses of files opened from now on wait for the answer
    if ls.supports_configuration():
        ls.interpreters.loading()
    ls.spawn(_reload_folder_interpreters(ls))
    added = [to_fs_path(folder.uri) or "" for folder in params.event.added]
    if added:  # the libraries the new folders' files import, learned in the background
        ls.spawn(ls.interpreters.warm(added))


async def _reload_folder_interpreters(ls: FxlsServer) -> None:
    before = dict(ls.interpreters.pythons)
    await ls.load_folder_interpreters()
    if ls.interpreters.pythons != before:
        for uri in list(ls.states):
            ls.schedule(uri)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
@reported(user_facing=True)
def on_open(ls: FxlsServer, params: types.DidOpenTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.state_for(uri)
    if ls.pull_diagnostics and uri in ls._pushed:
        ls.push(uri, [], None)  # pushed while closed; from now on the client pulls it
    # what other documents found in it, for another text of it, goes (and is recomputed)
    ls.withdraw_stale(uri, reanalyse=True)
    ls.schedule(uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
@reported()
def on_change(ls: FxlsServer, params: types.DidChangeTextDocumentParams) -> None:
    # what other documents found in it points into the text before this edit
    ls.withdraw_stale(params.text_document.uri, reanalyse=False)
    if ls.config.trace_on_change:
        ls.schedule(params.text_document.uri, ls.config.trace_on_change_delay_ms / 1000)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
@reported(user_facing=True)
def on_save(ls: FxlsServer, params: types.DidSaveTextDocumentParams) -> None:
    if not ls.config.trace_on_save:
        return
    uri = params.text_document.uri
    if uri in ls.states:  # a file that is not open is never run (only its dependents are)
        ls.schedule(uri)
    for dependent in ls.dependents_of(uri):
        ls.schedule(dependent, DEPENDENTS_DELAY_S)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
@reported()
def on_close(ls: FxlsServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    pending = ls._debounce.pop(uri, None)
    if pending is not None:
        pending.cancel()
    state = ls.states.pop(uri, None)
    if state is not None:
        state.generation += 1  # an analysis still running may no longer publish
        if state.verify_task is not None:
            state.verify_task.cancel()
        state.settled.set()
    # its own diagnostics and what it found in other files go; what other open documents
    # found in it stays (shown for a file that is not open)
    ls.republish(ls.board.withdraw(uri))


@server.feature(types.TEXT_DOCUMENT_HOVER)
@reported()
async def on_hover(ls: FxlsServer, params: types.HoverParams) -> types.Hover | None:
    state = await ls.answering_state(params.text_document.uri)
    if state is None or state.report is None:
        return None
    converter = ls.converter(state)
    line, col = converter.to_python(params.position)
    text = _hover_text(state.report, state.path, line, col, params.text_document.uri)
    if text is None:
        return None
    return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, text))


def _hover_text(report: FileReport, path: str, line: int, col: int, uri: str) -> str | None:
    """Markdown for (line, col): the nodes its expression made in the models' graphs (or,
    for a call of a submodule traced through, what that call produced) and the nodes a pass
    line made or changed in the graphs the pass ran on; else the module or pass whose name
    is there."""
    blocks = []
    hits, calls = innermost_at(report, path, line, col)
    if hits:
        blocks.append(nodes_markdown(hits))
    if calls:
        blocks.append(calls_markdown(calls, uri))
    pass_hits = pass_nodes_at(report, path, line, col)
    if pass_hits:
        blocks.append(pass_nodes_markdown(pass_hits))
    if blocks:
        return "\n\n---\n\n".join(blocks)
    module = module_at(report, line, col)
    if module is not None:
        return module_markdown(module)
    found = pass_at(report, line, col)
    return pass_markdown(found) if found is not None else None


@server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions())
@reported(default=[])
async def on_inlay_hint(ls: FxlsServer, params: types.InlayHintParams) -> list[types.InlayHint]:
    if not ls.config.inlay_hints_shapes:
        return []
    state = await ls.answering_state(params.text_document.uri)
    if state is None or state.report is None:
        return []
    converter = ls.converter(state)
    first, last = params.range.start.line + 1, params.range.end.line + 1
    hints = []
    for line, col, label in shape_hints(state.report, state.path, state.analysed_text):
        if first <= line <= last:
            hints.append(
                types.InlayHint(
                    position=converter.position(line, col),
                    label=label,
                    kind=types.InlayHintKind.Type,
                    padding_left=False,
                )
            )
    return hints


@server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
@reported(default=[])
async def on_code_lens(ls: FxlsServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    state = await ls.answering_state(params.text_document.uri)
    if state is None or state.report is None:
        return []
    converter = ls.converter(state)
    lenses = []
    for module in state.report.modules:
        if module.span is None:
            continue
        title = f"fxls: {module.verdict()}"
        if module.node_count:
            title += f" · {module.node_count} nodes"
        command = types.Command(
            title=title, command=SHOW_GRAPH,
            arguments=[params.text_document.uri, module.name, "code"],
        )
        lenses.append(types.CodeLens(range=converter.range(module.span), command=command))
    for found in state.report.passes:
        if found.span is None or os.path.realpath(found.span.file) != converter.path:
            continue
        command = types.Command(
            title=lens_title(found), command=SHOW_GRAPH,
            arguments=[params.text_document.uri, found.name, PASS_FORMAT],
        )
        lenses.append(types.CodeLens(range=converter.range(found.span), command=command))
    return lenses


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND],  # type: ignore[list-item]
        resolve_provider=False,
    ),
)
@reported(default=[])
async def on_code_action(
    ls: FxlsServer, params: types.CodeActionParams
) -> list[types.CodeAction]:
    # right after a save: the analysis in flight first (bounded by the trace timeout) ...
    state = await ls.answering_state(params.text_document.uri)
    if state is None or state.report is None:
        return []
    text = ls.open_text(state.uri, state)
    converter = ls.converter(state)
    actions: list[types.CodeAction] = []
    cache = state.fixes
    if isinstance(cache, FixCache) and cache.matches(text):
        # ... then the verification of the fixes asked for (those are re-traced next)
        await _verified(ls, cache, params, converter)
        actions = code_actions(cache, state.uri, text, params, converter)
    # the document's own diagnostics, when they are those of the text in the editor
    shown = (ls.board.own(state.uri) if text == state.analysed_text
             and ls.board.version(state.uri) == state.analysed_version else None)
    actions += ignore_on_line(state.uri, text, params, converter, shown)
    document = ls.workspace.text_documents.get(state.uri)
    if document is not None and document.version is not None and _versioned_edits(ls):
        for action in actions:
            action.edit = _versioned(action.edit, document.version)
    return actions


async def _verified(
    ls: FxlsServer, cache: FixCache, params: types.CodeActionParams, converter: RangeConverter
) -> None:
    """Wait until the fixes ``params`` asks for are verified (a ``source.fixAll`` request:
    all of them, and their combination), at most the trace timeout and some slack. A
    verification that starts over (a newer analysis of the same text) is waited for too."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ls.config.trace_timeout + REQUEST_WAIT_SLACK_S
    fix_all = wants_fix_all(params) and bool(params.context.only)
    while True:
        current = cache.round
        indices = [i for i, _ in relevant(cache, params, converter)] \
            if wants_quickfix(params) else []
        cache.want(indices)

        def ready(current: int = current, indices: list[int] = indices) -> bool:
            if cache.round != current:
                return True
            return cache.finished if fix_all else cache.decided(indices)

        await cache.wait(ready, max(0.0, deadline - loop.time()))
        if cache.round == current or loop.time() >= deadline:
            return


def _versioned_edits(ls: FxlsServer) -> bool:
    workspace = ls.client_capabilities.workspace
    edit = workspace.workspace_edit if workspace is not None else None
    return bool(edit and edit.document_changes)


def _versioned(edit: types.WorkspaceEdit | None, version: int) -> types.WorkspaceEdit | None:
    """``edit`` as ``documentChanges`` for ``version``: an editor refuses it for other text."""
    if edit is None or not edit.changes:
        return edit
    return types.WorkspaceEdit(document_changes=[
        types.TextDocumentEdit(types.OptionalVersionedTextDocumentIdentifier(uri, version),
                               list(edits))
        for uri, edits in edit.changes.items()
    ])


@server.command(SHOW_GRAPH)
def show_graph(ls: FxlsServer, *args: Any) -> dict[str, Any]:
    """``[uri, name, format?]`` -> ``{"name", "status", "format", "text"}``.

    ``name`` is a module's class name, or a pass's name: a pass (or the format ``pass``)
    gives its before/after view (``pass_view.pass_view``: ``text`` is a diff per graph,
    ``runs`` the details, ``document`` the graphs before and after it as the graph view
    draws them, ``output.pass_page.pass_document``); a pass with the format ``html`` gives
    the graph view's before/after page."""
    if not isinstance(args, list | tuple) or len(args) < 2:
        raise ValueError("fxls.showGraph expects [uri, name, format?]")
    uri, name = str(args[0]), str(args[1])
    fmt = str(args[2]) if len(args) > 2 and args[2] else "code"
    if fmt not in RENDERERS and fmt != PASS_FORMAT:
        formats = ", ".join([*RENDERERS, PASS_FORMAT])
        raise ValueError(f"unknown graph format {fmt!r}; one of {formats}")
    state = ls.states.get(uri)
    if state is None or state.report is None:
        raise ValueError(f"{uri} has not been traced yet: open or save it first")
    module = next((m for m in state.report.modules if m.name == name), None)
    if module is None or fmt == PASS_FORMAT:
        found = find_pass(state.report.passes, name)
        if found is not None:
            graphs = graphs_of(state.report)
            if fmt == "html":  # the graph view's before/after page (Neovim opens it)
                return {"name": found.name, "status": "problem" if found.has_problem else "ok",
                        "format": "html",
                        "text": render_pass_page(found, graphs, state.report.diagnostics)}
            # the diff as text and the runs (Neovim's diff buffer), and the graphs before
            # and after the pass for the graph view (VS Code's webview)
            return {**pass_view(found),
                    "document": pass_document(found, graphs, state.report.diagnostics)}
        raise ValueError(f"no {'pass' if fmt == PASS_FORMAT else 'module or pass'} "
                         f"{name} in {uri}")
    return {
        "name": module.name,
        "status": module.status,
        "format": fmt,
        "text": render_module(module, fmt, state.report),
    }


@server.command(CHECK_PROJECT)
async def check_project(ls: FxlsServer, *args: Any) -> dict[str, Any]:
    """Analyse every Python file of the workspace folders; returns a summary."""
    return await ls.check_project()


@server.command(RESTART_WORKER)
async def restart_worker(ls: FxlsServer, *args: Any) -> bool:
    await ls.interpreters.restart()
    for uri in list(ls.states):
        ls.schedule(uri)
    return True


@server.feature(types.SHUTDOWN)
async def on_shutdown(ls: FxlsServer, *args: Any) -> None:
    await ls.interpreters.close()


def serve(*, tcp: bool = False, host: str = "127.0.0.1", port: int = 2087) -> None:
    logging.basicConfig(level=logging.WARNING)
    one_line_logs.install()  # a malformed message is one line on stderr, not a traceback
    for name in ("pygls", "pygls.protocol", "pygls.server"):
        logging.getLogger(name).setLevel(logging.WARNING)
    if tcp:
        server.start_tcp(host, port)
    else:
        serve_stdio(server)
