"""Run analyses in the worker and turn every outcome, including failures, into a FileReport.

The bridge between worker job results and reports: a timeout, crash or memory blow-up of
the job becomes an FX102 diagnostic on the file instead of an error of the caller.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fxls.codes import CODES
from fxls.report import Diagnostic, FileReport, Span
from fxls.settings import Settings
from fxls.source_text import source_text
from fxls.worker.protocol import JobStatus

ANALYZE_TARGET = "fxls.analysis.job:analyze"
#: imported once by the warm worker so that each job starts with them loaded
WARM_IMPORTS = ("torch", "fxcore", "fxls.analysis.job")
#: run by each pre-forked job process while it waits for its job (analyses a bundled model);
#: for the editor, whose saves are apart, so the warm-up is done when a save comes
WARM_UP = "fxls.analysis.job:warm_up"
#: packages whose modules a job imported are imported by the warm worker for later jobs
#: (torch's own, e.g. ``torch._dynamo`` that torchvision and timm pull in: seconds per job)
LEARN_IMPORTS = ("torch",)


@dataclass(slots=True)
class AnalysisRequest:
    path: str  # as the user gave it (reported back unchanged)
    source: str
    settings: Settings

    def params(self) -> dict[str, Any]:
        return {
            "path": str(Path(self.path).resolve()),
            "source": self.source,
            "settings": self.settings.to_dict(),
        }


_FAILURE_MESSAGES = {
    JobStatus.TIMEOUT: "analysis timed out after {timeout:g} s{where} (an infinite loop at "
    "import or in forward?); raise `timeout` in [tool.fxls] if the model is just slow",
    JobStatus.CRASHED: "the worker process running this file crashed{where} ({detail})",
    JobStatus.MEMORY: "the analysis ran out of memory ({detail}; the limit is {memory} MB: raise "
    "`memory_limit_mb` in [tool.fxls] for a bigger model)",
    JobStatus.LIMIT: "the analysis was stopped{where}: {detail}",
    JobStatus.ERROR: "fxls failed while analysing this file: {detail}",
    JobStatus.CANCELLED: "the analysis was cancelled",
}


_FAULT_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


def running_line(output: str, path: str) -> int | None:
    """The line of ``path`` a killed or crashed job was running, from its fault dump.

    The worker makes a job print its stack (faulthandler) on a crash and right before a
    timeout kill; the most recent call comes first.
    """
    for match in _FAULT_FRAME.finditer(output[output.rfind("most recent call first"):]):
        if match.group("file") == path:
            return int(match.group("line"))
    return None


def failure_report(
    request: AnalysisRequest, status: str, detail: str, output: str = ""
) -> FileReport:
    """An FX102 report for a job that did not produce a report."""
    template = _FAILURE_MESSAGES.get(status, "the analysis failed ({detail})")
    path = str(Path(request.path).resolve())
    text = source_text(request.source)
    line = running_line(output, path) if output else None
    where = f" while running line {line}" if line is not None else ""
    if line is None or not 0 < line <= text.line_count:
        line = 1
    message = template.format(timeout=request.settings.timeout, detail=detail or status,
                              where=where, memory=request.settings.memory_limit_mb)
    span = Span(path, line, line, text.indent_bytes(line), text.byte_length(line))
    diagnostic = Diagnostic("FX102", CODES["FX102"].severity, message, span)
    return FileReport(request.path, [], [diagnostic])


def report_from_result(
    request: AnalysisRequest, result: Any, early: FileReport | None = None
) -> FileReport:
    """Turn a worker ``JobResult`` into the file's report. ``early`` is what the job sent
    before it ended (tracing's diagnostics): kept when the job then failed."""
    if result.status == JobStatus.OK and isinstance(result.value, dict):
        return _report_from_value(request, result.value, early)
    report = failure_report(
        request,
        result.status,
        _last_line(_failure_detail(result)),
        getattr(result, "output", "") or "",
    )
    if early is not None:
        report.modules = early.modules
        report.diagnostics = sorted(
            [*early.diagnostics, *report.diagnostics],
            key=lambda d: (d.span.file, d.span.line, d.span.col, d.code),
        )
    return report


def _report_from_value(
    request: AnalysisRequest, value: dict[str, Any], early: FileReport | None = None
) -> FileReport:
    report = FileReport.from_dict(value, early)
    report.path = request.path
    return report


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
    early: FileReport | None = None

    def on_partial(value: Any) -> None:
        nonlocal early
        if isinstance(value, dict):
            early = _report_from_value(request, value)
            if on_diagnostics is not None:
                on_diagnostics(early)

    result = await client.run(
        ANALYZE_TARGET, request.params(), timeout=request.settings.timeout, job_id=job_id,
        on_partial=on_partial, policy=request.settings.job_policy(),
    )
    if result.status == JobStatus.CANCELLED:
        return None
    return report_from_result(request, result, early)


def _failure_detail(result: Any) -> str:
    detail = getattr(result, "error", None) or getattr(result, "detail", None) or ""
    if isinstance(detail, dict):
        detail = detail.get("message") or detail.get("type") or ""
    return str(detail)


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


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
    client = WorkerClient(python, warm_imports=WARM_IMPORTS, learn_imports=LEARN_IMPORTS,
                          sandbox=True, prime=WARM_UP)
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
