"""A check of fxls that raises is one FX004 for that check, the others' diagnostics kept; a
settings entry fxls cannot use is said, not dropped."""

from __future__ import annotations

from pathlib import Path

from torch import nn

from fxls.analysis.context import ModuleContext, run_rule
from fxls.analysis.pipeline import analyze_source
from fxls.project.settings import Settings, load_settings
from fxls.report import Span

MODEL = """import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        h = self.fc(x)
        if h.sum() > 0:
            h = h.relu()
        return h
"""


def broken_check(ctx: ModuleContext) -> list[object]:
    raise KeyError("node-without-meta")


def test_a_check_that_raises_is_one_fx004_at_the_class() -> None:
    span = Span("/proj/m.py", 4, 4, 6, 10)
    ctx = ModuleContext("/proj/m.py", MODEL, "Gate", nn.Linear(1, 1), None, None,  # type: ignore[arg-type]
                        None, None, Settings())
    (found,) = run_rule(broken_check, ctx, span)
    assert found.code == "FX004" and found.span == span and found.module == "Gate"
    assert "`broken_check`" in found.message and "KeyError" in found.message
    assert run_rule(lambda ctx: iter(()), ctx, span) == []


def test_unknown_autowrap_functions_are_said_and_the_rest_still_checked(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.fxls]\nautowrap_functions = ["nowhere.missing", "os.path.no_such_function"]\n')
    path = tmp_path / "gate.py"
    path.write_text(MODEL)
    report = analyze_source(str(path), MODEL, load_settings(path))
    said = [d for d in report.diagnostics if d.code == "FX004"]
    assert [(d.span.line, d.span.col, d.span.end_line, d.span.end_col) for d in said] == [
        (1, 0, 1, 12)]
    assert "`nowhere.missing`, `os.path.no_such_function`: no such function" in said[0].message
    fx001 = [d for d in report.diagnostics if d.code == "FX001"]
    assert [(d.span.line, d.span.col, d.span.end_line, d.span.end_col) for d in fx001] == [
        (12, 11, 12, 22)]
