"""Files as Python reads them: line breaks, encodings, odd characters, deep nesting."""

from __future__ import annotations

import json
from pathlib import Path

from fxls.analysis.pipeline import analyze_source
from fxls.report import FileReport
from fxls.runner import AnalysisRequest, failure_report
from fxls.settings import Settings

HEAD = "import torch\nfrom torch import nn\n"


def _analyze(tmp_path: Path, source: str, name: str = "model.py") -> FileReport:
    path = tmp_path / name
    path.write_text(source, encoding="utf-8", newline="")
    return analyze_source(str(path), source, Settings(root=str(tmp_path)))


def _codes(report: FileReport) -> list[tuple[str, int, int, int, int]]:
    return [(d.code, d.span.line, d.span.col, d.span.end_line, d.span.end_col)
            for d in report.diagnostics]


def test_form_feed_line_above_a_class_keeps_fx001_quoting_the_condition(tmp_path: Path):
    source = HEAD + "\x0c\nclass Gate(nn.Module):\n    def forward(self, x):\n" \
        "        if x.sum() > 0:\n            return x\n        return -x\n"
    report = _analyze(tmp_path, source)
    (fx001,) = report.diagnostics
    assert (fx001.code, fx001.span.line, fx001.span.col, fx001.span.end_line,
            fx001.span.end_col) == ("FX001", 6, 11, 6, 22)
    assert fx001.message.startswith("`x.sum() > 0` depends on a traced value")


def test_unicode_line_separators_inside_strings_keep_line_numbers(tmp_path: Path):
    source = HEAD + "NAMES = 'a\u2028b\u2029c\x85d\x1ce'\n\n\nclass Gate(nn.Module):\n" \
        "    def forward(self, x):\n        if x.sum() > 0:\n            return x\n" \
        "        return -x\n"
    report = _analyze(tmp_path, source)
    (fx001,) = report.diagnostics
    assert (fx001.code, fx001.span.line, fx001.span.col, fx001.span.end_col) == (
        "FX001", 8, 11, 22)
    assert fx001.message.startswith("`x.sum() > 0` depends")


def test_failure_report_of_a_file_with_a_lone_surrogate_still_goes_out(tmp_path: Path):
    path = tmp_path / "model.py"
    source = "import os\n  name = '\ud800é'\nos._exit(3)\n"
    request = AnalysisRequest(str(path), source, Settings(root=str(tmp_path)))
    output = f'Fatal Python error\nmost recent call first:\n  File "{path}", line 2 in <module>'
    report = failure_report(request, "crashed", "exit code 3", output)
    (fx102,) = report.diagnostics
    assert (fx102.code, fx102.span.line, fx102.span.col, fx102.span.end_line,
            fx102.span.end_col) == ("FX102", 2, 2, 2, 16)  # the surrogate is 3 bytes, é 2
    assert "while running line 2" in fx102.message
    json.dumps(report.to_dict())
