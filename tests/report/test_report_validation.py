"""Reports are untrusted input (issue 20): every field is checked against the report model's
types, ranges against the document, sizes capped; the runner turns an invalid one into FX102."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fxls.analysis_runs.outcome import report_from_result
from fxls.analysis_runs.request import AnalysisRequest
from fxls.project.setting_groups import ProjectLayout
from fxls.project.settings import Settings
from fxls.project.source_text import source_text
from fxls.report import Diagnostic, FileReport, ModuleReport, NodeInfo, Span
from fxls.report.wire import (
    MAX_DIAGNOSTICS,
    MAX_MESSAGE,
    InvalidReport,
    check_report,
    suspect_line,
)
from fxls.worker.client import JobResult
from fxls.worker.protocol import JobStatus

PATH = "/project/model.py"
TEXT = source_text("import torch\nfrom torch import nn\nimport fxls.report\n\nx = 1\n")


def _diagnostic(line: int = 1, severity: str = "warning", code: str = "FX013",
                **span: Any) -> dict[str, Any]:
    return {"code": code, "severity": severity, "message": f"on line {line}",
            "span": {"file": PATH, "line": line, "end_line": line, "col": 0, "end_col": 6,
                     **span}}


def _report(*diagnostics: dict[str, Any], **members: Any) -> dict[str, Any]:
    return {"path": PATH, "diagnostics": list(diagnostics), **members}


def test_a_real_report_goes_through_unchanged() -> None:
    span = Span(PATH, 2, 2, 0, 4)
    node = NodeInfo("fc", "call_module", "fc", "(x,)", "{}", ["relu"], span, [2, 4], "f32")
    report = FileReport(PATH, [ModuleReport("Net", "traced", 3, span, [node], "code")],
                        [Diagnostic("FX001", "error", "branch", span, "Net")],
                        {"trace": 1.5})
    checked = check_report(report.to_dict(), path=PATH, text=TEXT)
    assert checked.report == report


@pytest.mark.parametrize(("data", "where", "words"), [
    ({"garbage": 1}, "path", "is missing"),
    (_report() | {"path": 1}, "path", "is an integer, expected a string"),
    ([1, 2], "", "the report is a list, not an object"),
    (_report(_diagnostic() | {"severity": "fatal"}), "diagnostics[0].severity",
     "expected one of error, warning"),
    (_report(_diagnostic(line="1")), "diagnostics[0].span.line", "is a string"),
    (_report(_diagnostic(line=True)), "diagnostics[0].span.line", "is a boolean"),
    (_report(_diagnostic() | {"span": [1, 2]}), "diagnostics[0].span", "is a list"),
    (_report(_diagnostic(line=99)), "diagnostics[0].span", "outside the document (6 lines)"),
    (_report(_diagnostic(end_col=13)), "diagnostics[0].span", "columns 0-13 are outside"),
    (_report(_diagnostic(col=5, end_col=2)), "diagnostics[0].span", "ends (column 2) before"),
    (_report(_diagnostic() | {"related": [{"span": {"file": PATH, "line": 0, "end_line": 0,
                                                    "col": 0, "end_col": 0},
                                           "message": "m"}]}),
     "diagnostics[0].related[0].span", "outside the document"),
    (_report(modules=[{"name": "Net", "status": "traced", "nodes": [{"name": 1}]}]),
     "modules[0].nodes[0].name", "is an integer"),
    (_report(modules=[{"name": "Net", "status": "traced", "span": {
        "file": "/other.py", "line": -1, "end_line": 1, "col": 0, "end_col": 0}}]),
     "modules[0].span.line", "-1 is not a position"),
    (_report(timings_ms={"trace": "fast"}), "timings_ms['trace']", "expected a number"),
    (_report(from_partial=[[0, 0]]), "from_partial", "partial report that is missing"),
])
def test_an_invalid_report_says_where_and_why(data: Any, where: str, words: str) -> None:
    with pytest.raises(InvalidReport) as caught:
        check_report(data, path=PATH, text=TEXT)
    assert caught.value.where == where and words in caught.value.problem, str(caught.value)


def test_spans_in_other_files_are_only_bounded() -> None:
    elsewhere = _diagnostic(line=4000) | {"span": {"file": "/project/layers.py", "line": 4000,
                                                    "end_line": 4000, "col": 3, "end_col": 90}}
    checked = check_report(_report(elsewhere), path=PATH, text=TEXT)
    assert checked.report.diagnostics[0].span.line == 4000


def test_200000_diagnostics_keep_the_1000_most_severe_and_say_how_many_were_dropped() -> None:
    data = _report(*[_diagnostic(1)] * 150_000, _diagnostic(2, "error", "FX001"),
                   *[_diagnostic(3, "information", "FX015")] * 49_999)
    report = check_report(data, path=PATH, text=TEXT).report
    assert len(report.diagnostics) == MAX_DIAGNOSTICS + 1
    kept, notice = report.diagnostics[:-1], report.diagnostics[-1]
    assert [d.code for d in kept].count("FX001") == 1  # the one error, wherever it was
    assert {d.code for d in kept} == {"FX001", "FX013"}  # then the first warnings
    assert notice.code == "FX102" and notice.severity == "warning"  # the worst dropped
    assert (notice.span.line, notice.span.col, notice.span.end_col) == (1, 0, 12)
    assert notice.message == ("the analysis reported 200,000 diagnostics for this file; fxls "
                              "shows at most 1,000: the 199,000 least severe were dropped")


def test_long_messages_and_related_lists_are_cut() -> None:
    related = {"span": {"file": PATH, "line": 1, "end_line": 1, "col": 0, "end_col": 1},
               "message": "r"}
    data = _report(_diagnostic() | {"message": "m" * 10**6, "related": [related] * 10_000})
    (diagnostic,) = check_report(data, path=PATH, text=TEXT).report.diagnostics
    assert len(diagnostic.message) == MAX_MESSAGE and diagnostic.message.endswith("…")
    assert len(diagnostic.related) == 50


def test_the_final_report_refers_to_the_partial_one_checked() -> None:
    partial = check_report(_report(_diagnostic(1), _diagnostic(2)), path=PATH, text=TEXT)
    final = _report(_diagnostic(5, "error", "FX014", end_col=5), from_partial=[[0, 1], [2, 0]])
    report = check_report(final, path=PATH, text=TEXT, partial=partial.sent_ahead).report
    assert [(d.code, d.span.line) for d in report.diagnostics] == [
        ("FX013", 2), ("FX014", 5), ("FX013", 1)]
    for bad in ([[0, 2]], [[0, 0], [0, 1]], [[3, 0]], [["0", 0]], "x"):
        with pytest.raises(InvalidReport, match="from_partial"):
            check_report(_report(from_partial=bad), path=PATH, text=TEXT,
                         partial=partial.sent_ahead)


def test_the_line_that_imports_fxls_is_the_suspect() -> None:
    assert suspect_line(TEXT) == 3
    assert suspect_line(source_text("import torch\r\n\r\nfrom fxls.worker import api\r\n")) == 3
    assert suspect_line(source_text("import torch\n# import fxls\n")) is None


def test_an_invalid_report_is_fx102_at_the_line_importing_fxls_and_keeps_the_partial(
    tmp_path: Path,
) -> None:
    path = tmp_path / "model.py"
    source = "import torch\nfrom torch import nn\nimport fxls.report\n\nx = 1\n"
    request = AnalysisRequest(str(path), source,
                              Settings(project=ProjectLayout(root=str(tmp_path))))
    resolved = str(path.resolve())
    early = {"path": resolved, "diagnostics": [
        {"code": "FX001", "severity": "error", "message": "early", "span": {
            "file": resolved, "line": 5, "end_line": 5, "col": 0, "end_col": 5}}]}
    report = report_from_result(request, JobResult(JobStatus.OK, {"garbage": 1}), early)
    assert report.path == str(path)
    assert [(d.code, d.span.line, d.span.col, d.span.end_col) for d in report.diagnostics] == [
        ("FX102", 3, 0, 18), ("FX001", 5, 0, 5)]
    assert report.diagnostics[0].message == (
        "the analysis produced an invalid report (path: is missing); line 3 imports fxls: "
        "analysed code must not change fxls itself or write to its result pipe")
    plain = AnalysisRequest(str(path), "x = 1\n",
                            Settings(project=ProjectLayout(root=str(tmp_path))))
    (only,) = report_from_result(plain, JobResult(JobStatus.OK, None)).diagnostics
    assert (only.code, only.span.line) == ("FX102", 1)
    assert only.message == ("the analysis produced an invalid report (the report is null, "
                            "not an object)")


def test_two_partial_reports_then_the_final_one_referring_to_the_second(tmp_path: Path) -> None:
    """The analysis sends tracing's report, then the complete model report (issue 20's
    lead change), then the final one referring to the newest partial."""
    from fxls.analysis_runs.outcome import ReportReader

    path = tmp_path / "model.py"
    resolved = str(path.resolve())
    request = AnalysisRequest(str(path), TEXT.text,
                              Settings(project=ProjectLayout(root=str(tmp_path))))

    def diagnostic(line: int, code: str) -> dict[str, Any]:
        return {"code": code, "severity": "error", "message": code, "span": {
            "file": resolved, "line": line, "end_line": line, "col": 0, "end_col": 1}}

    reader = ReportReader(request)
    first = reader.partial({"path": resolved, "diagnostics": [diagnostic(1, "FX001")]})
    second = reader.partial({"path": resolved, "diagnostics": [diagnostic(1, "FX001"),
                                                               diagnostic(2, "FX004")]})
    assert first is not None and second is not None and second.path == str(path)
    final = reader.result(JobResult(JobStatus.OK, {
        "path": resolved, "diagnostics": [diagnostic(5, "FX014")],
        "from_partial": [[0, 0], [1, 1]]}))
    assert [(d.code, d.span.line) for d in final.diagnostics] == [
        ("FX001", 1), ("FX004", 2), ("FX014", 5)]
    # an invalid partial is ignored; a final report referring to it is FX102, the last valid
    # partial's diagnostics kept
    assert reader.partial({"path": resolved, "diagnostics": "many"}) is None
    failed = reader.result(JobResult(JobStatus.OK, {"path": resolved, "diagnostics": [],
                                                    "from_partial": [[0, 0]]}))
    assert [(d.code, d.span.line) for d in failed.diagnostics] == [
        ("FX001", 1), ("FX004", 2), ("FX102", 3)]
