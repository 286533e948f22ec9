"""Run analyses in the worker: one file for the editor (``run_analysis``), many at a time
for ``fxls check`` (``analyze_many``); each outcome read as the file's report."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fxls.analysis_runs.outcome import ReportReader, failure_report
from fxls.analysis_runs.request import (
    ANALYZE_TARGET,
    LEARN_IMPORTS,
    WARM_IMPORTS,
    WARM_UP,
    AnalysisRequest,
)
from fxls.report import FileReport
from fxls.worker.protocol import JobStatus, JsonValue

log = logging.getLogger(__name__)


async def run_analysis(
    client: Any,
    request: AnalysisRequest,
    *,
    job_id: str | None = None,
    on_diagnostics: Callable[[FileReport], None] | None = None,
) -> FileReport | None:
    """Analyse ``request`` in ``client``'s worker; None when the job was cancelled (a newer
    one with the same ``job_id``, or the worker closed). ``on_diagnostics`` gets tracing's
    diagnostics as soon as the job sends them, before the complete report."""
    reader = ReportReader(request)

    def on_partial(value: JsonValue) -> None:
        report = reader.partial(value)
        if report is not None and on_diagnostics is not None:
            on_diagnostics(report)

    result = await client.run(
        ANALYZE_TARGET, request.params(), timeout=request.settings.limits.timeout, job_id=job_id,
        on_partial=on_partial, policy=request.settings.job_policy(),
        sources=request.sources(),
    )
    if result.status == JobStatus.CANCELLED:
        return None
    try:
        if result.last_partial is not None:
            reader.partial(result.last_partial)  # coalesced: referred to, never published
        return reader.result(result)
    except Exception as error:  # a bug of ours must not lose the other files' results
        log.warning("reading the report of %s failed: %s: %s", request.path,
                    type(error).__name__, error)
        return failure_report(request, JobStatus.INVALID, f"{type(error).__name__}: {error}")


def longest_first(requests: list[AnalysisRequest]) -> list[int]:
    """The order to start jobs in: the longest files first (a file's length stands for its
    cost), so that the last job to end is a short one and the other job processes do not
    sit idle waiting for it."""
    return sorted(range(len(requests)), key=lambda i: -len(requests[i].source))


async def analyze_many(
    requests: list[AnalysisRequest],
    *,
    python: str,
    jobs: int,
    on_done: Callable[[FileReport], None] | None = None,
) -> list[FileReport]:
    """Analyse files in one worker, ``jobs`` at a time; reports come back in request order."""
    from fxls.worker.client import WorkerClient

    if not requests:
        return []
    # the worker warms itself up once (prime); its job processes do not: back-to-back jobs
    # would wait for that (measured: no gain for `fxls check`)
    roots = tuple(dict.fromkeys(str(Path(r.settings.project.root or Path(r.path).parent).resolve())
                                for r in requests))  # the project roots
    client = WorkerClient(python, warm_imports=WARM_IMPORTS, learn_imports=LEARN_IMPORTS,
                          sandbox=True, prime=WARM_UP, roots=roots)
    await client.start()
    slots = asyncio.Semaphore(max(1, jobs))

    async def analyze_one(request: AnalysisRequest) -> FileReport:
        async with slots:
            report = await run_analysis(client, request)
        if report is None:
            report = failure_report(request, JobStatus.CANCELLED, "")
        if on_done is not None:
            on_done(report)
        return report

    tasks = {i: asyncio.ensure_future(analyze_one(requests[i])) for i in longest_first(requests)}
    try:
        await asyncio.gather(*tasks.values())
        return [tasks[i].result() for i in range(len(requests))]
    finally:
        for task in tasks.values():
            task.cancel()
        await client.close()
