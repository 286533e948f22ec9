"""Several export failures reached from one line of the user's (a call into a library with
two data-dependent guards) are one FX201 there: it lists each guard, at the library's
expression, and says once why export cannot decide them and what to do; as many as torch's
``draft_export`` reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

LIBRARY = '''import torch


def clipped(x):
    if x.sum() > 0:
        x = x * 2
    if x.max() > 10:
        x = x / 2
    return x
'''

MODEL = '''import torch
import torch.nn as nn
from guarded_lib import clipped


class Net(nn.Module):
    # fxls: args (torch.ones(2, 8),)
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return clipped(self.lin(x))
'''

_DRAFTED = ("import torch; from model import Net; "
            "report = torch.export.draft_export(Net(), (torch.ones(2, 8),))._report; "
            "print(sum(str(f.failure_type) == 'DATA_DEPENDENT_ERROR' for f in report.failures))")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("one_call")
    (root / "lib").mkdir()
    (root / "lib" / "guarded_lib.py").write_text(LIBRARY, encoding="utf-8")
    (root / "project").mkdir()
    (root / "project" / "model.py").write_text(MODEL, encoding="utf-8")
    return root / "project"


def _env(project: Path, *paths: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(str(path) for path in paths)}


def test_failures_reached_from_one_call_say_the_hint_once(project: Path) -> None:
    drafted = subprocess.run([sys.executable, "-c", _DRAFTED], capture_output=True, text=True,
                             cwd=project, timeout=600,
                             env=_env(project, project.parent / "lib", project))
    assert drafted.stdout.strip().splitlines()[-1] == "2", drafted.stderr[-2000:]
    done = subprocess.run(
        [sys.executable, "-m", "fxls", "check", "--format", "json", "--no-progress",
         "--target", "export", "model.py"],
        capture_output=True, text=True, cwd=project, timeout=600,
        env=_env(project, project.parent / "lib"))
    report: dict[str, Any] = json.loads(done.stdout)["files"][0]
    (found,) = report["diagnostics"]
    line = MODEL.splitlines().index("        return clipped(self.lin(x))")
    assert (found["code"], found["range"]["start"]["line"]) == ("FX201", line)
    message = found["message"]
    assert message.startswith("2 problems here (exporting `Net`): (1) export cannot decide "
                              "`x.sum() > 0` in `guarded_lib.clipped` (reached from here)")
    assert "(2) export cannot decide `x.max() > 10` in `guarded_lib.clipped`" in message
    assert message.count("torch.cond") == 1
    assert message.count("depends on a tensor's values") == 1
    assert report["modules"][0]["targets"]["export"] == "failed: 2 problems"
