"""Rewrite rules from the project's own rule files ([tool.fxls] rule_files)."""

from __future__ import annotations

from pathlib import Path

from fxls.analysis.pipeline import analyze_source
from fxls.fixes import apply_edits, fixes_for
from fxls.project.settings import load_settings

RULES = '''import torch


def pattern_double(x):
    return x + x


def replacement_double(x):
    return x * 2


def pattern_neg_neg(x):
    return torch.neg(torch.neg(x))


def replacement_neg_neg(x):
    return x


def pattern_broken(x):
    return x


replacement_broken = None
'''

MODEL = '''import torch
from torch import nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        y = h + h
        return torch.neg(torch.neg(y))
'''


def test_user_rules_are_found_fixed_and_bad_rules_reported(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text('[tool.fxls]\nrule_files = ["rules.py"]\n')
    (tmp_path / "rules.py").write_text(RULES)
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    report = analyze_source(str(path), MODEL, load_settings(path))
    rewrites = [d for d in report.diagnostics if d.code == "FX020"]
    assert [(d.data["rule"], d.data["replacement"], d.span.line, d.span.col) for d in rewrites] == [
        ("double", "h * 2", 12, 12),
        ("neg_neg", "y", 13, 15),
    ]
    problems = [d for d in report.diagnostics if d.code == "FX004"]
    assert len(problems) == 1 and "replacement_broken" in problems[0].message
    (fix,) = fixes_for(MODEL, rewrites[0])
    fixed = apply_edits(MODEL, fix.edits)
    assert "        y = h * 2\n" in fixed
    after = analyze_source(str(path), fixed, load_settings(path))
    assert [d.data["rule"] for d in after.diagnostics if d.code == "FX020"] == ["neg_neg"]
