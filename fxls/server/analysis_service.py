"""The server's handle on the worker: one analysis per document at a time, newest wins."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from fxls.report import FileReport
from fxls.runner import LEARN_IMPORTS, WARM_IMPORTS, WARM_UP, AnalysisRequest, run_analysis

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

    def __init__(self, python: str) -> None:
        self.python = python
        self._client: Any = None
        self._lock = asyncio.Lock()

    async def _ensure_client(self) -> Any:
        async with self._lock:
            if self._client is None:
                from fxls.worker.client import WorkerClient

                client = WorkerClient(self.python, warm_imports=WARM_IMPORTS, warm_up=WARM_UP,
                                      learn_imports=LEARN_IMPORTS, sandbox=True)
                try:
                    await client.start()
                except Exception as error:
                    with contextlib.suppress(Exception):
                        await client.close()
                    raise WorkerStartError(self.python, error) from error
                self._client = client
            return self._client

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

    async def set_python(self, python: str) -> None:
        if python != self.python:
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
        await self.restart()
