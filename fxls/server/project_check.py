"""``fxls.checkProject``: analyse every Python file and notebook of the workspace under a
cancellable progress, and publish what each shows (a closed notebook's on its file:
``closed_notebooks``)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from fxls.analysis_runs.request import AnalysisRequest
from fxls.codes import CODES
from fxls.project.files import Skipped, SkippedFile, walk_python_files
from fxls.project.notebooks import (
    NOTEBOOK_SUFFIX,
    MalformedNotebook,
    NotebookCells,
    is_notebook,
    read_notebook,
)
from fxls.project.python_source import UndecodableSource, read_python_source
from fxls.project.settings import load_settings
from fxls.report import Diagnostic, FileReport, Span
from fxls.server.analysis_service import WorkerStartError
from fxls.server.closed_notebooks import on_notebook_file
from fxls.server.folders import FolderInterpreters
from fxls.server.progress import TaskProgress
from fxls.server.publisher import Publisher
from fxls.server.reporting import tell
from fxls.server.scheduler import AnalysisScheduler
from fxls.server.session import Session, workspace_roots

#: files a project check analyses at most
MAX_PROJECT_FILES = 500
#: folders a project check never enters (besides hidden ones and virtual environments)
SKIPPED_FOLDERS = frozenset({"__pycache__", "node_modules", "site-packages", "dist-packages",
                             "build", "dist"})


class ProjectCheck:
    """Runs project checks; the client can cancel each through its progress token."""

    def __init__(
        self,
        server: LanguageServer,
        session: Session,
        publisher: Publisher,
        scheduler: AnalysisScheduler,
        interpreters: FolderInterpreters,
    ) -> None:
        self._server = server
        self._session = session
        self._publisher = publisher
        self._scheduler = scheduler
        self._interpreters = interpreters
        #: progress token -> the check it reports on and the file being analysed
        self._running: dict[str, tuple[TaskProgress, asyncio.Task[None]]] = {}

    async def run(self) -> dict[str, Any]:
        """Analyse every Python file of the workspace and publish what each shows; names
        that are not regular files (a FIFO, a link to a device, a link loop) are skipped and
        listed in the answer's ``skipped``."""
        skipped: list[Skipped] = []
        roots = [root for root in workspace_roots(self._server.workspace) if root]
        files = await asyncio.to_thread(project_files, roots, skipped)
        for item in skipped:
            tell(self._server, f"fxls: {item.path}: skipped: {item.reason}",
                 kind=types.MessageType.Info)
        truncated = len(files) > MAX_PROJECT_FILES
        files = files[:MAX_PROJECT_FILES]
        checked = problems = 0
        async with TaskProgress(self._server, "fxls: checking the project") as progress:
            try:
                for index, path in enumerate(files):
                    if progress.cancelled.is_set():
                        break
                    progress.report(f"{path.name} ({index + 1}/{len(files)})", index, len(files))
                    uri = self._publisher.uri_of(str(path))
                    one = asyncio.ensure_future(self._check_file(uri, path, skipped))
                    self._running[progress.token] = (progress, one)
                    try:
                        await one
                    except asyncio.CancelledError:
                        if not progress.cancelled.is_set():
                            raise
                        break
                    checked += 1
                    problems += len(self._session.diagnostics.shown(uri))
            finally:
                self._running.pop(progress.token, None)
        return {"files": len(files), "checked": checked, "diagnostics": problems,
                "cancelled": progress.cancelled.is_set(), "truncated": truncated,
                "skipped": [{"path": item.path, "reason": item.reason} for item in skipped]}

    def cancel(self, token: object) -> None:
        """The client cancelled the progress ``token``: if it is a check's, stop it."""
        entry = self._running.get(str(token))
        if entry is not None:
            progress, task = entry
            progress.cancelled.set()
            task.cancel()

    async def _check_file(self, uri: str, path: Path, skipped: list[Skipped]) -> None:
        if uri in self._session.documents:
            await self._scheduler.analyze(uri, track=False)
            return
        unread, cells = None, None
        span = Span(str(path), 1, 1, 0, 0)  # where a file that cannot be read says so
        try:
            # off the event loop: bounded and non-blocking, but up to 8 MB to decode
            text, cells = await asyncio.to_thread(_read_source, path)
        except UndecodableSource as error:
            text = error.text  # the analysis reports it
        except MalformedNotebook as error:  # said where its JSON breaks, in the file
            text, unread = error.text, error.message
            span = Span(str(path), error.line, error.line, error.col, error.end_col)
        except SkippedFile as error:  # it became one since the walk
            skipped.append(Skipped(str(path), error.reason))
            return
        except OSError as error:
            text = ""
            unread = getattr(error, "reason", None) or f"cannot read the file: {error.strerror}"
        settings = load_settings(str(path), self._session.config.overrides())
        self._publisher.publish_settings(settings)
        if unread is not None:
            report = FileReport(str(path), [], [
                Diagnostic("FX100", CODES["FX100"].severity, unread, span)])
            self._publisher.publish_report(uri, str(path), report, text, None,
                                           settings.project.root)
            return
        try:
            service = await self._interpreters.for_path(str(path))
            found = await service.analyze(f"check:{path}", AnalysisRequest(
                str(path), text, settings, cells))
        except WorkerStartError as error:
            self._publisher.say_once(str(error), types.MessageType.Error)
            raise asyncio.CancelledError from error
        if found is None or uri in self._session.documents:
            return  # opened meanwhile: its own analysis publishes
        reshape = None
        if cells is not None:
            def reshape(shown: list[types.Diagnostic]) -> list[types.Diagnostic]:
                return on_notebook_file(shown, cells, path.name)
        self._publisher.publish_report(uri, str(path), found, text, None,
                                       settings.project.root, reshape)


def _read_source(path: Path) -> tuple[str, NotebookCells | None]:
    """The Python text to analyse of ``path``, and for a notebook where its cells are."""
    if is_notebook(path):
        notebook = read_notebook(path)
        return notebook.source, notebook.cells
    return read_python_source(path), None


def project_files(roots: list[str], skipped: list[Skipped] | None = None) -> list[Path]:
    """The regular Python files and notebooks under ``roots``, resolved and sorted, outside hidden
    folders, virtual environments and installed libraries; names that are not regular files
    are appended to ``skipped``."""
    found: dict[str, Path] = {}
    for root in roots:
        for name in walk_python_files(root, SKIPPED_FOLDERS, skipped,
                                      (".py", NOTEBOOK_SUFFIX)):
            path = os.path.realpath(name)
            found.setdefault(path, Path(path))
    return sorted(found.values())
