"""Files as Python reads them: line breaks, encodings, odd characters, deep nesting."""

from __future__ import annotations

import json
from pathlib import Path

from fxls.analysis.pipeline import analyze_source
from fxls.analysis_runs.outcome import failure_report
from fxls.analysis_runs.request import AnalysisRequest
from fxls.project.setting_groups import ProjectLayout
from fxls.project.settings import Settings
from fxls.report import FileReport

HEAD = "import torch\nfrom torch import nn\n"


def _analyze(tmp_path: Path, source: str) -> FileReport:
    # a module name of its own: an in-process analysis imports the file as that module
    path = tmp_path / f"m_{tmp_path.name}.py"
    path.write_text(source, encoding="utf-8", newline="")
    return analyze_source(str(path), source, Settings(project=ProjectLayout(root=str(tmp_path))))


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
    request = AnalysisRequest(str(path), source,
                              Settings(project=ProjectLayout(root=str(tmp_path))))
    output = f'Fatal Python error\nmost recent call first:\n  File "{path}", line 2 in <module>'
    report = failure_report(request, "crashed", "exit code 3", output)
    (fx102,) = report.diagnostics
    assert (fx102.code, fx102.span.line, fx102.span.col, fx102.span.end_line,
            fx102.span.end_col) == ("FX102", 2, 2, 2, 16)  # the surrogate is 3 bytes, é 2
    assert "while running line 2" in fx102.message
    json.dumps(report.to_dict())


GATE = "class Gate(nn.Module):\n    def forward(self, x):\n        if x.sum() > 0:\n" \
    "            return x\n        return -x\n"


def test_sys_exit_in_forward_is_one_fx004_there_and_other_classes_are_kept(tmp_path: Path):
    source = HEAD + "import sys\n\n\nclass Quits(nn.Module):\n    def forward(self, x):\n" \
        "        sys.exit(3)\n\n\n" + GATE
    report = _analyze(tmp_path, source)
    assert _codes(report) == [("FX004", 8, 8, 8, 19), ("FX001", 13, 11, 13, 22)]
    assert report.diagnostics[0].message.startswith("SystemExit: 3 (raised while tracing `Quits`)")
    assert [(m.name, m.status) for m in report.modules] == [("Quits", "failed"),
                                                             ("Gate", "partial")]


def test_fifty_thousand_unary_minus_is_fx100_at_that_statement(tmp_path: Path):
    source = HEAD + "\n\nvalue = " + "-" * 50_000 + "1\n" + GATE
    report = _analyze(tmp_path, source)
    assert _codes(report) == [("FX100", 5, 0, 5, 50_009)]
    assert report.diagnostics[0].message.startswith("MemoryError: the parser ran out of memory")


def test_five_thousand_nots_are_fx100_at_that_statement(tmp_path: Path):
    source = HEAD + "\nflag = (" + "not " * 5_000 + "True)  # deep\n" + GATE
    report = _analyze(tmp_path, source)
    assert _codes(report) == [("FX100", 4, 0, 4, 20_013)]
    assert report.diagnostics[0].message.startswith("RecursionError: maximum recursion depth")


def test_null_byte_is_fx100_not_a_crash(tmp_path: Path):
    source = HEAD + "x = 1\x00\n"
    report = _analyze(tmp_path, source)
    assert _codes(report) == [("FX100", 3, 5, 3, 6)]
    assert report.diagnostics[0].message == (
        "SyntaxError: source code string cannot contain null bytes")


def test_sys_exit_in_init_is_one_fx004_there_and_other_classes_are_kept(tmp_path: Path):
    source = HEAD + "import sys\n\n\nclass Quits(nn.Module):\n    def __init__(self):\n" \
        "        super().__init__()\n        sys.exit('no')\n\n    def forward(self, x):\n" \
        "        return x\n\n\n" + GATE
    report = _analyze(tmp_path, source)
    assert _codes(report) == [("FX004", 9, 8, 9, 22), ("FX001", 17, 11, 17, 22)]
    assert [m.name for m in report.modules] == ["Quits", "Gate"]


def test_lone_surrogate_in_the_text_is_fx100_at_it(tmp_path: Path):
    path = tmp_path / f"m_{tmp_path.name}.py"  # an editor's text: no file holds a surrogate
    source = HEAD + "NAME = 'a\ud800b'\n" + GATE
    report = analyze_source(str(path), source, Settings(project=ProjectLayout(root=str(tmp_path))))
    assert _codes(report) == [("FX100", 3, 9, 3, 12)]
    assert "surrogates not allowed" in report.diagnostics[0].message
