"""When each open document is analysed, and what becomes of the result.

Each analysis bumps its document's generation, so a newer save supersedes older results
(stale results are never published). A save publishes twice: tracing's diagnostics as soon
as the job sends them, then the complete report's, which becomes the document's snapshot;
then ``fxls/analysisDone`` is sent and the report's quick fixes are verified in the
background (``code_actions.FixCache``). On open, a result the result cache holds for the
document is published before the worker answers (``cached_results``; its
``fxls/analysisDone`` says ``cached``), and every fresh complete report is stored there.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from fxls.analysis_runs.outcome import failure_report
from fxls.analysis_runs.request import AnalysisRequest
from fxls.codes import Target
from fxls.fixes.verify_targets import verification_targets
from fxls.project.settings import Settings, load_settings
from fxls.report import FileReport
from fxls.server.analysed_texts import AnalysedTexts
from fxls.server.analysis_service import WorkerStartError
from fxls.server.background import BackgroundTasks
from fxls.server.cached_results import CachedLookup, CachedResults, lookup_message
from fxls.server.dependencies import depends_on
from fxls.server.folders import FolderInterpreters
from fxls.server.progress import TraceProgress
from fxls.server.publisher import Publisher
from fxls.server.reporting import tell
from fxls.server.session import (
    DocumentController,
    DocumentSnapshot,
    Session,
    editor_text,
    open_text,
)
from fxls.server.targets_status import targets_status

log = logging.getLogger("fxls.server")

#: sent after the complete report of a version is in place (hover, inlay hints, code lens
#: and code actions answer from it), with the tracers it was analysed for (the editors'
#: status); diagnostics may have been published before it
ANALYSIS_DONE = "fxls/analysisDone"
#: quick fixes are verified once a document's analyses have paused this long (or at once
#: when a request asks for them): saves in a row never share the cores with verifications
VERIFY_QUIET_S = 1.0
#: debounce before re-analysing the open documents that depend on a saved file
DEPENDENTS_DELAY_S = 0.3
#: how much longer than the trace timeout a request waits for an analysis in flight
REQUEST_WAIT_SLACK_S = 5.0


class AnalysisScheduler:
    """Starts, debounces and supersedes the analyses of the open documents."""

    def __init__(
        self,
        server: LanguageServer,
        session: Session,
        publisher: Publisher,
        interpreters: FolderInterpreters,
        progress: TraceProgress,
        background: BackgroundTasks,
    ) -> None:
        self._server = server
        self._session = session
        self._publisher = publisher
        self._interpreters = interpreters
        self._progress = progress
        self._background = background
        #: uri -> the pending start of its next analysis (debounced)
        self._debounce: dict[str, asyncio.TimerHandle] = {}
        self._analysed = AnalysedTexts()
        self._cached = CachedResults.from_environment()

    def schedule(self, uri: str, delay_s: float = 0.0, *, unless_unchanged: bool = False,
                 from_cache: bool = False) -> None:
        """Analyse ``uri`` after ``delay_s`` (a later call for it restarts the delay);
        ``unless_unchanged``: a text already analysed as it is gets its last report again
        (``analysed_texts``); ``from_cache``: the result cache's report of the text is shown
        until the analysis answers (an opened document)."""
        pending = self._debounce.pop(uri, None)
        if pending is not None:
            pending.cancel()
        document = self._session.documents.get(uri)
        if document is not None:
            document.settled.clear()
        if delay_s <= 0:
            self._background.spawn(self.analyze(uri, unless_unchanged=unless_unchanged,
                                                from_cache=from_cache))
            return
        self._debounce[uri] = asyncio.get_running_loop().call_later(
            delay_s, self._start_debounced, uri)

    def _start(self, uri: str) -> None:
        self._background.spawn(self.analyze(uri))

    def _start_debounced(self, uri: str) -> None:
        self._debounce.pop(uri, None)
        self._start(uri)

    def schedule_all(self) -> None:
        for uri in list(self._session.documents):
            self.schedule(uri)

    def forget(self, uri: str) -> None:
        """``uri`` was closed: nothing of it is analysed or published any more."""
        pending = self._debounce.pop(uri, None)
        if pending is not None:
            pending.cancel()
        document = self._session.documents.pop(uri, None)
        self._analysed.forget(uri)
        if document is not None:
            document.close()

    def dependents_of(self, uri: str) -> list[str]:
        """The other open documents whose analysis depends on the file ``uri``."""
        path = to_fs_path(uri) or uri
        dependents = []
        for other, document in self._session.documents.items():
            if other == uri:
                continue
            report = document.snapshot.report if document.snapshot is not None else None
            text = open_text(self._server.workspace, other, document.analysed_text)
            if depends_on(report, text, path):
                dependents.append(other)
        return dependents

    async def answering(self, uri: str) -> DocumentSnapshot | None:
        """The document's snapshot to answer a request from, once it has a report.

        While an analysis of the document is scheduled or running, and there is no report
        yet or the editor's text is not the analysed one, wait for it (bounded by the trace
        timeout): a client that asks right after a save gets the new report, not nothing.
        """
        document = self._session.documents.get(uri)
        if document is None:
            return None
        snapshot = document.snapshot
        if not document.settled.is_set() and (
            snapshot is None
            or open_text(self._server.workspace, uri, snapshot.text) != snapshot.text
        ):
            try:
                await asyncio.wait_for(document.settled.wait(),
                                       self._session.config.trace_timeout + REQUEST_WAIT_SLACK_S)
            except TimeoutError:
                log.warning("answering %s from its last report: the analysis is late", uri)
        if self._session.documents.get(uri) is not document:
            return None
        return document.snapshot

    async def analyze(self, uri: str, *, track: bool = True, unless_unchanged: bool = False,
                      from_cache: bool = False) -> None:
        """Analyse the open document ``uri`` and publish; ``track``: in the trace progress."""
        document = self._session.documents.get(uri)
        if document is None:
            return  # closed (or never opened) since it was scheduled
        generation = document.begin_analysis()
        try:
            await self._analyze(document, generation, track, unless_unchanged, from_cache)
        except Exception as error:
            log.exception("analysis of %s failed", uri)
            tell(self._server, f"fxls: the analysis of {uri} failed: {error}")
        finally:
            if generation == document.generation and uri not in self._debounce:
                document.settled.set()

    async def _analyze(self, document: DocumentController, generation: int, track: bool,
                       unless_unchanged: bool = False, from_cache: bool = False) -> None:
        uri = document.uri
        text, version = editor_text(self._session, self._server.workspace, uri)
        settings = load_settings(document.path, self._session.config.overrides())
        self._publisher.publish_settings(settings)
        request = AnalysisRequest(document.path, text, settings)
        reusable = self._analysed.reusable(uri, request) if unless_unchanged else None
        if reusable is not None:
            shown = document.snapshot
            snapshot = self._settle(document, reusable, text, version, settings)
            # the analysis that began cancelled a verification still running (or waiting)
            if shown is None or shown.text != text or not document.fixes.finished:
                self._start_fix_verification(document, snapshot, request)
            return

        def current() -> bool:
            return (generation == document.generation
                    and self._session.documents.get(uri) is document)

        key = f"{uri}#{generation}"
        answered = False

        def show_cached(lookup: CachedLookup) -> None:
            shown = lookup.report is not None and not answered and current()
            if lookup.report is not None and shown:
                self._show_cached(document, lookup.report, text, version, settings)
            if from_cache and current():
                tell(self._server, lookup_message(uri, lookup, shown),
                     kind=types.MessageType.Log)

        # the fingerprint is made while the job starts: looked up on open, and the key the
        # fresh report is stored under (the files as they were when the job read them)
        lookup = asyncio.ensure_future(self._look_up(document, request, from_cache, show_cached))

        def publish_early(report: FileReport) -> None:
            # tracing's diagnostics now; the complete report (FX014, shapes for hover)
            # publishes again when the job ends, and is what code actions use
            nonlocal answered
            answered = True
            self._progress.advance(key, 0.5)
            if current():
                self._publisher.publish_report(uri, document.path, report, text, version,
                                               settings.project.root)
                if report.models_complete:  # before export/compile and the passes
                    self._answer_from(document, report, text, version)

        report, worker_started = await self._run(document, request, key, track, current,
                                                 publish_early)
        answered = True
        if report is None or not current():
            return  # superseded by a newer save (its result will publish) or closed
        self._analysed.remember(uri, request, report)
        snapshot = self._settle(document, report, text, version, settings)
        if worker_started:
            self._start_fix_verification(document, snapshot, request)
            self._background.spawn(self._keep(lookup, report))

    async def _look_up(self, document: DocumentController, request: AnalysisRequest,
                       read: bool, found: Callable[[CachedLookup], None]) -> CachedLookup:
        """``request``'s fingerprint (and, if ``read``, its cached report), given to
        ``found``."""
        if not self._cached.enabled:
            return CachedLookup(None, None, 0.0)
        python = (await self._interpreters.for_path(document.path)).python
        result = await self._cached.look_up(request, python, read=read)
        found(result)
        return result

    async def _keep(self, lookup: asyncio.Future[CachedLookup], report: FileReport) -> None:
        """The fresh ``report`` stored under the fingerprint made when its job started."""
        key = (await lookup).fingerprint
        if key is not None:
            await self._cached.keep(key, report)

    def _show_cached(self, document: DocumentController, report: FileReport, text: str,
                     version: int | None, settings: Settings) -> None:
        """The cached ``report`` of this very text is published and answers requests, as
        an early report does, until the fresh one replaces it; the status item says so."""
        self._publisher.publish_report(document.uri, document.path, report, text, version,
                                       settings.project.root)
        self._answer_from(document, report, text, version)
        self._server.protocol.notify(ANALYSIS_DONE, {"uri": document.uri, "version": version,
                                                     **targets_status(report), "cached": True})

    def _answer_from(self, document: DocumentController, report: FileReport, text: str,
                     version: int | None) -> None:
        """The models' complete report answers hover, inlay hints and code lenses while
        torch's tiers and the passes still run (the final report replaces it)."""
        document.snapshot = DocumentSnapshot(document.uri, document.path, report, text, version,
                                             document.fixes)
        document.settled.set()
        self._publisher.refresh_views()

    def _settle(self, document: DocumentController, report: FileReport, text: str,
                version: int | None, settings: Settings) -> DocumentSnapshot:
        """``report`` becomes the document's snapshot, published and announced."""
        uri = document.uri
        document.snapshot = snapshot = DocumentSnapshot(
            uri, document.path, report, text, version, document.fixes)
        self._publisher.publish_report(uri, document.path, report, text, version,
                                       settings.project.root)
        self._server.protocol.notify(ANALYSIS_DONE, {"uri": uri, "version": version,
                                                     **targets_status(report)})
        self._publisher.refresh_views()
        return snapshot

    async def _run(
        self,
        document: DocumentController,
        request: AnalysisRequest,
        key: str,
        track: bool,
        current: Callable[[], bool],
        publish_early: Callable[[FileReport], None],
    ) -> tuple[FileReport | None, bool]:
        """The job's report (None: superseded) and whether the worker started."""
        if track:
            task = asyncio.current_task()
            self._progress.start(key, Path(document.path).name,
                                 cancel=task.cancel if task is not None else lambda: None)
        try:
            service = await self._interpreters.for_path(document.path)
            if not current():
                # a newer analysis started while this one waited for the folders' settings:
                # it must be the newest request the worker sees (the worker keeps the last)
                return None, True
            return await service.analyze(document.uri, request, publish_early), True
        except WorkerStartError as error:
            self._publisher.say_once(str(error), types.MessageType.Error)
            return failure_report(request, "worker-start", str(error)), False
        finally:
            self._progress.finish(key)

    def _start_fix_verification(
        self, document: DocumentController, snapshot: DocumentSnapshot, request: AnalysisRequest
    ) -> None:
        # the verification of the text before was cancelled when this analysis started;
        # proposed now, so that a request from this moment on waits for their verification
        snapshot.fixes.reset(snapshot.text, snapshot.report)

        # a fix of a symbolic-trace problem: its variants are checked by that tier alone
        # (torch's export/compile tiers would cost seconds per candidate); a fix of an
        # export or compile problem by its tier too (``Fix.tier``)
        def settings_for(tier: str | None) -> Settings:
            targets = ((Target.SYMBOLIC_TRACE.value,) if tier is None
                       else verification_targets(snapshot.report, tier))
            return replace(request.settings, tracers=replace(
                request.settings.tracers, targets=targets))

        async def analyze_variant(variant: str, lane: int,
                                  tier: str | None = None) -> FileReport | None:
            variant_request = AnalysisRequest(request.path, variant, settings_for(tier))
            service = await self._interpreters.for_path(request.path)
            return await service.analyze(f"verify:{document.uri}:{lane}", variant_request)

        document.verification = asyncio.ensure_future(snapshot.fixes.verify_all(
            snapshot.text, snapshot.report, analyze_variant, VERIFY_QUIET_S))
