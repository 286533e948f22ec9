"""Every outcome of an analysis job as a FileReport, failures included.

A timeout, crash or memory blow-up of the job becomes an FX102 diagnostic on the file
instead of an error of the caller, and so does a report that does not fit the protocol (the
job runs the user's code, which can forge it: ``fxls.report.wire`` checks every report,
partial or final, before it is used).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from fxls.analysis_runs.request import AnalysisRequest
from fxls.codes import CODES
from fxls.project.source_text import source_text
from fxls.report import Diagnostic, FileReport, Span
from fxls.report.wire import InvalidReport, SentAhead, check_report, suspect_line
from fxls.worker.job_results import JobResult
from fxls.worker.messages import WhereLines
from fxls.worker.protocol import JobStatus, JsonValue
from fxls.worker.where import line_in

log = logging.getLogger(__name__)


_FAILURE_MESSAGES = {
    JobStatus.TIMEOUT: "analysis timed out after {timeout:g} s{where} (an infinite loop at "
    "import or in forward?); raise `timeout` in [tool.fxls] if the model is just slow",
    JobStatus.CRASHED: "the worker process running this file crashed{where} ({detail})",
    JobStatus.MEMORY: "the analysis ran out of memory ({detail}; the limit is {memory} MB: raise "
    "`memory_limit_mb` in [tool.fxls] for a bigger model)",
    JobStatus.LIMIT: "the analysis was stopped{where}: {detail}",
    JobStatus.ERROR: "fxls failed while analysing this file: {detail}",
    JobStatus.CANCELLED: "the analysis was cancelled",
    JobStatus.INVALID: "the analysis produced an invalid report ({detail}){suspect}",
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
    request: AnalysisRequest, status: str, detail: str, output: str = "",
    where: WhereLines | None = None,
) -> FileReport:
    """An FX102 report for a job that did not produce a report. Its line: the job's stack
    dump in ``output``, else its watchdog's last sample (``where``: the job ignored the
    signal that asks for the dump)."""
    template = _FAILURE_MESSAGES.get(status, "the analysis failed ({detail})")
    path = str(Path(request.path).resolve())
    text = source_text(request.source)
    line = running_line(output, path) if output else None
    if line is None:
        line = line_in(where, path)
    where = f" while running line {line}" if line is not None else ""
    if line is None or not 0 < line <= text.line_count:
        line = 1
    suspect = ""
    if status == JobStatus.INVALID:
        # the code that forged the report imports fxls: point there when it is known
        imports_fxls = suspect_line(text)
        if imports_fxls is not None:
            line = imports_fxls
            suspect = (f"; line {line} imports fxls: analysed code must not change fxls "
                       f"itself or write to its result pipe")
    message = template.format(timeout=request.settings.limits.timeout, detail=detail or status,
                              where=where, memory=request.settings.limits.memory_limit_mb,
                              suspect=suspect)
    span = Span(path, line, line, text.indent_bytes(line), text.byte_length(line))
    diagnostic = Diagnostic("FX102", CODES["FX102"].severity, message, span)
    return FileReport(request.path, [], [diagnostic])


class ReportReader:
    """Reads the reports of one analysis job (untrusted: see the module doc): its partial
    reports, then its result. Each is checked against the request's document."""

    def __init__(self, request: AnalysisRequest) -> None:
        self.request = request
        self.path = str(Path(request.path).resolve())
        self.text = source_text(request.source)
        #: the newest valid partial report (kept when the job then fails)
        self.early: FileReport | None = None
        self._sent_ahead: SentAhead | None = None

    def partial(self, value: JsonValue) -> FileReport | None:
        """The report of a partial result (it may refer to the one before it, as the final
        one does); None (one log line) when it is invalid."""
        try:
            checked = check_report(value, path=self.path, text=self.text,
                                   partial=self._sent_ahead)
        except InvalidReport as error:
            log.warning("ignored an invalid partial report for %s: %s", self.request.path,
                        error)
            self._sent_ahead = None  # a final report referring to it is invalid too
            return None
        checked.report.path = self.request.path
        self.early, self._sent_ahead = checked.report, checked.sent_ahead
        return checked.report

    def result(self, result: JobResult) -> FileReport:
        """The file's report from the job's ``JobResult``: FX102 when the job failed or its
        report is invalid, with the last valid partial report's diagnostics kept."""
        if result.status == JobStatus.OK:
            try:
                checked = check_report(result.value, path=self.path, text=self.text,
                                       partial=self._sent_ahead)
            except InvalidReport as error:
                return _failed(self.request, JobStatus.INVALID, str(error), "", self.early)
            checked.report.path = self.request.path
            return checked.report
        return _failed(self.request, result.status, _last_line(result.error or ""),
                       result.output, self.early, result.where)


def report_from_result(
    request: AnalysisRequest, result: JobResult, early: JsonValue = None
) -> FileReport:
    """Turn a worker ``JobResult`` into the file's report. ``early`` is the partial result
    the job sent before it ended (plain data, tracing's diagnostics): kept when the job then
    failed, and what the final report may refer to."""
    reader = ReportReader(request)
    if early is not None:
        reader.partial(early)
    return reader.result(result)


def _failed(
    request: AnalysisRequest, status: str, detail: str, output: str,
    early: FileReport | None, where: WhereLines | None = None,
) -> FileReport:
    report = failure_report(request, status, detail, output, where)
    if early is not None:
        report.modules = early.modules
        report.diagnostics = sorted(
            [*early.diagnostics, *report.diagnostics],
            key=lambda d: (d.span.file, d.span.line, d.span.col, d.code),
        )
    return report


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""
