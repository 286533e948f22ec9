"""Fuzz of the analysis (hypothesis, bounded): damaged sources with every line separator,
unicode and deep nesting never make ``analyze_source`` raise, and every diagnostic in the
analysed file lies inside the document.

Counts for docs/reliability.md: ``FXLS_FUZZ_EXAMPLES=2000 FXLS_FUZZ_CLI_RUNS=40
.venv/bin/python -m pytest -q tests/diagnostics/test_analysis_fuzz.py
--hypothesis-show-statistics`` (in the suite: 40 sources in-process, one `fxls check` of 24).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fxls.analysis.pipeline import analyze_source
from fxls.project.python_source import read_python_source_or_replace
from fxls.project.setting_groups import JobLimits, ProjectLayout
from fxls.project.settings import Settings
from fxls.project.source_text import SourceText
from fxls.report import FileReport

TEMPLATES = [
    "import torch\nfrom torch import nn\n\n\nclass Gate(nn.Module):\n"
    "    def forward(self, x):\n        print('tracing')\n        if x.sum() > 0:\n"
    "            return x * 2\n        return torch.relu(x)\n",
    "import torch\nfrom torch import nn\nimport torch.nn.functional as F\n\n\n"
    "# fxls: args (torch.randn(2, 4),)\nclass Mlp(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self.lin = nn.Linear(4, 4)  # é 😀\n\n"
    "    def forward(self, x):\n        y = x * 3\n        n = int(x.shape[0])\n"
    "        for row in x:\n            pass\n        return F.gelu(self.lin(x)) + n\n",
    "import torch\nfrom torch import nn\n\nNAME = 'a\u2028b\x0cc'\n\n\nclass Exit(nn.Module):\n"
    "    def forward(self, x):\n        assert x.dim() == 2, NAME\n"
    "        return x.add_(1) if x.numel() else x\n",
]
SEPARATORS = ["\n", "\r\n", "\r", "\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028",
              "\u2029"]
PIECES = [
    *SEPARATORS, "é", "😀", "\U0001d518", "\ufeff", "\x00", "\ud800", "(", ")", "[", ":", "'",
    '"""', "\\", "#", "    ", "\t", "if x:", "def ", "class ", "lambda", "yield", "await ",
    "-" * 50_000 + "1", "not " * 5_000 + "x", "(" * 300 + ")" * 300, "[" * 100,
]


@st.composite
def damaged_sources(draw: st.DrawFn) -> str:
    """A model file in one of the three line-break styles, with text that keeps it valid
    (pieces in comments and strings) or damage anywhere (pieces inserted, text deleted)."""
    source = draw(st.sampled_from(TEMPLATES))
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    lines = source.split("\n")
    for _ in range(draw(st.integers(0, 3))):  # still valid Python
        piece = draw(st.one_of(st.sampled_from(PIECES), st.text(max_size=4)))
        at = draw(st.integers(0, len(lines) - 1))
        if draw(st.booleans()):
            lines[at] += "  # " + piece
        else:
            lines.insert(2, f"_ = {piece!r}")
    source = newline.join(lines)
    for _ in range(draw(st.integers(0, 3)) if draw(st.booleans()) else 0):  # broken
        at = draw(st.integers(0, len(source)))
        if draw(st.booleans()):
            piece = draw(st.one_of(st.sampled_from(PIECES), st.text(max_size=4)))
            source = source[:at] + piece + source[at:]
        else:
            source = source[:at] + source[at + draw(st.integers(1, 12)):]
    return source


_names = itertools.count()
#: a few seconds in the suite; FXLS_FUZZ_EXAMPLES=2000 for a long run
BOUNDED = settings(max_examples=int(os.environ.get("FXLS_FUZZ_EXAMPLES", "40")), deadline=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def _analyze(folder: Path, source: str) -> tuple[FileReport, str]:
    # a module name per example: the in-process analysis imports the file under that name
    path = folder / f"fuzz_{next(_names)}.py"
    path.write_text(source, encoding="utf-8", errors="surrogatepass", newline="")
    filename = str(path.resolve())
    return analyze_source(filename, source,
                          Settings(project=ProjectLayout(root=str(folder)),
                                   limits=JobLimits(timeout=5))), filename


def _assert_inside(report: FileReport, path: str, source: str) -> None:
    text = SourceText(source)
    for item in report.diagnostics:
        span = item.span
        if span.file != path:
            continue
        assert 1 <= span.line <= span.end_line <= text.line_count, item
        assert 0 <= span.col <= text.byte_length(span.line), item
        assert 0 <= span.end_col <= text.byte_length(span.end_line), item
        assert (span.line, span.col) <= (span.end_line, span.end_col), item


@BOUNDED
@given(source=damaged_sources())
def test_damaged_sources_never_raise_and_stay_inside(folder: Path, source: str):
    report, path = _analyze(folder, source)
    _assert_inside(report, path, source)
    traced = sum(m.status in ("traced", "partial") for m in report.modules)
    event(f"{'traced a module' if traced else 'traced nothing'}; codes "
          f"{','.join(sorted({d.code for d in report.diagnostics})) or 'none'}")


@settings(max_examples=int(os.environ.get("FXLS_FUZZ_CLI_RUNS", "1")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(sources=st.lists(damaged_sources(), min_size=24, max_size=24))
def test_fxls_check_on_damaged_files_keeps_every_range_inside(
    tmp_path_factory: pytest.TempPathFactory, sources: list[str]
):
    """The same sources through `fxls check` (the worker, the JSON output in UTF-16)."""
    folder = tmp_path_factory.mktemp("fuzz_cli")
    (folder / "pyproject.toml").write_text("[tool.fxls]\ntimeout = 10\n", encoding="utf-8")
    for index, source in enumerate(sources):
        (folder / f"f{index:02}.py").write_bytes(source.encode("utf-8", "surrogatepass"))
    command = [sys.executable, "-m", "fxls", "check", "--format", "json", "--no-progress", "."]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=folder)
    assert done.returncode in (0, 1), done.stderr
    files = json.loads(done.stdout)["files"]
    assert sorted(entry["path"] for entry in files) == [
        f"./f{index:02}.py" for index in range(len(sources))]
    checked = 0
    for entry in files:
        text = SourceText(read_python_source_or_replace(folder / entry["path"]))
        for item in entry["diagnostics"]:
            # the client checks every report: a real analysis' report is never invalid
            assert "invalid report" not in item["message"], (entry["path"], item)
            if "path" in item:  # located in another file
                continue
            checked += 1
            start, end = item["range"]["start"], item["range"]["end"]
            assert (start["line"], start["character"]) <= (end["line"], end["character"])
            for position in (start, end):
                assert 0 <= position["line"] < text.line_count, (entry["path"], item)
                line = text.line_text(position["line"])
                units = len(line.encode("utf-16-le", "surrogatepass")) // 2
                assert 0 <= position["character"] <= units, (entry["path"], item)
    assert checked > 0, "24 damaged files and not one diagnostic to check"
