"""What makes a saved text "already analysed" (``fxls.server.analysed_texts``): the same
text, settings and files the report points into; a failed analysis is never reused."""

from __future__ import annotations

import os
from pathlib import Path

from fxls.analysis_runs.request import AnalysisRequest
from fxls.codes import Severity
from fxls.project.setting_groups import TracerTargets
from fxls.project.settings import Settings
from fxls.report import Diagnostic, FileReport, Span
from fxls.server.analysed_texts import AnalysedTexts

URI = "file:///project/net.py"
TEXT = "import torch\n"


def _report(path: Path, code: str = "FX301", file: Path | None = None) -> FileReport:
    report = FileReport(str(path))
    span = Span(str(file or path), 1, 1, 0, 5)
    report.diagnostics.append(Diagnostic(code, Severity.WARNING, "a finding", span))
    return report


def test_the_last_report_is_reused_for_the_same_text_and_settings_only(tmp_path: Path) -> None:
    path = tmp_path / "net.py"
    texts = AnalysedTexts()
    request = AnalysisRequest(str(path), TEXT, Settings())
    report = _report(path)
    texts.remember(URI, request, report)
    assert texts.reusable(URI, AnalysisRequest(str(path), TEXT, Settings())) is report
    assert texts.reusable(URI, AnalysisRequest(str(path), TEXT + "x = 1\n", Settings())) is None
    compile_only = Settings(tracers=TracerTargets(targets=("compile",)))
    assert texts.reusable(URI, AnalysisRequest(str(path), TEXT, compile_only)) is None
    texts.forget(URI)
    assert texts.reusable(URI, request) is None


def test_a_file_the_report_points_into_changed_on_disk_is_analysed_again(tmp_path: Path) -> None:
    path, library = tmp_path / "net.py", tmp_path / "layers.py"
    library.write_text("class Block: ...\n")
    texts = AnalysedTexts()
    request = AnalysisRequest(str(path), TEXT, Settings())
    texts.remember(URI, request, _report(path, file=library))
    assert texts.reusable(URI, request) is not None
    stat = library.stat()
    os.utime(library, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert texts.reusable(URI, request) is None


def test_a_crashed_or_unimportable_analysis_is_never_reused(tmp_path: Path) -> None:
    path = tmp_path / "net.py"
    texts = AnalysedTexts()
    request = AnalysisRequest(str(path), TEXT, Settings())
    for code in ("FX102", "FX100"):
        texts.remember(URI, request, _report(path, code))
        assert texts.reusable(URI, request) is None
