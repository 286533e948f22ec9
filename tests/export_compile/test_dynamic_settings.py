"""Dynamic shapes declared once for the project (``[tool.fxls] dynamic``) or per class
(``# fxls: dynamic``): a dimension the code specializes is FX205 at the line that did."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SOURCE = '''import torch
import torch.nn as nn


class FixedBatch(nn.Module):
    # fxls: args (torch.randn(4, 8),)
    def forward(self, x):
        if x.shape[0] == 4:
            return x * 2
        return x


class AnyBatch(nn.Module):
    # fxls: args (torch.randn(4, 8),)
    def forward(self, x):
        return x.reshape(x.shape[0], 2, 4)


class OtherName(nn.Module):
    # fxls: args (torch.randn(4, 8),)
    def forward(self, y):
        if y.shape[0] == 4:
            return y * 2
        return y
'''


def _check(folder: Path, pyproject: str) -> dict:
    (folder / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    (folder / "shapes.py").write_text(SOURCE, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "fxls", "check", "--format", "json",
                           "--no-progress", "shapes.py"],
                          capture_output=True, text=True, cwd=folder, timeout=600)
    return json.loads(done.stdout)["files"][0]


def test_project_dynamic_shapes_apply_to_the_arguments_they_name(tmp_path: Path) -> None:
    report = _check(tmp_path, '[tool.fxls]\ntargets = ["export"]\n'
                              'dynamic = {x = {"0" = "batch"}}\n')
    specialized = [d for d in report["diagnostics"] if d["code"] == "FX205"]
    line = SOURCE.splitlines().index("        if x.shape[0] == 4:")
    assert [(d["module"], d["range"]) for d in specialized] == [("FixedBatch", {
        "start": {"line": line, "character": 11}, "end": {"line": line, "character": 26}})]
    statuses = {m["name"]: m["targets"]["export"] for m in report["modules"]}
    assert statuses["AnyBatch"] == "exported"  # symbolic all along
    assert statuses["OtherName"] == "exported"  # `y` is not declared: static


def test_a_bad_dynamic_setting_is_a_settings_problem(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.fxls]\ntargets = ["export"]\ndynamic = {x = {"first" = "batch"}}\n')
    (tmp_path / "shapes.py").write_text(SOURCE, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "fxls", "check", "--format", "json",
                           "--no-progress", "shapes.py"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600)
    problems = json.loads(done.stdout)["settings_problems"]
    assert [p["key"] for p in problems] == ["dynamic"]
    assert "not a dimension number" in problems[0]["message"]
    assert problems[0]["line"] == 3
