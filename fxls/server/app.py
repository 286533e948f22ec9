"""The fxls language server: wiring of LSP features to the analysis service and the report.

Handlers are thin: they convert positions once (``lsp_convert.RangeConverter``), look
things up in the cached report (``documents``), and render (``hover``, ``inlay``). Tracing
happens only on open/save (and, opt-in, after a pause in typing), never on hover.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from fxls import __version__
from fxls.graph_render import RENDERERS, render_module
from fxls.pass_view import PASS_FORMAT, find_pass, lens_title, pass_view
from fxls.report import FileReport
from fxls.runner import AnalysisRequest, failure_report
from fxls.server.analysis_service import AnalysisService, WorkerStartError
from fxls.server.code_actions import FIX_ALL_KIND, FixCache, code_actions
from fxls.server.config import ServerConfig
from fxls.server.dependencies import depends_on, is_project_file
from fxls.server.documents import DocumentState, module_at, nodes_at, pass_at, pass_nodes_at
from fxls.server.foreign import DiagnosticBoard
from fxls.server.hover import (
    module_markdown,
    nodes_markdown,
    pass_markdown,
    pass_nodes_markdown,
)
from fxls.server.inlay import shape_hints
from fxls.server.lsp_convert import RangeConverter, place_diagnostics
from fxls.server.protocol import FxlsProtocol, serve_stdio
from fxls.server.reporting import reported, tell
from fxls.settings import load_settings

log = logging.getLogger("fxls.server")

SHOW_GRAPH = "fxls.showGraph"
RESTART_WORKER = "fxls.restartWorker"
#: sent after the complete report of a version is in place (hover, inlay hints, code lens
#: and code actions answer from it); diagnostics may have been published before it
ANALYSIS_DONE = "fxls/analysisDone"
#: how long a code action request waits for fixes of the current text to be verified
VERIFY_WAIT_S = 10.0
#: debounce before re-analysing the open documents that depend on a saved file
DEPENDENTS_DELAY_S = 0.3
#: how much longer than the trace timeout a request waits for an analysis in flight
REQUEST_WAIT_SLACK_S = 5.0


class FxlsServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "fxls", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=FxlsProtocol,
        )
        self.config = ServerConfig()
        self.analysis = AnalysisService(self.config.python)
        self.states: dict[str, DocumentState] = {}
        #: what each URI shows: its own diagnostics and those other documents found in it
        self.board = DiagnosticBoard()
        self._debounce: dict[str, asyncio.TimerHandle] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._progress_ids = itertools.count(1)
        #: messages already shown (a bad setting or a broken interpreter is said once)
        self._said: set[str] = set()

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

    def converter(self, state: DocumentState) -> RangeConverter:
        return RangeConverter(state.path, state.analysed_text, self.encoding)

    def open_text(self, uri: str, state: DocumentState) -> str:
        """The document's text in the editor (its analysed text if the editor's is gone)."""
        document = self.workspace.text_documents.get(uri)
        return document.source if document is not None else state.analysed_text

    def spawn(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- analysis ------------------------------------------------------------------------

    def schedule(self, uri: str, delay_s: float = 0.0) -> None:
        pending = self._debounce.pop(uri, None)
        if pending is not None:
            pending.cancel()
        state = self.states.get(uri)
        if state is not None:
            state.settled.clear()
        if delay_s <= 0:
            self.spawn(self.analyze(uri))
            return
        loop = asyncio.get_running_loop()
        self._debounce[uri] = loop.call_later(
            delay_s, lambda: (self._debounce.pop(uri, None), self.spawn(self.analyze(uri)))
        )

    async def analyze(self, uri: str) -> None:
        state = self.states.get(uri)
        if state is None:
            return  # closed (or never opened) since it was scheduled
        state.generation += 1
        generation = state.generation
        try:
            await self._analyze(uri, state, generation)
        except Exception as error:
            log.exception("analysis of %s failed", uri)
            tell(self, f"fxls: the analysis of {uri} failed: {error}")
        finally:
            if generation == state.generation and uri not in self._debounce:
                state.settled.set()

    async def _analyze(self, uri: str, state: DocumentState, generation: int) -> None:
        document = self.workspace.get_text_document(uri)
        text, version = document.source, document.version
        overrides = {
            "timeout": self.config.trace_timeout,
            "select": self.config.select or None,
            "ignore": self.config.ignore or None,
            "trace_mode": self.config.trace_mode or None,
        }
        settings = load_settings(state.path, overrides)
        for problem in settings.problems:
            self.say_once(f"fxls: [tool.fxls] in {settings.root}: {problem}")
        request = AnalysisRequest(state.path, text, settings)

        def current() -> bool:
            return generation == state.generation and self.states.get(uri) is state

        def publish_early(report: FileReport) -> None:
            # tracing's diagnostics now; the complete report (FX014, shapes for hover)
            # publishes again when the job ends, and is what code actions use
            if current():
                self.publish_report(uri, state, report, text, version, settings.root)

        worker_started = True
        try:
            async with self._progress(f"Tracing {Path(state.path).name}"):
                report = await self.analysis.analyze(uri, request, publish_early)
        except WorkerStartError as error:
            worker_started = False
            self.say_once(str(error), types.MessageType.Error)
            report = failure_report(request, "worker-start", str(error))
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
            str(Path(other.path).resolve()): (
                other.analysed_text if other.report is not None else self.open_text(key, other)
            )
            for key, other in self.states.items()
            if key != uri
        }
        converter = RangeConverter(state.path, text, self.encoding, other_texts)
        roots = [*self._workspace_roots(), project_root]
        placed = place_diagnostics(report, converter, lambda file: is_project_file(file, roots))
        own = placed.pop(converter.path, [])
        by_target = {self._uri_of(path): diagnostics for path, diagnostics in placed.items()}
        affected = self.board.set_own(uri, own, version)
        affected |= self.board.set_contributions(uri, by_target)
        self.republish(affected)

    def republish(self, uris: set[str]) -> None:
        """Publish what each of ``uris`` shows now (an empty list clears it)."""
        for uri in sorted(uris):
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=uri, diagnostics=self.board.shown(uri), version=self.board.version(uri)))

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
            if str(Path(state.path).resolve()) == path:
                return uri
        return Path(path).as_uri()

    def _workspace_roots(self) -> list[str]:
        folders = [to_fs_path(folder.uri) or "" for folder in self.workspace.folders.values()]
        return [*folders, self.workspace.root_path or ""]

    def _start_fix_verification(self, state: DocumentState, request: AnalysisRequest) -> None:
        if state.verify_task is not None:
            state.verify_task.cancel()
        if state.fixes is None:
            state.fixes = FixCache()
        report, text = state.report, state.analysed_text
        assert report is not None

        async def analyze_variant(variant: str) -> Any:
            variant_request = AnalysisRequest(request.path, variant, request.settings)
            return await self.analysis.analyze(f"verify:{state.uri}", variant_request)

        state.verify_task = asyncio.ensure_future(
            state.fixes.verify_all(text, report, analyze_variant)
        )

    def _refresh_views(self) -> None:
        workspace = self.client_capabilities.workspace
        if workspace is None:
            return
        if workspace.inlay_hint and workspace.inlay_hint.refresh_support:
            self.workspace_inlay_hint_refresh(None)
        if workspace.code_lens and workspace.code_lens.refresh_support:
            self.workspace_code_lens_refresh(None)

    def _progress(self, title: str) -> _Progress:
        return _Progress(self, f"fxls-trace-{next(self._progress_ids)}", title)


class _Progress:
    """Work-done progress around one trace, if the client supports it; never fails the trace."""

    def __init__(self, server: FxlsServer, token: str, title: str) -> None:
        self.server, self.token, self.title = server, token, title
        window = server.client_capabilities.window
        self.enabled = bool(window and window.work_done_progress)

    async def __aenter__(self) -> None:
        if not self.enabled:
            return
        try:
            await self.server.work_done_progress.create_async(self.token)
            self.server.work_done_progress.begin(
                self.token, types.WorkDoneProgressBegin(title=self.title, cancellable=False)
            )
        except Exception:
            self.enabled = False

    async def __aexit__(self, *exc: object) -> None:
        if not self.enabled:
            return
        try:
            self.server.work_done_progress.end(self.token, types.WorkDoneProgressEnd())
        finally:
            # pygls keeps every token forever (pygls #607); a long session must not grow.
            self.server.work_done_progress.tokens.pop(self.token, None)


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


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
@reported(user_facing=True)
async def on_configuration(ls: FxlsServer, params: types.DidChangeConfigurationParams) -> None:
    _apply_settings(ls, params.settings)
    await ls.analysis.set_python(ls.config.python)
    for uri in list(ls.states):
        ls.schedule(uri)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
@reported(user_facing=True)
def on_open(ls: FxlsServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.state_for(params.text_document.uri)
    ls.schedule(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
@reported()
def on_change(ls: FxlsServer, params: types.DidChangeTextDocumentParams) -> None:
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
    text = _hover_text(state.report, state.path, line, col)
    if text is None:
        return None
    return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, text))


def _hover_text(report: FileReport, path: str, line: int, col: int) -> str | None:
    """Markdown for (line, col): the nodes its expression made in the models' graphs and
    the nodes a pass line made or changed in the graphs the pass ran on; else the module or
    pass whose name is there."""
    blocks = []
    hits = nodes_at(report, path, line, col)
    if hits:
        blocks.append(nodes_markdown(hits))
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
        if found.span is None or str(Path(found.span.file).resolve()) != converter.path:
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
    state = await ls.answering_state(params.text_document.uri)
    if state is None or state.report is None or state.fixes is None:
        return []
    text = ls.open_text(state.uri, state)
    task = state.verify_task
    if task is not None and not task.done() and text == state.analysed_text:
        # fixes for this very text are being verified: answer with them, not with nothing
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), timeout=VERIFY_WAIT_S)
    actions = code_actions(state.fixes, state.uri, text, params, ls.converter(state))
    document = ls.workspace.text_documents.get(state.uri)
    if document is not None and document.version is not None and _versioned_edits(ls):
        for action in actions:
            action.edit = _versioned(action.edit, document.version)
    return actions


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
    ``runs`` the details)."""
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
            return pass_view(found)
        raise ValueError(f"no {'pass' if fmt == PASS_FORMAT else 'module or pass'} "
                         f"{name} in {uri}")
    return {
        "name": module.name,
        "status": module.status,
        "format": fmt,
        "text": render_module(module, fmt, state.report),
    }


@server.command(RESTART_WORKER)
async def restart_worker(ls: FxlsServer, *args: Any) -> bool:
    await ls.analysis.restart()
    for uri in list(ls.states):
        ls.schedule(uri)
    return True


@server.feature(types.SHUTDOWN)
async def on_shutdown(ls: FxlsServer, *args: Any) -> None:
    await ls.analysis.close()


def serve(*, tcp: bool = False, host: str = "127.0.0.1", port: int = 2087) -> None:
    logging.basicConfig(level=logging.WARNING)
    for name in ("pygls", "pygls.protocol", "pygls.server"):
        logging.getLogger(name).setLevel(logging.WARNING)
    if tcp:
        server.start_tcp(host, port)
    else:
        serve_stdio(server)
