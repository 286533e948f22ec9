"""A hostile repository on the caller's PYTHONPATH (issue 31): a project's dev shell sets
``PYTHONPATH=<ws>/src`` and the repository commits modules named like torch's dependencies
(``typing_extensions``, ``numpy``...) or like the standard library. Outside a job nothing of
the workspace may run: not in the worker while it imports torch and its warm modules, not in
``fxls check`` itself; jobs still import from the workspace's PYTHONPATH. Each payload
appends its name and pid to a file outside the workspace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

#: what ``import torch`` (and the warm modules) import, or try to, and a standard module the
#: CLI imports
SHADOWS = ("typing_extensions", "filelock", "sympy", "numpy", "networkx", "jinja2", "fsspec",
           "argparse")
MODEL = """from importlib.metadata import version

from helper_ws import WIDTH
from torch import nn

# installed distributions' metadata stays visible to jobs (transformers checks its
# dependencies' versions at import)
assert version("torch")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(WIDTH, 2)

    def forward(self, x):
        return self.fc(x)
"""
FXLS = str(Path(sys.executable).with_name("fxls"))


def hostile_workspace(tmp_path: Path) -> tuple[Path, Path]:
    """The workspace (its ``src`` shadows every name of ``SHADOWS``) and the marker file."""
    workspace, marker = tmp_path / "ws", tmp_path / "outside" / "ran"
    src = workspace / "src"
    src.mkdir(parents=True)
    marker.parent.mkdir()
    for i, name in enumerate(SHADOWS):
        payload = (f"import os\nwith open({str(marker)!r}, 'a') as f:\n"
                   f"    f.write('{name} ' + str(os.getpid()) + '\\n')\n")
        target = src / name / "__init__.py" if i % 2 else src / f"{name}.py"
        target.parent.mkdir(exist_ok=True)
        target.write_text(payload)
    (src / "helper_ws.py").write_text("WIDTH = 4\n")  # the jobs still import from src
    (workspace / "model.py").write_text(MODEL)
    return workspace, marker


def test_a_workspace_on_pythonpath_never_runs_outside_a_job(tmp_path: Path) -> None:
    workspace, marker = hostile_workspace(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(workspace / "src")}
    done = subprocess.run([FXLS, "check", "model.py", "--format", "json"], cwd=workspace,
                          env=env, capture_output=True, text=True, timeout=300)
    assert not marker.exists(), marker.read_text()
    assert done.returncode == 0, done.stderr[-3000:]
    [report] = json.loads(done.stdout)["files"]
    assert report["diagnostics"] == [], report
