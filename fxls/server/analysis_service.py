"""The server's handle on the worker: one analysis per document at a time, newest wins."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from fxls.analysis_runs.request import (
    LEARN_IMPORTS,
    WARM_FROM,
    WARM_IMPORTS,
    WARM_UP,
    AnalysisRequest,
)
from fxls.analysis_runs.runs import run_analysis
from fxls.report import FileReport
from fxls.server.workspace_imports import workspace_imports
from fxls.worker.client import WorkerClient

log = logging.getLogger(__name__)


class WorkerStartError(Exception):
    """The worker could not be started (a bad ``fxls.python``, a broken environment)."""

    def __init__(self, python: str, cause: BaseException) -> None:
        detail = str(cause).strip().splitlines()[-1:] or [type(cause).__name__]
        super().__init__(f"fxls could not start its worker with `{python}`: "
                         f"{type(cause).__name__}: {detail[0]}")
        self.python = python


class AnalysisService:
    """Starts the worker lazily, restarts it when it dies or when the interpreter changes."""

    def __init__(self, python: str, learn_libraries: bool = True) -> None:
        self.python = python
        self.learn_libraries = learn_libraries
        #: what the workspace's files import: every new worker learns it
        self._warm: list[str] = []
        #: the workspace folders warmed: the worker learns nothing from inside them
        self._roots: list[str] = []
        self._client: WorkerClient | None = None
        self._lock = asyncio.Lock()
        #: the start in progress: ``close`` cancels it (a worker still importing torch would
        #: otherwise hold the shutdown for seconds)
        self._starting: asyncio.Task[None] | None = None
        self._closing = False

    async def _ensure_client(self) -> WorkerClient:
        async with self._lock:
            if self._client is None:
                client = WorkerClient(self.python, warm_imports=WARM_IMPORTS, warm_up=WARM_UP,
                                      warm_from=WARM_FROM,
                                      learn_imports=LEARN_IMPORTS, sandbox=True,
                                      learn_libraries=self.learn_libraries,
                                      roots=tuple(self._roots))
                self._starting = asyncio.create_task(self._start(client))
                try:
                    await self._starting
                except asyncio.CancelledError:
                    await _close_quietly(client)
                    if not self._closing or _cancelled(asyncio.current_task()):
                        raise
                    raise WorkerStartError(
                        self.python, RuntimeError("the server is shutting down")) from None
                except Exception as error:
                    await _close_quietly(client)
                    raise WorkerStartError(self.python, error) from error
                finally:
                    self._starting = None
                self._client = client
            return self._client

    async def _start(self, client: WorkerClient) -> None:
        await client.start()
        if self._warm and self.learn_libraries:
            await client.warm(self._warm, self._roots)

    async def analyze(
        self,
        key: str,
        request: AnalysisRequest,
        on_diagnostics: Callable[[FileReport], None] | None = None,
    ) -> FileReport | None:
        """The report for ``request``, or None when a newer request for ``key`` superseded it.

        ``on_diagnostics`` gets tracing's diagnostics before the complete report. Raises
        :class:`WorkerStartError` when the worker cannot start.
        """
        client = await self._ensure_client()
        return await run_analysis(client, request, job_id=key, on_diagnostics=on_diagnostics)

    async def warm(self, folders: list[str]) -> None:
        """Have the worker (started now if needed) learn in the background the libraries
        the Python files under ``folders`` import, so that the first file opened finds them
        loaded. Read off the event loop; a worker that cannot start is logged only (the
        first analysis reports it)."""
        folders = list(dict.fromkeys(f for f in folders if f))
        self._roots = sorted({*self._roots, *folders})  # the next worker never imports there
        if not self.learn_libraries or not folders:
            return
        modules = await asyncio.to_thread(workspace_imports, folders)
        self._warm = sorted({*self._warm, *modules})
        try:
            client = await self._ensure_client()
            await client.warm(modules, self._roots)
        except WorkerStartError as error:
            log.warning("%s", error)

    async def set_python(self, python: str, learn_libraries: bool | None = None) -> None:
        changed = learn_libraries is not None and learn_libraries != self.learn_libraries
        if learn_libraries is not None:
            self.learn_libraries = learn_libraries
        if python != self.python or changed:
            self.python = python
            await self.restart()

    async def restart(self) -> None:
        async with self._lock:
            client, self._client = self._client, None
        if client is not None:
            try:
                await client.close()
            except Exception:  # a dead worker cannot be closed politely; it is gone anyway
                log.exception("closing the worker failed")

    async def close(self) -> None:
        self._closing = True
        if self._starting is not None:
            self._starting.cancel()
        await self.restart()


async def _close_quietly(client: WorkerClient) -> None:
    with contextlib.suppress(Exception):
        await client.close()


def _cancelled(task: asyncio.Task[object] | None) -> bool:
    """The task itself is being cancelled (not just the start it awaited)."""
    return task is not None and task.cancelling() > 0
